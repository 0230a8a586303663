"""Does a session directory hold files written by omp 18? ("never strand an older omp").

In auto mode (no explicit dialect) a new session file gets the omp 18 title slot only when its
store already holds slot files: an omp 13.19 still using that store would overwrite a file whose
first line is not a header (docs/compatibility.md).

Internal module (used by the manager's layout rule); not part of the public API.
"""

from __future__ import annotations

import os
from pathlib import Path

from omp_session.errors import CorruptSessionError
from omp_session.format.title_slot import SLOT_BYTES, parse_slot_line
from omp_session.store import SessionStorage
from omp_session.store.regular import open_regular

__all__ = ["directory_has_slot_files", "starts_with_slot"]


def starts_with_slot(path: Path | str) -> bool:
    """Whether the file's first line is an omp 18 title slot (reads at most 256 bytes). A FIFO,
    socket, device or directory named ``*.jsonl`` is not one, and is never opened blocking (the
    special-file rule, docs/durability.md)."""
    try:
        with os.fdopen(open_regular(path), "rb") as handle:
            head = handle.read(SLOT_BYTES)
    except (OSError, CorruptSessionError):
        return False
    return _is_slot_head(head)


def _is_slot_head(head: bytes) -> bool:
    end = head.find(b"\n")
    return end >= 0 and parse_slot_line(head[:end]) is not None


def directory_has_slot_files(directory: Path | str, storage: SessionStorage | None = None) -> bool:
    """Whether any ``*.jsonl`` session file directly in ``directory`` starts with a title slot
    (in ``storage``, a database store, when given: its rows there)."""
    if storage is not None:
        paths = sorted((found.path for found in storage.list_sessions(Path(directory))), reverse=True)
        return any(_is_slot_head(storage.read_head(path, SLOT_BYTES)) for path in paths)
    try:
        names = [entry.path for entry in os.scandir(directory) if entry.name.endswith(".jsonl")]
    except OSError:
        return False
    return any(starts_with_slot(name) for name in sorted(names, reverse=True))
