"""The session-file scanner: the compiled one when it is built, else the pure-Python reference.

The CPython ``json`` pattern: ``_scanner_c`` (Cython, built by ``pip install`` when a C compiler
is there) and ``_scanner_py`` (its reference) give the same results for the same bytes, and
``scan`` is bound to the compiled one when it imports. ``OMP_SESSION_PURE_SCANNER=1`` in the
environment forces the pure-Python one (the test suite runs in both modes: ``.ci/run``).

``COMPILED`` says which one ``scan`` is, and so which cold open the ``auto`` read strategy takes;
``NOTE`` is a one-line description of it. A forced strategy names its scanner itself
(``Tuning(read_strategy="cold-compiled")`` or ``"cold-pure"``, store/_indexed/strategies.py):
that is how the tests run both, instead of patching this module.

Internal module (the offset index's cold open); not part of the public API.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from typing import Any

from omp_session.store._scanner_py import ESCAPE, ScanHooks, Scanned
from omp_session.store._scanner_py import scan as py_scan

__all__ = ["COMPILED", "ESCAPE", "NOTE", "ScanHooks", "Scanned", "c_scan", "py_scan", "scan"]

_c_scan_tuple: Callable[..., tuple[Any, ...]] | None
try:
    from omp_session.store._scanner_c import scan as _c_scan_tuple
except ImportError:  # not built (no C compiler when it was installed)
    _c_scan_tuple = None


def _c_scan(data: bytes, start: int, end: int, hooks: ScanHooks, stateful: Collection[str]) -> Scanned:
    assert _c_scan_tuple is not None
    fields: tuple[Any, ...] = _c_scan_tuple(data, start, end, hooks, stateful)
    return Scanned(*fields)


#: The compiled scanner (``None`` when it is not built).
c_scan = _c_scan if _c_scan_tuple is not None else None
_FORCED_PURE = os.environ.get("OMP_SESSION_PURE_SCANNER", "") not in ("", "0")
COMPILED = c_scan is not None and not _FORCED_PURE
scan = _c_scan if COMPILED else py_scan
NOTE = (
    "omp-session: compiled scanner"
    if COMPILED
    else "omp-session: pure-Python scanner (OMP_SESSION_PURE_SCANNER is set)"
    if c_scan is not None
    else "omp-session: pure-Python scanner (the compiled one was not built: no C compiler at install)"
)
