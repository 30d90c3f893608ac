"""scoring layer"""
