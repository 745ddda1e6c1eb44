"""The options several commands take, declared once: parent parsers (`argparse`'s `parents=`) and the
types that check a value where argparse reads it, so a bad value is a usage error naming the option."""
from __future__ import annotations

import argparse
import copy
import sys
from typing import Any, NoReturn, Sequence, TypeVar

from eventtime.harness.waits import DEFAULT_TIMEOUT

from ..exitcodes import ExitCode

__all__ = ["Parser", "Options", "but", "contracts_parent", "spark_parent", "pipelines_parent", "results_parent",
           "conf_pairs", "positive_int", "allow_parent"]

N = TypeVar("N")


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse's default exit code is 2 as well; keep the text short
        self.print_usage(sys.stderr)
        self.exit(ExitCode.USAGE_ERROR, f"{self.prog}: error: {message}\n")


class Options(argparse.Namespace):
    """The command line's options, read once (`cli.main`) and never written: a value a command settles on
    its way (the project's timeout, the paths it found, the binding it split) is a new value (`but`), so
    what a function is given is what the user said or what its caller settled, never changed under it."""

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"the options are read once and not written (--{name.replace('_', '-')}): "
                             "make a new value with options.but()")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"the options are read once and not written (--{name.replace('_', '-')})")

    @classmethod
    def of(cls, namespace: argparse.Namespace) -> "Options":
        """The options argparse read, frozen."""
        out = cls.__new__(cls)
        out.__dict__.update(vars(namespace))
        return out


def but(options: N, **changes: Any) -> N:
    """`options` with these values instead, as a new value of the same kind; `options` stays as it is."""
    out = copy.copy(options)
    vars(out).update(changes)
    return out


def conf_pairs(values: Sequence[str] | None) -> dict[str, str]:
    """`--spark-conf KEY=VALUE` values as a mapping (`projectconfig.spark_conf_pairs`, as pytest's
    `--eventtime-spark-conf`); a value without `=` is a usage error."""
    from ..projectconfig import SettingsError, spark_conf_pairs

    try:
        return spark_conf_pairs(values, "--spark-conf")
    except SettingsError as exc:
        raise SystemExit(f"eventtime: error: {exc}") from None


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value


def _master(text: str) -> str:
    from eventtime.harness.cluster import MasterURLError, check_master

    try:
        return check_master(text)
    except MasterURLError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _remote(text: str) -> str:
    from eventtime.harness.connect import check_remote

    try:
        return check_remote(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _jobs(text: str) -> int:
    from ..parallel import parse_jobs

    try:
        return parse_jobs(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _parent() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(add_help=False)


def contracts_parent(where: str = "each scenario") -> argparse.ArgumentParser:
    """`--contracts DIR` (repeatable): contract folders besides those found beside or above the scenarios."""
    p = _parent()
    p.add_argument("--contracts", action="append", default=[], metavar="DIR",
                   help=f"a folder of *.contract.yaml files, besides those beside or above {where} (repeatable)")
    return p


_PIPELINE_HELP = ("the pipeline to run: MODULE:FUNCTION for every scenario, or CONTRACT=MODULE:FUNCTION "
                  "(CONTRACT[FOLDER]=... for the scenario files under FOLDER) for one contract's, over the ini key "
                  "eventtime_pipelines pytest reads (repeatable; unbound, a contract of your own runs the "
                  "implementations its file declares, a bundled one its own only for the bundled suite)")


def pipelines_parent(more_help: str = "") -> argparse.ArgumentParser:
    """`--pipeline [CONTRACT=]MODULE:FUNCTION` (repeatable), over the project's bindings."""
    p = _parent()
    p.add_argument("--pipeline", action="append", metavar="[CONTRACT=]MODULE:FUNCTION", help=_PIPELINE_HELP + more_help)
    return p


def spark_parent(timeout_help: str = "bound on each wait for Spark, seconds (default: the ini key "
                                      f"eventtime_timeout, else {DEFAULT_TIMEOUT:g})") -> argparse.ArgumentParser:
    """What every command that runs scenarios on Spark takes: where Spark is (--master, --remote, else
    SPARK_REMOTE: `projectconfig.spark_target`), the bound on each wait and extra Spark SQL settings."""
    p = _parent()
    p.add_argument("--master", default=None, type=_master, metavar="URL",
                   help="Spark master URL: local[N], local-cluster[W,C,M] or spark://HOST:PORT (default local[2])")
    p.add_argument("--remote", default=None, type=_remote, metavar="sc://HOST:PORT",
                   help="run over Spark Connect at this URL, sc://HOST:PORT: the client needs no JVM (default: the "
                        "SPARK_REMOTE environment variable when no --master is given)")
    p.add_argument("--timeout", type=float, default=None, help=timeout_help)
    p.add_argument("--spark-conf", action="append", metavar="KEY=VALUE", help="extra Spark SQL conf for the queries")
    warm = p.add_mutually_exclusive_group()
    warm.add_argument("--warm", dest="warm", action="store_true", default=None,
                      help="attach to a warm Spark kept between runs (started if none runs; local masters; "
                           "default: EVENTTIME_WARM, else the ini key eventtime_warm, else off; docs/warm.md)")
    warm.add_argument("--cold", dest="warm", action="store_false", help="start a Spark of this run's own")
    return p


def results_parent() -> argparse.ArgumentParser:
    """What `run` and `certify` take beside: the results file and how many pairs run at once."""
    p = _parent()
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    p.add_argument("--jobs", type=_jobs, default=1, metavar="N",
                   help="run N scenario/implementation pairs at once in one JVM, each on its own session (default 1)")
    return p


def allow_parent() -> argparse.ArgumentParser:
    """`--allow-not-applicable CONTRACT` (repeatable): a contract this run may leave with nothing judged
    (`projectconfig.nothing_judged`; without it such a run fails)."""
    p = _parent()
    p.add_argument("--allow-not-applicable", action="append", default=[], metavar="CONTRACT",
                   help="a contract whose scenarios may all be not applicable in this run (repeatable; * for every "
                        "contract; also the ini key eventtime_allow_not_applicable); without it, a contract and "
                        "implementation with nothing judged fails the run")
    return p
