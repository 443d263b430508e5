"""The harness version (pyproject.toml's `version`), on the ground floor so that every stage can
record it without importing the package's top, which imports the Python API."""
__version__ = "0.1.0"
