"""Tests of tifa_bench."""
