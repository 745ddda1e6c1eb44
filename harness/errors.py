"""The base of every error the kit raises for a person to read (a bad setting, a file with problems,
a pipeline that does not fit, a Spark that did not answer): `except EventtimeError` catches any of
them, while a bug of the kit stays a plain exception with its traceback. Plain data, importing
nothing, so that every layer may derive from it (the model too). `eventtime.errors` lists them all."""
from __future__ import annotations

__all__ = ["EventtimeError"]


class EventtimeError(Exception):
    """An error whose message is meant for the user: it says where (file:line, option, setting) and what."""

