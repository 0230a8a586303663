"""The session-file scanner: the compiled one when it is built, else the pure-Python reference.

The CPython ``json`` pattern: ``_scanner_c`` (Cython, built by ``pip install`` when a C compiler
is there) and ``_scanner_py`` (its reference) give the same results for the same bytes, and
``scan`` is bound to the compiled one when it imports. ``OMP_SESSION_PURE_SCANNER=1`` in the
environment forces the pure-Python one (the test suite runs in both modes: ``.ci/run``).

``find`` is ``bytes.find`` bound the same way (the marker searches over whole files).
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
from omp_session.store._scanner_py import find as py_find
from omp_session.store._scanner_py import scan as py_scan

__all__ = [
    "COMPILED",
    "ESCAPE",
    "NOTE",
    "ScanHooks",
    "Scanned",
    "c_find",
    "c_scan",
    "find",
    "py_find",
    "py_scan",
    "scan",
]

_c_scan_tuple: Callable[..., tuple[Any, ...]] | None
try:
    from omp_session.store._scanner_c import scan as _c_scan_tuple
except ImportError:  # not built (no C compiler when it was installed)
    _c_scan_tuple = None
c_find: Callable[..., int] | None
try:
    from omp_session.store._scanner_c import find as c_find
except ImportError:  # not built, or built before it had find
    c_find = None


def _c_scan(data: bytes, start: int, end: int, hooks: ScanHooks, stateful: Collection[str]) -> Scanned:
    assert _c_scan_tuple is not None
    fields: tuple[Any, ...] = _c_scan_tuple(data, start, end, hooks, stateful)
    return Scanned(*fields)


#: The compiled scanner (``None`` when it is not built).
c_scan = _c_scan if _c_scan_tuple is not None else None
_FORCED_PURE = os.environ.get("OMP_SESSION_PURE_SCANNER", "") not in ("", "0")
COMPILED = c_scan is not None and not _FORCED_PURE
scan = _c_scan if COMPILED else py_scan
#: ``bytes.find`` of a marker over a whole file: ``memmem`` in the compiled scanner (3-4x faster
#: than CPython 3.11's two-way search on a 50 MB file for a marker it does not hold).
find: Callable[..., int] = c_find if COMPILED and c_find is not None else py_find
NOTE = (
    "omp-session: compiled scanner"
    if COMPILED
    else "omp-session: pure-Python scanner (OMP_SESSION_PURE_SCANNER is set)"
    if c_scan is not None
    else "omp-session: pure-Python scanner (the compiled one was not built: no C compiler at install)"
)
