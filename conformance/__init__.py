"""Event-time scenarios and contracts for Spark Structured Streaming: load, run, judge, report.

Import from here; submodules may move. Every error the kit raises for a person to read derives from
`EventtimeError`; `eventtime.errors` lists them all. Names are resolved on first use (PEP 562), so importing
the package (as the pytest plugin and the CLI do) imports no yaml, jsonschema or pyspark.
The repository's `conformance/` folder is this package; `harness/` is `eventtime.harness` and
`scenarios/` is `eventtime.scenarios`.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> the submodule that defines it
_EXPORTS: dict[str, str] = {
    "Column": "contracts", "Contract": "contracts", "implementation": "userpipeline",
    "CONTRACTS": "registry", "get_contract": "registry", "register_contract": "registry",
    "load_contract_file": "contractfile", "contract_from_mapping": "contractfile", "ContractInvalid": "contractfile",
    "Problem": "loader", "ScenarioInvalid": "loader", "find_scenario_files": "loader", "load_scenario": "loader",
    "validate_file": "loader",
    "Params": "spec", "Scenario": "spec",
    "ERROR": "results", "FAILED": "results", "NOT_APPLICABLE": "results", "PASSED": "results",
    "ScenarioResult": "results", "StepResult": "results",
    "Output": "runner", "PipelineError": "userpipeline", "resolve_pipeline": "userpipeline", "run_scenario": "runner",
    "describe_failure": "textreport",
    "EventtimeError": "errors", "FileInvalid": "errors",
}

__all__ = [
    "CONTRACTS", "Column", "Contract", "ContractInvalid", "ERROR", "EventtimeError", "FileInvalid", "FAILED", "NOT_APPLICABLE", "Output", "PASSED", "Params",
    "PipelineError", "Problem", "Scenario", "ScenarioInvalid", "ScenarioResult", "StepResult",
    "contract_from_mapping", "describe_failure", "find_scenario_files", "get_contract", "implementation", "load_contract_file", "load_scenario",
    "register_contract", "resolve_pipeline", "run_scenario", "validate_file",
]
if sorted(__all__) != sorted(_EXPORTS):  # pragma: no cover - guards refactors
    raise ImportError(f"eventtime.__all__ and its export table differ: {sorted(set(__all__) ^ set(_EXPORTS))}")


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'eventtime' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:
    from .contractfile import ContractInvalid, contract_from_mapping, load_contract_file
    from .contracts import Column, Contract
    from .errors import EventtimeError, FileInvalid
    from .registry import CONTRACTS, get_contract, register_contract
    from .loader import Problem, ScenarioInvalid, find_scenario_files, load_scenario, validate_file
    from .spec import Params, Scenario
    from .results import ERROR, FAILED, NOT_APPLICABLE, PASSED, ScenarioResult, StepResult
    from .runner import Output, run_scenario
    from .textreport import describe_failure
    from .userpipeline import PipelineError, implementation, resolve_pipeline
