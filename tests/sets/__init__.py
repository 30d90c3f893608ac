"""Tests of sets."""
