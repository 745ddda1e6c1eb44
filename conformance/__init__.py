"""Event-time scenarios and contracts for Spark Structured Streaming: load, run, judge, report.

Import from here; submodules may move. Nothing here imports pyspark until a scenario runs.
"""
from .contracts import CONTRACTS, Column, Contract, get_contract, implementation
from .loader import Problem, ScenarioInvalid, find_scenario_files, load_scenario, validate_file
from .model import Params, Scenario
from .results import ERROR, FAILED, NOT_APPLICABLE, PASSED, ScenarioResult, StepResult
from .runner import Output, PipelineError, resolve_pipeline, run_scenario
from .textreport import describe_failure

__all__ = [
    "CONTRACTS", "Column", "Contract", "ERROR", "FAILED", "NOT_APPLICABLE", "Output", "PASSED", "Params",
    "PipelineError", "Problem", "Scenario", "ScenarioInvalid", "ScenarioResult", "StepResult",
    "describe_failure", "find_scenario_files", "get_contract", "implementation", "load_scenario", "resolve_pipeline",
    "run_scenario", "validate_file",
]


def _check_public_surface() -> None:
    missing = [name for name in __all__ if name not in globals()]
    if missing:  # pragma: no cover - guards refactors
        raise ImportError(f"conformance.__all__ names missing objects: {missing}")


_check_public_surface()
