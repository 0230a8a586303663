"""The store this process works on when a call names none: session files, unless the command
line's ``--store`` (or ``OMP_SESSION_STORE``) chose another for the whole process.

Library callers pass ``storage=`` explicitly; this is how the command line and the viewer make
every command read and write one database store without threading it through each call.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from omp_session.store import SessionStorage
from omp_session.store.file_sessions import FileSessionStorage

_configured: SessionStorage | None = None


def configured_storage() -> SessionStorage | None:
    """The store chosen for this process, or ``None`` for session files (the fast file paths)."""
    return _configured


def session_storage(storage: SessionStorage | None = None) -> SessionStorage:
    """``storage`` if given, else the configured store, else session files."""
    if storage is not None:
        return storage
    return _configured if _configured is not None else FileSessionStorage()


@contextlib.contextmanager
def storage_configured(storage: SessionStorage | None) -> Iterator[None]:
    """Make ``storage`` the process's store while the block runs (``None``: files)."""
    global _configured
    previous, _configured = _configured, storage
    try:
        yield
    finally:
        _configured = previous


def read_stored_session(path: Path) -> bytes:
    """The bytes of the session at ``path`` in the configured store (files by default)."""
    return session_storage().read_session(path)


def stored_session_exists(path: Path) -> bool:
    return session_storage().session_exists(path)


__all__ = [
    "configured_storage",
    "read_stored_session",
    "session_storage",
    "storage_configured",
    "stored_session_exists",
]
