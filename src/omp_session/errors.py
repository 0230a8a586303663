"""One exception hierarchy for the whole library.

Callers can catch :class:`SessionError` to handle every failure of this package at once; each
subclass names the file, line or id involved in its message.
"""

from __future__ import annotations

from pathlib import Path


class SessionError(Exception):
    """Base class of every error raised by omp-session."""


class EntryNotFoundError(SessionError, KeyError):
    """An entry id was not found in the session (any branch)."""

    def __init__(self, entry_id: str | None) -> None:
        self.entry_id = entry_id
        super().__init__(f"Entry {entry_id} not found")

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class CorruptSessionError(SessionError):
    """A session file cannot be used as a session (unreadable header, not a file, ...).

    The file is never modified when this is raised.
    """

    def __init__(self, path: Path | str, message: str, line: int | None = None) -> None:
        self.path = Path(path)
        self.line = line
        where = f"{self.path}:{line}" if line is not None else str(self.path)
        super().__init__(f"{where}: {message}")


class SessionLockedError(SessionError):
    """Another process holds the write lock of this session."""

    def __init__(self, path: Path | str, holder_pid: int | None) -> None:
        self.path = Path(path)
        self.holder_pid = holder_pid
        holder = f"process {holder_pid}" if holder_pid else "another process"
        super().__init__(f"{self.path}: session is locked for writing by {holder}")


class SessionChangedError(SessionError):
    """The file changed on disk since it was read, so a full rewrite would lose data."""

    def __init__(self, path: Path | str, detail: str) -> None:
        self.path = Path(path)
        super().__init__(f"{self.path}: changed on disk since it was read ({detail}); refusing to rewrite")


class PersistenceError(SessionError):
    """Writing to the session file failed; the in-memory session may be ahead of the file."""

    def __init__(self, path: Path | str, cause: BaseException) -> None:
        self.path = Path(path)
        self.cause = cause
        super().__init__(f"{self.path}: write failed: {cause}")


class ReadOnlySessionError(SessionError):
    """A write was attempted on a session opened read-only."""

    def __init__(self, path: Path | str | None) -> None:
        super().__init__(f"{path}: session is open read-only")


class SessionNotFoundError(SessionError, FileNotFoundError):
    """A session file that must exist does not."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        super().__init__(f"{self.path}: no such session file")

    def __str__(self) -> str:
        return str(self.args[0])


class UnsupportedByDialectError(SessionError, AttributeError):
    """A method the session's omp version does not have (``append_mcp_tool_selection`` in omp 18)."""

    def __init__(self, method: str, dialect: object) -> None:
        super().__init__(f"no method {method} in {dialect}")


class UnwritableValueError(SessionError, ValueError):
    """A value cannot be written the way omp writes it (a title slot whose metadata alone exceeds
    its 256 bytes: omp throws too)."""
