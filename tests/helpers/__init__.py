"""Helpers shared by the tests (no tests here): tiny models, loopback servers, release lookup, fixtures."""
