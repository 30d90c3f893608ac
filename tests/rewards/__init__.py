"""Tests of rewards."""
