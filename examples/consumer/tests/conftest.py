# The jobs are bound in pyproject.toml (eventtime_pipelines, one line each); a conftest could do it instead:
#   from eventtime.pytest_plugin import bind; bind("page_clicks", "shop.clicks:transform")
