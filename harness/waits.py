"""The default bound on each wait for Spark, in seconds: a batch to run, a query to start or stop, a
Spark Connect server to answer. Every default of the kit is this one (the harness's runs, the runner,
both faces' options and their help), so that changing it here changes what each says and does; a run
gives its own with `timeout` (`--timeout`, `--eventtime-timeout`, the ini key eventtime_timeout).
Plain data, importing nothing: every layer may read it."""
from __future__ import annotations

__all__ = ["DEFAULT_TIMEOUT"]

DEFAULT_TIMEOUT = 60.0
