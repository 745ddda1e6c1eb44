"""Example pipelines of a project that uses eventtime-conformance in its tests."""
