"""Every way ``SessionManager.open`` reads a session file, for tests that must hold on each.

Each is a :class:`~omp_session.store.tuning.ReadStrategy` this installation can run, chosen
through the runtime's ``Tuning(read_strategy=...)`` (nothing is patched): the full parse, the
cold open through the compiled scanner (where it is built), through the pure-Python scanner and
without a scanner (the skim, or the one-pass decode), and the warm open through a stored index
(which the open builds first). ``auto`` is each of those on some file, so it is not one of them.
A file must be large enough to be indexed (``PAD``), or its test passes
``Tuning(min_indexed_bytes=0)`` (``tuning_for``).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from omp_session import Runtime, SessionManager
from omp_session.store.file_sessions import FileSessionStorage
from omp_session.store.tuning import DEFAULT_TUNING, ReadStrategy, Tuning

from ..perf.sessions import is_lazy, opened_cold
from ..perf.tuned import EVERY_FILE

#: Every forced strategy this installation can run, the reference first.
READS = [strategy for strategy in ReadStrategy.available() if strategy is not ReadStrategy.AUTO]
#: The fast ones (everything but the reference).
FAST_READS = [strategy for strategy in READS if strategy is not ReadStrategy.FULL]
#: The cold opens (each indexes the file in one pass), and ``auto``, which is one of them on a
#: file without an index (which one: the scanner this installation has, store/scanner.py).
COLD_READS = [ReadStrategy.AUTO, *(strategy for strategy in READS if str(strategy).startswith("cold"))]

#: A text that makes the file it is in large enough to be indexed.
PAD = "x" * (2 * DEFAULT_TUNING.min_indexed_bytes)


def tuning_for(read: ReadStrategy, tuning: Tuning = DEFAULT_TUNING) -> Tuning:
    """``tuning`` with ``read`` as its read strategy."""
    return replace(tuning, read_strategy=read)


def file_stores() -> list[Any]:
    """Parameters for a test that takes a store of files (``None``: the default one, ``auto``):
    the default, then a store for each fast strategy that indexes files of any size (a test
    file is small), so the test runs through every way a file is read."""
    stores = [pytest.param(None, id="auto")]
    for read in FAST_READS:
        stores.append(pytest.param(FileSessionStorage(tuning_for(read, EVERY_FILE)), id=str(read)))
    return stores


def runtime_for(path: Path, read: ReadStrategy, tuning: Tuning = DEFAULT_TUNING) -> Runtime:
    return Runtime(agent_dir=path.parent / "agent", breadcrumbs=False, tuning=tuning_for(read, tuning))


def read_by(manager: SessionManager) -> ReadStrategy:
    """The strategy that served ``manager``'s open: a lazily opened session's index records it;
    any other session was given to the full parse."""
    if not is_lazy(manager):
        return ReadStrategy.FULL
    strategy: ReadStrategy = manager._state.index.read_by  # type: ignore[attr-defined]
    return strategy


def open_by(path: Path, read: ReadStrategy, *, lazy: bool = True, **options: Any) -> SessionManager:
    """``SessionManager.open(path, **options)`` by ``read``; ``lazy``: check it took that path
    (false where the index is expected to give the file to a full load)."""
    manager = SessionManager.open(path, runtime=runtime_for(path, read), **options)
    if lazy:
        assert read_by(manager) is read, read
        assert opened_cold(manager) == str(read).startswith("cold"), read
    return manager
