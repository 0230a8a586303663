"""Pinned sessions (omp 18, ``session-pins.ts``): ``<agent dir>/session-pins.json``, a JSON array of
session ids. Pins are keyed by id, not path, so they survive a move. omp 18 lists pinned sessions
first; omp 13.19 has no pins.

Reading is lenient as omp's is (a missing, unreadable or malformed file is no pins). A toggle is a
read-modify-write under an exclusive ``flock`` on the pins file's lock, committed through a temp
file, fsync and rename, so two processes toggling at once never lose each other's update and a
crash never leaves a truncated file.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

from omp_session.errors import CorruptSessionError, PersistenceError
from omp_session.store.paths import agent_dir
from omp_session.store.regular import read_regular

__all__ = ["load_pinned_session_ids", "pins_path", "sort_pinned_first", "toggle_session_pin"]

PINS_FILENAME = "session-pins.json"


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


_Info = TypeVar("_Info", bound=_HasId)


def pins_path(directory: Path | None = None) -> Path:
    """Where the pins live: ``<agent dir>/session-pins.json``."""
    return (directory if directory is not None else agent_dir()) / PINS_FILENAME


def load_pinned_session_ids(directory: Path | None = None) -> set[str]:
    """The pinned session ids; an absent or damaged file is no pins (as in omp)."""
    try:
        pins = json.loads(read_regular(pins_path(directory)).decode("utf-8"))
    except (OSError, ValueError, CorruptSessionError):
        return set()
    return {pin for pin in pins if isinstance(pin, str)} if isinstance(pins, list) else set()


def sort_pinned_first(sessions: Sequence[_Info], pinned: Iterable[str]) -> list[_Info]:
    """Pinned sessions on top, each group in its given (recency) order; unknown ids do nothing."""
    wanted = set(pinned)
    top = [session for session in sessions if session.id in wanted]
    return [*top, *(session for session in sessions if session.id not in wanted)]


def toggle_session_pin(session_id: str, directory: Path | None = None) -> bool:
    """Pin ``session_id``, or unpin it if pinned; return whether it is pinned now. Writes
    ``session-pins.json`` (and its ``.lock``) in the agent directory."""
    target = pins_path(directory)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target.with_name(target.name + ".lock"), "a") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            pinned = _ordered_pins(target)
            if session_id in pinned:
                pinned.remove(session_id)
            else:
                pinned.append(session_id)
            _replace(target, json.dumps(pinned, indent="\t").encode("utf-8"))
            return session_id in pinned
    except OSError as exc:
        raise PersistenceError(target, exc) from exc


def _ordered_pins(target: Path) -> list[str]:
    try:
        pins = json.loads(read_regular(target).decode("utf-8"))
    except (OSError, ValueError, CorruptSessionError):
        return []
    return [pin for pin in pins if isinstance(pin, str)] if isinstance(pins, list) else []


def _replace(target: Path, data: bytes) -> None:
    temp = target.with_name(f"{target.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
