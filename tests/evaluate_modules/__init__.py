"""Tests of evaluate_modules."""
