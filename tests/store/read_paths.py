"""Every way ``SessionManager.open`` reads a session file, for tests that must hold on each.

The full load (the offset index switched off in the runtime); the cold open through the compiled
scanner (where it is built, as tests/perf/test_scanner.py picks it), through the pure-Python
scanner, and the path of an installation without the compiled one (the skim, or the one-pass
open); the warm open from the index a cold open wrote. The file must be large enough to be
indexed (``PAD``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from omp_session import Runtime, SessionManager
from omp_session.store import scanner
from omp_session.store.tuning import DEFAULT_TUNING

from ..perf.sessions import is_lazy, opened_cold

_COLD = ["cold, pure scanner", "cold, no compiled scanner"]
if scanner.c_scan is not None:
    _COLD.insert(0, "cold, compiled scanner")
READS = ["full", *_COLD, "warm"]

#: A text that makes the file it is in large enough to be indexed.
PAD = "x" * (2 * DEFAULT_TUNING.min_indexed_bytes)


@contextmanager
def scanner_of(read: str, patch: pytest.MonkeyPatch) -> Iterator[None]:
    """The scanner ``read`` opens with, while the context lasts."""
    with patch.context() as inner:
        if read == "cold, compiled scanner":
            inner.setattr(scanner, "COMPILED", True)
            inner.setattr(scanner, "scan", scanner.c_scan)
        elif read == "cold, pure scanner":
            inner.setattr(scanner, "COMPILED", True)  # the scanner path, with the reference scanner
            inner.setattr(scanner, "scan", scanner.py_scan)
        elif read == "cold, no compiled scanner":
            inner.setattr(scanner, "COMPILED", False)
        yield


def runtime_for(path: Path, read: str) -> Runtime:
    return Runtime(agent_dir=path.parent / "agent", breadcrumbs=False, offset_index=read != "full")


def open_by(
    path: Path, read: str, patch: pytest.MonkeyPatch, *, lazy: bool = True, **options: Any
) -> SessionManager:
    """``SessionManager.open(path, **options)`` by ``read``; ``lazy``: check it took that path
    (false where the index is expected to give the file to a full load)."""
    runtime = runtime_for(path, read)
    if read == "warm":  # a cold open writes the index the next open reads
        dialect = options.get("dialect")
        SessionManager.open(path, read_only=True, runtime=runtime, dialect=dialect).close()
    with scanner_of(read, patch):
        manager = SessionManager.open(path, runtime=runtime, **options)
    if lazy:
        assert is_lazy(manager) == (read != "full"), read
        assert opened_cold(manager) == read.startswith("cold"), read
    return manager
