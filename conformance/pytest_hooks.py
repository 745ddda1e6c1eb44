"""Hook specifications the eventtime pytest plugin adds."""


def pytest_eventtime_pipelines(config):
    """Return {contract name: pipeline} to bind contracts to pipelines (a callable or
    'module:function'). Every implementation's result is merged; command-line options and the
    `eventtime_pipelines` ini key win over it."""


def pytest_eventtime_contracts(config):
    """Return Contract objects (`eventtime.Contract`, e.g. read with `eventtime.contractfile.
    read_contract` or built in code) that this test run knows by name, beside the contract files:
    scenario files, bindings and the `eventtime_scenario` fixture can name them. Every
    implementation's result is merged; a name that is bundled, or two different contracts of one
    name, is a usage error."""
