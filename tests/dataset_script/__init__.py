"""Tests of dataset_script."""
