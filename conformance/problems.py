"""Problems in a user's file, each at its file:line:column, said in one printable line."""
from __future__ import annotations

import difflib
import unicodedata
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from eventtime.harness.errors import EventtimeError

from .yamlsource import Located, Position

__all__ = ["Where", "Problem", "FileInvalid", "ScenarioInvalid", "Checker", "did_you_mean"]


@dataclass(frozen=True)
class Where:
    """A place in a scenario file."""

    file: str
    line: int
    column: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"



# Characters a message shows escaped (`\x1b`, `\u202e`): control characters, line breaks and
# lone surrogates from a file's keys and values would break the one-problem-per-line output, drive
# the terminal, or fail to print; bidirectional overrides would reorder what the reader sees.
_UNPRINTABLE_CATEGORIES = ("Cc", "Cs", "Zl", "Zp")
_BIDI_CONTROLS = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _printable(message: str) -> str:
    if message.isprintable():
        return message
    return "".join(c.encode("unicode_escape", "backslashreplace").decode("ascii")
                   if unicodedata.category(c) in _UNPRINTABLE_CATEGORIES or c in _BIDI_CONTROLS else c
                   for c in message)


@dataclass(frozen=True, order=True)
class Problem:
    """One problem at its place; the message is one printable line (odd characters escaped)."""

    file: str
    line: int
    column: int
    message: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", _printable(self.message))

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.message}"


class FileInvalid(EventtimeError):
    """A file has problems; `problems` lists each with its place, once (aliases repeat them). The base of
    ScenarioInvalid and ContractInvalid: code that loads scenarios catches it, since a scenario's load
    reads contract files too."""

    def __init__(self, problems: list[Problem]):
        self.problems = sorted(set(problems))
        super().__init__("\n".join(str(p) for p in self.problems))


class ScenarioInvalid(FileInvalid):
    """A scenario file has problems, each at its file:line:column."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


class Checker:
    """Collects problems for one file, each at the place of a value (or key) in the YAML.

    `relocate`: for a document written by code rather than by hand (a scenario built in Python),
    maps a place in the generated YAML to the place in the code that wrote it; every Where and
    Problem goes through it."""

    def __init__(self, path: str, located: Located | None, relocate: Callable[[int, int], Where] | None = None):
        self.path = path
        self.loc = located
        self.relocate = relocate
        self.problems: list[Problem] = []

    def _place(self, position: Position) -> Where:
        if self.relocate is not None:
            return self.relocate(position.line, position.column)
        return Where(self.path, position.line, position.column)

    def add(self, position: Position, message: str) -> None:
        place = self._place(position)
        self.problems.append(Problem(place.file, place.line, place.column, message))

    def at(self, path: tuple, message: str, *, key: bool = False) -> None:
        assert self.loc is not None
        self.add(self.loc.key_at(path) if key else self.loc.at(path), message)

    def where(self, path: tuple) -> Where:
        assert self.loc is not None
        return self._place(self.loc.at(path))

