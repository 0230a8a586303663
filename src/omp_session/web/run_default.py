"""``make run``: the viewer on the user's omp sessions when there are any, else on ``samples/``.

Run as ``python -m omp_session.web.run_default [--port N] [--open]``.

Internal module (part of the viewer, whose API is :mod:`omp_session.web`); not part of the public API.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from omp_session.store.loading import read_header
from omp_session.store.paths import blobs_dir, sessions_root
from omp_session.web.server import serve

__all__ = ["choose_root", "has_sessions", "main"]

#: The samples shipped with the repository (``samples/generate.py`` writes them).
SAMPLES = Path(__file__).resolve().parents[3] / "samples"


def has_sessions(root: Path) -> bool:
    """True as soon as one ``<root>/<project>/*.jsonl`` has a session header (stops at the first)."""
    try:
        projects = [p for p in root.iterdir() if p.is_dir()]
    except OSError:
        return False
    return any(read_header(f) is not None for project in projects for f in project.glob("*.jsonl"))


def choose_root(samples: Path = SAMPLES) -> tuple[Path, Path, str]:
    """``(sessions root, blobs dir, why)``: the user's sessions if any exist, else the samples."""
    root = sessions_root()
    if has_sessions(root):
        return root, blobs_dir(), "your omp sessions"
    return (
        samples / "sessions",
        samples / "blobs",
        "the bundled samples (no omp sessions found in " + str(root) + ")",
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--open", action="store_true", help="open a browser tab")
    args = parser.parse_args(argv)
    root, blobs, why = choose_root()
    print(f"Showing {why}.")
    serve(root, blobs, host=args.host, port=args.port, open_browser=args.open)


if __name__ == "__main__":
    main()
