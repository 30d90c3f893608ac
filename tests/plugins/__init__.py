"""pytest plugins of this suite (registered by tests/conftest.py): the quick tier's slow rule and the skip summary."""
