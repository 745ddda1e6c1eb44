"""Whether a scenario applies to a Spark: its version and features, what the contract and the scenario
require, and what a Spark Connect session cannot do (no manual clock, no second session, no checkpoint
on this machine). Rules of the scenario alone: nothing here touches Spark."""
from __future__ import annotations

from . import spec as m

__all__ = ["applicability", "connect_applicability", "NO_CLOCK", "OVER_CONNECT"]


def applicability(scenario: m.Scenario, spark_version: str, features: frozenset[str], *,
                  connect: bool = False) -> str | None:
    """Why the scenario does not apply to this Spark (None when it does). `connect`: the features are
    a Spark Connect client's, which can lack what the same Spark offers a classic session (the reason
    says so)."""
    only = m.model_only(scenario)
    if only:
        return only
    if scenario.requires_spark:
        from packaging.specifiers import SpecifierSet
        from packaging.version import Version

        version = Version(spark_version.split("-")[0].split("+")[0])
        if version not in SpecifierSet(scenario.requires_spark):
            return f"needs Spark {scenario.requires_spark}, this is {spark_version}"
    missing = [f for f in dict.fromkeys(scenario.requires_features + scenario.contract.requires)
               if f not in features]
    if missing:
        return (f"needs Spark feature(s) {', '.join(missing)}, not available in Spark {spark_version}"
                + (f" {OVER_CONNECT}" if connect else ""))
    return None


# -- Spark Connect (a session with no JVM in this process; see docs/connect.md) -------------------------
NO_CLOCK = "needs the manual processing-time clock, which Spark Connect does not offer"
OVER_CONNECT = "over Spark Connect"  # ends the reason of a feature the Connect client lacks


def connect_applicability(scenario: m.Scenario) -> str | None:
    """Why the scenario cannot run over Spark Connect (None when it can): the harness drives no clock
    there (no `advance`, no processing-time trigger, no `current_timestamp()` to pin) and cannot start
    the query in a second session."""
    if any(isinstance(step, m.AdvanceStep) for step in scenario.steps):
        return f"{NO_CLOCK} (it advances processing time)"
    if scenario.trigger is not None:
        return f"{NO_CLOCK} (it uses a processing-time trigger)"
    if "processing-time" in scenario.tags:
        return f"{NO_CLOCK} (it observes processing time)"
    if any(isinstance(step, m.StartStep) and step.rerun_last_batch for step in scenario.steps):
        return "re-runs a batch after a crash, which needs the checkpoint on this machine (rerun_last_batch)"
    if any(isinstance(step, m.StartStep) and step.new_session for step in scenario.steps):
        return "starts the query in a new session, which the Spark Connect harness does not do"
    return None
