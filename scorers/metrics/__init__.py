"""metrics layer"""
