# The pipeline is bound in pyproject.toml (eventtime_pipelines); a conftest could do it instead:
#   from eventtime.pytest_plugin import bind; bind("tumbling_count", "consumer_jobs.windows:count_per_window")
