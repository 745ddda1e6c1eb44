"""The base of every error the kit raises for a person to read (a bad setting, a file with problems,
a pipeline that does not fit, a Spark that did not answer): `except EventtimeError` catches any of
them, while a bug of the kit stays a plain exception with its traceback. Plain data, importing
nothing, so that every layer may derive from it (the model too). `eventtime.errors` lists them all."""
from __future__ import annotations

import os

__all__ = ["EventtimeError", "shown_file"]


class EventtimeError(Exception):
    """An error whose message is meant for the user: it says where (file:line, option, setting) and what."""


def shown_file(path: str) -> str:
    """A file as a message names it: from the working directory when it is below it (as a person opened
    it: `jobs/dedup.py:21`), else as given (another folder or drive, a `<frozen ...>` name)."""
    if not os.path.isabs(path):
        return path
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive
        return path
    return path if relative.startswith("..") else relative
