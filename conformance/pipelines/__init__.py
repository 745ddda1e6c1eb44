"""Bundled implementations of the contracts (reference pipelines in idiomatic PySpark)."""
