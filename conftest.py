# Shared fixtures and the gpu marker, loaded explicitly (not via a pytest11 entry point).
pytest_plugins = ["icml26_core.testing.plugin"]
