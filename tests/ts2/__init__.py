"""Tests of ts2."""
