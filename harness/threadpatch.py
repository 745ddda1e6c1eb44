"""Patches of library classes (PySpark's) that act in the threads that ask for them and nowhere else.

`ThreadPatch(what, patches)` holds one set of patches and a state per thread. `entered(state)` makes
`state` the current one of the calling thread (`current()`) inside the block; the rules:

- installed while any thread is inside: the first enter (of any thread) sets every attribute
  `patches()` names on its class, the last leave puts pyspark's own back; enters are counted, so
  threads entering and leaving in any order never uninstall under one another;
- thread scoped: a patched method sees `current()` of the thread that calls it, None in a thread that
  did not enter (another scenario, the kit's own code), and then does what pyspark's own does;
- nested enters: refused (RuntimeError naming `what`) unless `nested=True`, when the inner state is
  current inside the inner block and the outer one again after it;
- each replacement is made from the attribute it replaces (`wrap(original)`), so a call under way in
  another thread keeps pyspark's own method even when the last leave uninstalls meanwhile.

`patches()` is called at each install (it imports pyspark then, not when this module is imported) and
returns `(class, attribute name, wrap)` triples (`instead(name, fn)` makes the common wrap: `fn(state,
self, ...)` inside, pyspark's own outside); `original(obj, name)` is pyspark's own attribute of `obj`'s
class, patched or not (the kit's own calls from a patched thread).
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Generic, Iterable, Iterator, TypeVar

__all__ = ["ThreadPatch", "Patches"]

State = TypeVar("State")
# (class, attribute name, wrap): wrap(pyspark's own attribute) -> the attribute set while installed
Patches = Callable[[], Iterable[tuple[type, str, Callable[[Any], Any]]]]


class ThreadPatch(Generic[State]):
    """One set of class patches, installed while any thread has entered, with each thread's state."""

    def __init__(self, what: str, patches: Patches, *, nested: bool = False):
        self.what = what  # what a thread has entered, for the error of an enter again ("a job session")
        self._patches = patches
        self._nested = nested
        self._local = threading.local()
        self._lock = threading.Lock()
        self._users = 0  # enters not yet left, of every thread
        self._installed: dict[tuple[type, str], Any] = {}  # (class, attribute) -> pyspark's own, while patched

    def current(self) -> State | None:
        """The calling thread's state inside `entered`, else None."""
        return getattr(self._local, "state", None)

    @property
    def installed(self) -> bool:
        return bool(self._installed)

    @contextlib.contextmanager
    def entered(self, state: State) -> Iterator[State]:
        """`state` current in this thread inside the block, the patches installed meanwhile."""
        previous = self.current()
        if previous is not None and not self._nested:
            raise RuntimeError(f"{self.what} is already active in this thread")
        with self._lock:
            if self._users == 0:
                self._install()
            self._users += 1
        self._local.state = state
        try:
            yield state
        finally:
            self._local.state = previous
            with self._lock:
                self._users -= 1
                if self._users == 0:
                    self._uninstall()

    def instead(self, name: str, fn: Callable[..., Any]) -> Callable[[Any], Callable[..., Any]]:
        """A wrap for `patches()`: the method `name` calls `fn(state, self, ...)` in a thread inside
        `entered`, pyspark's own elsewhere."""
        def wrap(original: Callable[..., Any]) -> Callable[..., Any]:
            def method(obj: Any, *args: Any, **kwargs: Any) -> Any:
                state = self.current()
                if state is None:
                    return original(obj, *args, **kwargs)
                return fn(state, obj, *args, **kwargs)
            method.__name__ = name
            return method
        return wrap

    def original(self, obj: Any, name: str) -> Any:
        """pyspark's own attribute `name` of `obj`'s class (patched or not), as found on the class."""
        for cls in type(obj).__mro__:
            if (cls, name) in self._installed:
                return self._installed[(cls, name)]
        return getattr(type(obj), name)

    def _install(self) -> None:
        try:
            for cls, name, wrap in self._patches():
                if (cls, name) in self._installed:
                    raise ValueError(f"{cls.__name__}.{name} is patched twice by {self.what}'s patches")
                original = cls.__dict__[name]
                replacement = wrap(original)
                self._installed[(cls, name)] = original
                setattr(cls, name, replacement)
        except BaseException:  # a patch that cannot be made: none stays
            self._uninstall()
            raise

    def _uninstall(self) -> None:
        while self._installed:
            (cls, name), original = self._installed.popitem()
            setattr(cls, name, original)
