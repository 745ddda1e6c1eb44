"""Hook specifications the eventtime pytest plugin adds."""


def pytest_eventtime_pipelines(config):
    """Return {contract name: pipeline} to bind contracts to pipelines (a callable or
    'module:function'). Every implementation's result is merged; command-line options and the
    `eventtime_pipelines` ini key win over it."""
