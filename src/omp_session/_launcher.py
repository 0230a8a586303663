"""Internal: the ``omp-session`` console script, importable with no extra installed.

The library needs only its core dependencies; the command line needs the ``[cli]`` extra and the
viewer and HTML export the ``[web]`` extra. When one is missing the command says which extra to
install, in one line with exit status 2, instead of a traceback.
"""

from __future__ import annotations

import atexit
import os
import sys

from omp_session._extras import EXTRA_OF_MODULE, missing_extra_message

__all__ = ["EXTRA_OF_MODULE", "main", "missing_extra_message"]  # the first two: _extras.py


def main() -> None:
    """Run the command line, or say which extra to install (exit status 2)."""
    try:
        from omp_session.cli import leave_objects_to_exit
        from omp_session.cli import main as cli_main
    except ImportError as exc:
        message = missing_extra_message(exc, "the omp-session command") or (
            f"cannot load the command line: {exc} (reinstall omp-session)"
        )
        sys.stderr.write(f"omp-session: error: {message}\n")
        raise SystemExit(2) from None
    if not os.environ.get("OMP_SESSION_FULL_EXIT"):
        leave_objects_to_exit()  # (``_leave`` ends the process without tearing them down)
    try:
        cli_main()
    except SystemExit as done:
        status = done.code
    else:
        status = 0
    _leave(status)


def _leave(status: object) -> None:
    """End the process without tearing down what the command loaded (issue 26 item 4).

    By now every file the command opened is closed by its ``with`` block and its output is
    written; what is left is the interpreter's finalisation, which frees every object still alive
    one by one (about 0.4 s of CPU after a 100k-entry session) for memory the operating system
    takes back anyway. So: flush the streams, run the ``atexit`` hooks, and ``os._exit``. A flush
    that fails (a closed pipe) leaves through the ordinary exit, which reports it as Python does.
    ``OMP_SESSION_FULL_EXIT=1`` keeps the ordinary exit (to measure what this saves)."""
    code = status if isinstance(status, int) else (0 if status is None else 1)
    if not isinstance(status, int) and status is not None:
        sys.stderr.write(f"{status}\n")
    if os.environ.get("OMP_SESSION_FULL_EXIT"):
        raise SystemExit(code)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        raise SystemExit(code) from None
    atexit._run_exitfuncs()
    os._exit(code)
