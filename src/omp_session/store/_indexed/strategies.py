"""Every way the file backend reads a session file, each under the name ``Tuning.read_strategy``
gives it (:class:`~omp_session.store.tuning.ReadStrategy`).

``open_file`` (store/file_sessions.py) runs one sequence for every strategy, and a
:class:`ReadPath` says which of its steps a strategy takes:

1. the warm open through the stored offset index (``fast_open.open_indexed``), if ``warm``;
2. else the file is read, and the cold open indexes it in one pass (``fast_open.open_cold``) by
   ``cold``, if there is one;
3. else the full parse (``loading.parse_session``, the reference), after which an index is
   written for the next open (``fast_open.remember_index``) if ``remembers``.

Step 3 serves whatever steps 1 and 2 cannot serve exactly, under every strategy: a fast path is
exact or nothing. ``rebuilds`` (the warm strategy) opens through the index that step 2 or 3 just
wrote, so such an open reads as every later ``auto`` open of the unchanged file does.

This is the CPython ``json`` pattern (docs/architecture.md): the fast variants and the reference
behind one name, and one test suite run through each (tests/store/read_paths.py,
tests/store/test_read_strategies.py). ``auto`` is exactly the choice the open made before there
were names for the others.

Internal module (part of ``SessionManager.open``); not part of the public API.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from omp_session.errors import ReadStrategyError
from omp_session.store._indexed.fast_open import (
    AUTO_COLD,
    THROUGH_COMPILED,
    THROUGH_PURE,
    WITHOUT_SCANNER,
    ColdPass,
)
from omp_session.store.tuning import ReadStrategy

__all__ = ["READ_PATHS", "ReadPath", "read_path"]


class ReadPath(NamedTuple):
    """The steps of the open (module docstring) that one strategy takes."""

    strategy: ReadStrategy
    #: Try the stored offset index first.
    warm: bool
    #: How the cold open indexes the file (``None``: no cold open).
    cold: ColdPass | None
    #: Write an offset index after a full parse.
    remembers: bool
    #: Serve the open through the index the cold open or the full parse has just written.
    rebuilds: bool = False


_AUTO = ReadPath(ReadStrategy.AUTO, warm=True, cold=AUTO_COLD, remembers=True)
_FULL = ReadPath(ReadStrategy.FULL, warm=False, cold=None, remembers=False)
_paths = [
    _AUTO,
    _FULL,
    ReadPath(ReadStrategy.COLD_PURE, warm=False, cold=THROUGH_PURE, remembers=True),
    ReadPath(ReadStrategy.COLD_SKIM, warm=False, cold=WITHOUT_SCANNER, remembers=True),
    # The index built as auto builds it: the warm open is then the one auto's next open is.
    ReadPath(ReadStrategy.WARM, warm=True, cold=AUTO_COLD, remembers=True, rebuilds=True),
]
if THROUGH_COMPILED is not None:  # (else Tuning refuses the strategy: ReadStrategy.available)
    _paths.append(ReadPath(ReadStrategy.COLD_COMPILED, warm=False, cold=THROUGH_COMPILED, remembers=True))

#: Each strategy this installation can run, by its name.
READ_PATHS: Mapping[ReadStrategy, ReadPath] = {path.strategy: path for path in _paths}


def read_path(strategy: ReadStrategy, use_index: bool) -> ReadPath:
    """The steps ``strategy`` takes; ``use_index``: whether the runtime lets the open read and
    write offset indexes (``Runtime.offset_index``). Without them ``auto`` is the full parse, and
    a strategy that reads through an index is a contradiction: ``ReadStrategyError``."""
    if use_index:
        return READ_PATHS[strategy]
    if strategy is ReadStrategy.AUTO or strategy is ReadStrategy.FULL:
        return _FULL
    raise ReadStrategyError(
        f"read_strategy {strategy.value!r} reads through the offset index, which this runtime"
        " switched off (offset_index=False): use 'full' or 'auto'"
    )
