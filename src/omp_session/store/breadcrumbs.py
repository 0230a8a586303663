"""Terminal breadcrumbs (spec §7.8): which session each terminal used last.

``<terminal-sessions>/<terminal id>`` holds ``"<cwd>\\n<session file>\\n"``. ``continue_recent``
prefers it over the newest file, so two terminals in one project each resume their own session.
Unlike omp (§9 #18) a breadcrumb is only trusted when it points at a regular file inside the
session directory being resumed. Writing one is best effort and never fails a session operation.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from omp_session.errors import CorruptSessionError
from omp_session.store.paths import is_within, terminal_sessions_dir, validate_name
from omp_session.store.regular import read_regular

__all__ = ["read_breadcrumb", "terminal_id", "write_breadcrumb"]

_ENV_IDS = (
    ("KITTY_WINDOW_ID", "kitty-"),
    ("TMUX_PANE", "tmux-"),
    ("TERM_SESSION_ID", "apple-"),
    ("WT_SESSION", "wt-"),
)


def terminal_id(env: Mapping[str, str] | None = None, stdin: IO[Any] | None = None) -> str | None:
    """``pts-3`` from the stdin TTY, else an id from the terminal's environment, else ``None``."""
    env = os.environ if env is None else env
    stream = sys.stdin if stdin is None else stdin
    try:
        if stream is not None and stream.isatty():
            return os.ttyname(stream.fileno()).removeprefix("/dev/").replace("/", "-")
    except (OSError, ValueError, AttributeError):
        pass
    for variable, prefix in _ENV_IDS:
        value = env.get(variable)
        if value:
            return prefix + value.replace("/", "-")
    return None


def _breadcrumb_file(terminal: str, directory: Path | None) -> Path | None:
    try:
        return (directory if directory is not None else terminal_sessions_dir()) / validate_name(terminal)
    except ValueError:
        return None


def write_breadcrumb(
    cwd: str, session_file: str, terminal: str | None = None, *, directory: Path | None = None
) -> None:
    """Remember ``session_file`` as this terminal's session (atomic; errors are ignored), in
    ``directory`` (default: the configured terminal-sessions directory)."""
    terminal = terminal if terminal is not None else terminal_id()
    target = _breadcrumb_file(terminal, directory) if terminal else None
    if target is None:
        return
    with contextlib.suppress(OSError):
        target.parent.mkdir(parents=True, exist_ok=True)
        temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        temp.write_text(f"{os.path.abspath(cwd)}\n{session_file}\n", encoding="utf-8")
        os.replace(temp, target)


def read_breadcrumb(
    cwd: str,
    session_dir: Path,
    terminal: str | None = None,
    *,
    directory: Path | None = None,
    exists: Callable[[Path], bool] = Path.is_file,
) -> Path | None:
    """This terminal's last session for ``cwd``, if it is a session inside ``session_dir`` (a
    regular file, or whatever ``exists`` accepts for another store)."""
    terminal = terminal if terminal is not None else terminal_id()
    source = _breadcrumb_file(terminal, directory) if terminal else None
    if source is None:
        return None
    try:
        lines = read_regular(source).decode("utf-8").split("\n")
    except (OSError, UnicodeDecodeError, CorruptSessionError):
        return None
    if len(lines) < 2 or os.path.abspath(lines[0]) != os.path.abspath(cwd):
        return None
    candidate = Path(lines[1])
    if not is_within(session_dir, candidate) or not exists(candidate):
        return None
    return candidate
