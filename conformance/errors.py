"""Every error the kit raises for a person to read, in one list; each derives from `EventtimeError`, so
`except EventtimeError` catches any of them (a bug of the kit stays another exception, with its
traceback). Names are resolved on first use (PEP 562): importing this module imports no Spark.

    from eventtime.errors import EventtimeError, ScenarioInvalid, PipelineError

A scenario file and a contract file with problems are both a `FileInvalid` (its `problems`, each at
file:line:column); loading a scenario reads contract files too, so code that loads scenarios catches
`FileInvalid`."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from eventtime.harness.errors import EventtimeError

# public name -> the module that defines it (relative to the `eventtime` package)
_EXPORTS: dict[str, str] = {
    # files and settings
    "FileInvalid": "problems", "ScenarioInvalid": "problems", "ContractInvalid": "contractfile",
    "YamlSyntaxError": "yamlsource", "SettingsError": "projectconfig", "ContractConflict": "registry",
    "TimeFormatError": "timeparse", "TypeSyntaxError": "coltypes", "ValueProblem": "coltypes",
    "RowProblem": "sourcekinds", "ResultsFileError": "resultsfile", "UpgradeError": "report.upgrade",
    # the user's pipeline
    "PipelineError": "userpipeline", "SignatureError": "userpipeline", "OutputMismatch": "userpipeline",
    "PipelineRaised": "userpipeline", "PipelineImportError": "userpipeline", "ImplementationError": "userpipeline",
    "SubstitutionError": "harness.jobio", "PathOutside": "harness.jobpaths",
    "PipelineLoadError": "harness.pipelinegraph", "NeedsSession": "harness.pipelinegraph", "UpdateFailed": "harness.pipelinerun",
    "SelectionError": "harness.pipelinerun",
    # the model
    "NotCovered": "semantics.plans", "ModelError": "semantics.microbatch", "WriteError": "semantics.fill",
    # Spark
    "HarnessError": "harness.stream", "HarnessTimeout": "harness.stream", "QueryFailed": "harness.stream",
    "ConnectLimit": "harness.connect", "ClockWaitTimeout": "harness.clock", "MasterURLError": "harness.cluster",
    "ClusterError": "harness.cluster", "ConnectServerError": "harness.connect_server",
    # a run across Spark lines
    "CrossLineError": "crossline",
}

__all__ = ["EventtimeError", "FileInvalid", "ScenarioInvalid", "ContractInvalid", "YamlSyntaxError", "SettingsError",
           "ContractConflict", "TimeFormatError", "TypeSyntaxError", "ValueProblem", "RowProblem", "ResultsFileError",
           "UpgradeError", "PipelineError", "SignatureError", "OutputMismatch", "PipelineRaised", "PipelineImportError",
           "ImplementationError", "SubstitutionError", "PipelineLoadError", "NeedsSession", "UpdateFailed",
           "SelectionError",            "PathOutside", "NotCovered", "ModelError", "WriteError", "HarnessError", "HarnessTimeout", "QueryFailed",
           "ConnectLimit", "ClockWaitTimeout", "MasterURLError", "ClusterError", "ConnectServerError", "CrossLineError"]
if sorted(__all__) != sorted(["EventtimeError", *_EXPORTS]):  # pragma: no cover - guards refactors
    raise ImportError(f"eventtime.errors.__all__ and its export table differ: {sorted(set(__all__) ^ set(_EXPORTS))}")


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'eventtime.errors' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"eventtime.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:
    from eventtime.harness.clock import ClockWaitTimeout
    from eventtime.harness.cluster import ClusterError, MasterURLError
    from eventtime.harness.connect import ConnectLimit
    from eventtime.harness.connect_server import ConnectServerError
    from eventtime.harness.jobio import SubstitutionError
    from eventtime.harness.jobpaths import PathOutside
    from eventtime.harness.pipelinegraph import NeedsSession, PipelineLoadError
    from eventtime.harness.pipelinerun import SelectionError, UpdateFailed
    from eventtime.harness.stream import HarnessError, HarnessTimeout, QueryFailed

    from .coltypes import TypeSyntaxError, ValueProblem
    from .contractfile import ContractInvalid
    from .crossline import CrossLineError
    from .problems import FileInvalid, ScenarioInvalid
    from .projectconfig import SettingsError
    from .registry import ContractConflict
    from .report.upgrade import UpgradeError
    from .resultsfile import ResultsFileError
    from .semantics.fill import WriteError
    from .semantics.microbatch import ModelError
    from .semantics.plans import NotCovered
    from .userpipeline import (ImplementationError, OutputMismatch, PipelineError, PipelineImportError, PipelineRaised,
                               SignatureError)
    from .sourcekinds import RowProblem
    from .timeparse import TimeFormatError
    from .yamlsource import YamlSyntaxError
