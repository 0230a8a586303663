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
from omp_session.store import SessionStorage

__all__ = ["RecentlyUsed", "session_version"]

_Value = TypeVar("_Value")


class _Pending(Generic[_Value]):
    """A value one thread is building, which the others asking for it wait for."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._value: _Value | None = None
        self._error: BaseException | None = None

    def settle(self, value: _Value | None, error: BaseException | None) -> None:
        self._value, self._error = value, error
        self._done.set()

    def wait(self) -> _Value:
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]  # set together with _done


class RecentlyUsed(Generic[_Value]):
    """The last ``size`` values built, by key (thread-safe). A value is built outside the lock,
    and once: requests that ask for a key while it is being built wait for that build instead of
    starting their own (issue 25: 200 clients opening one 50,000-entry session at once built it
    once per request, 1.3 GB and answers past 30 s)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._values: OrderedDict[tuple[str, str], _Value] = OrderedDict()
        self._pending: dict[tuple[str, str], _Pending[_Value]] = {}
        self._lock = threading.Lock()

    def kept(self, key: tuple[str, str]) -> _Value | None:
        """The value of ``key`` if it is built already (``None``: not built, or being built)."""
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
            return None

    def building(self, key: tuple[str, str]) -> bool:
        """Whether a thread is building the value of ``key`` now."""
        with self._lock:
            return key in self._pending

    def get(self, key: tuple[str, str], build: Callable[[], _Value]) -> _Value:
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
            pending = self._pending.get(key)
            building = pending is None
            if pending is None:
                pending = self._pending[key] = _Pending()
        if not building:
            return pending.wait()  # the builder's value, or its exception
        try:
            value = build()
        except BaseException as error:
            with self._lock:
                del self._pending[key]
            pending.settle(None, error)
            raise
        with self._lock:
            self._values[key] = value
            while len(self._values) > self._size:
                self._values.popitem(last=False)
            del self._pending[key]
        pending.settle(value, None)
        return value


def session_version(path: Path, store: SessionStorage | None = None) -> str:
    """A text that changes when the session does (a file's, else the row's of ``store``)."""
    if store is None:  # a file: its exact mtime in nanoseconds
        found = path.stat()
        return f"{found.st_mtime_ns}-{found.st_size}"
    stat = store.stat_session(path)  # a database row: mtime_ms, which every write moves
    if stat is None:
        raise SessionNotFoundError(path)
    return f"{round(stat.mtime * 1e9)}-{stat.size}"
