"""The exit status of every `eventtime` command, one table (pytest's `ExitCode` is the model)."""
from __future__ import annotations

import enum

__all__ = ["ExitCode"]


class ExitCode(enum.IntEnum):
    OK = 0  # every scenario passed or was not applicable, and each contract had something judged (or was allowed not to)
    # a scenario failed or errored, a file is invalid, a scenario had no pipeline, a step failed, a contract and
    # implementation had nothing judged (every scenario not applicable) without --allow-not-applicable, a vacuous
    # or weak check (`--teeth`)
    FAILED = 1
    USAGE_ERROR = 2  # the command line or the project's settings are wrong; nothing ran
    NO_TESTS_RAN = 5  # as pytest's: scenarios were asked for and none ran (the reason is printed)
    INTERRUPTED = 130  # 128 + SIGINT (Ctrl-C): what a shell reports
    OUTPUT_GONE = 141  # 128 + SIGPIPE: the reader of the output went away (`| head`)
    TERMINATED = 143  # 128 + SIGTERM
