"""tables layer"""
