"""ts2 layer"""
