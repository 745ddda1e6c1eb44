"""Streaming jobs written the way Apache Spark's own streaming test suites write their queries."""
