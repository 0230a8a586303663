"""What the viewer keeps between requests: the last session views built, keyed by file version.

A session's *version* changes whenever its file does (its mtime in nanoseconds and size; for a
database store, the row's mtime and size), so a cached view is never served for a changed file and
the live-update poll (``/api/version``) compares versions.

Internal module (part of the viewer, whose API is :mod:`omp_session.web`); not part of the public API.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from omp_session.errors import SessionNotFoundError
from omp_session.store.configured import configured_storage

__all__ = ["RecentlyUsed", "is_big", "session_version"]

_Value = TypeVar("_Value")


class RecentlyUsed(Generic[_Value]):
    """The last ``size`` values built, by key (thread-safe; a value is built outside the lock)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._values: OrderedDict[tuple[str, str], _Value] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str], build: Callable[[], _Value]) -> _Value:
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
        value = build()
        with self._lock:
            self._values[key] = value
            while len(self._values) > self._size:
                self._values.popitem(last=False)
        return value


def session_version(path: Path) -> str:
    """A text that changes when the session does."""
    store = configured_storage()
    if store is None:  # a file: its exact mtime in nanoseconds
        found = path.stat()
        return f"{found.st_mtime_ns}-{found.st_size}"
    stat = store.stat_session(path)  # a database row: mtime_ms, which every write moves
    if stat is None:
        raise SessionNotFoundError(path)
    return f"{round(stat.mtime * 1e9)}-{stat.size}"


def is_big(path: Path, limit: int) -> bool:
    """Whether the session is over ``limit`` bytes (shown a window at a time, issue 13 #2)."""
    store = configured_storage()
    if store is None:
        return path.stat().st_size > limit
    stat = store.stat_session(path)  # a database row
    return stat is not None and stat.size > limit
