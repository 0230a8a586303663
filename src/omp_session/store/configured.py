"""The store this process works on when a call names none: session files, unless the command
line's ``--store`` (or ``OMP_SESSION_STORE``) chose another for the whole process.

Library callers pass ``storage=`` explicitly; this is how the command line and the viewer make
every command read and write one database store without threading it through each call.
``session_storage`` (the store a call works on: the one given, else this one, else files) is in
``file_sessions.py``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from omp_session.store import SessionStorage

_configured: SessionStorage | None = None


def configured_storage() -> SessionStorage | None:
    """The store chosen for this process, or ``None`` for session files (the fast file paths)."""
    return _configured


@contextlib.contextmanager
def storage_configured(storage: SessionStorage | None) -> Iterator[None]:
    """Make ``storage`` the process's store while the block runs (``None``: files)."""
    global _configured
    previous, _configured = _configured, storage
    try:
        yield
    finally:
        _configured = previous


__all__ = ["configured_storage", "storage_configured"]
