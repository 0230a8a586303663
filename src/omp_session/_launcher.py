"""Internal: the ``omp-session`` console script, importable with no extra installed.

The library needs only its core dependencies; the command line needs the ``[cli]`` extra and the
viewer and HTML export the ``[web]`` extra. When one is missing the command says which extra to
install, in one line with exit status 2, instead of a traceback.
"""

from __future__ import annotations

import sys

from omp_session._extras import EXTRA_OF_MODULE, missing_extra_message

__all__ = ["EXTRA_OF_MODULE", "main", "missing_extra_message"]  # the first two: _extras.py


def main() -> None:
    """Run the command line, or say which extra to install (exit status 2)."""
    try:
        from omp_session.cli import main as cli_main
    except ImportError as exc:
        message = missing_extra_message(exc, "the omp-session command") or (
            f"cannot load the command line: {exc} (reinstall omp-session)"
        )
        sys.stderr.write(f"omp-session: error: {message}\n")
        raise SystemExit(2) from None
    cli_main()
