"""stats layer"""
