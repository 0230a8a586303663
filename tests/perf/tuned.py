"""How the perf tests open sessions: every file through the fast path, whatever its size.

The thresholds and sizes are a :class:`~omp_session.store.tuning.Tuning` passed with the
runtime (nothing is patched): :data:`EVERY_FILE` indexes small test files too, and a test that
wants other sizes passes its own ``tuning``.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from omp_session import Runtime, SessionManager
from omp_session.store.tuning import Tuning

#: Sessions of any size take the offset-index paths (a test file is small).
EVERY_FILE = Tuning(min_indexed_bytes=0)
#: No file takes them: every open is a full load (the reference the fast paths are compared with).
NO_FILE = Tuning(min_indexed_bytes=1 << 62)


def open_session(
    path: str | os.PathLike[str],
    *args: Any,
    runtime: Runtime | None = None,
    tuning: Tuning = EVERY_FILE,
    **options: Any,
) -> SessionManager:
    """``SessionManager.open(path, ...)`` with ``tuning`` (on ``runtime`` when one is given)."""
    chosen = replace(runtime if runtime is not None else Runtime(), tuning=tuning)
    return SessionManager.open(path, *args, runtime=chosen, **options)
