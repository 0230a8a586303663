"""One exception hierarchy for the whole library.

Callers can catch :class:`SessionError` to handle every failure of this package at once; each
subclass names the file, line or id involved in its message. The tree (also in ``docs/api.md``)::

    SessionError
    ├── EntryNotFoundError (also KeyError)
    │   └── UnstableEntryIdError
    ├── AmbiguousEntryError
    ├── CorruptSessionError
    │   └── NotASessionError
    ├── SessionNotFoundError (also FileNotFoundError)
    │   └── NoMatchingSessionError
    ├── AmbiguousSessionError
    ├── ForeignSessionError
    ├── SessionLockedError
    ├── SessionChangedError
    ├── NoRowsUnderRootError
    ├── PersistenceError
    ├── StoreReadError
    ├── ReadOnlySessionError
    ├── TargetExistsError
    ├── SecretsConfigError
    ├── UnwritableValueError (also ValueError)
    ├── UnsafeNameError (also ValueError)
    ├── UnsupportedByDialectError (also AttributeError)
    ├── UnknownDialectError (also ValueError)
    ├── ReadStrategyError (also ValueError)
    ├── UnsupportedConversion (also ValueError)
    │   └── UnsupportedToolSchema
    └── WorkspaceError (also ValueError)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

__all__ = [
    "AmbiguousEntryError",
    "AmbiguousSessionError",
    "CorruptSessionError",
    "EntryNotFoundError",
    "ForeignSessionError",
    "NoMatchingSessionError",
    "NoRowsUnderRootError",
    "NotASessionError",
    "PersistenceError",
    "ReadOnlySessionError",
    "ReadStrategyError",
    "SecretsConfigError",
    "SessionChangedError",
    "SessionError",
    "SessionLockedError",
    "SessionNotFoundError",
    "StoreReadError",
    "TargetExistsError",
    "UnknownDialectError",
    "UnsafeNameError",
    "UnstableEntryIdError",
    "UnsupportedByDialectError",
    "UnsupportedConversion",
    "UnsupportedToolSchema",
    "UnwritableValueError",
    "WorkspaceError",
]

#: How many candidates an ambiguity error names before saying "and N more".
_SHOWN_CANDIDATES = 5


class SessionError(Exception):
    """Base class of every error raised by omp-session."""


class EntryNotFoundError(SessionError, KeyError):
    """An entry id was not found in the session (any branch)."""

    def __init__(self, entry_id: object) -> None:
        from omp_session.format.javascript import template_string  # (format imports errors)

        self.entry_id = entry_id
        # omp builds the message with a template literal: JavaScript's string of the id
        super().__init__(f"Entry {template_string(entry_id)} not found")

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


class NotASessionError(CorruptSessionError):
    """``repair`` refused a file in which no line is a session header or entry (an empty file, a
    binary, a text file, someone else's JSON); nothing was written. ``force=True`` overrides."""


class NoRowsUnderRootError(SessionError):
    """``pull`` found no session row under its root while the database holds rows under others
    (``roots``: each root and its number of rows): rows are named by absolute paths, so restoring
    elsewhere needs ``as_root``."""

    def __init__(self, root: Path, roots: Sequence[tuple[Path, int]]) -> None:
        self.root = root
        self.roots = list(roots)
        named = ", ".join(f"{where} ({count})" for where, count in self.roots[:5])
        more = f" and {len(self.roots) - 5} more" if len(self.roots) > 5 else ""
        first = self.roots[0][0] if self.roots else root
        super().__init__(
            f"no session rows under {root}; the database holds rows under {named}{more}. "
            f"Rows keep their absolute paths: to restore them here, give the root they are under "
            f"(--as-root {first})"
        )


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
    """Writing a file failed (the session file, an artifact, an export); ``cause`` says why.

    For the session file, the in-memory session may be ahead of the file.
    """

    def __init__(self, path: Path | str, cause: BaseException) -> None:
        self.path = Path(path)
        self.cause = cause
        # The text as given: a store's URL is no path (Path would fold its "//").
        super().__init__(f"{path}: write failed: {cause}")


class StoreReadError(SessionError):
    """Reading from a store failed: a database that cannot be reached, or a table that is not
    there (a read never creates one). ``where`` names the store, without a password."""

    def __init__(self, where: str, cause: BaseException | str) -> None:
        self.where = where
        self.cause = cause
        super().__init__(f"{where}: read failed: {cause}")


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


class NoMatchingSessionError(SessionNotFoundError):
    """No session file, id, file name or prefix matches what was typed."""

    def __init__(self, query: str, root: Path) -> None:
        super().__init__(query)
        self.query = query
        self.args = (f"no session matches {query!r} (as a path, id, file name or prefix under {root})",)


class NamedCandidate(Protocol):
    """What an ambiguity error needs of a candidate session (``tools.resolve.SessionCandidate``)."""

    @property
    def id(self) -> str: ...

    @property
    def path(self) -> Path: ...


class AmbiguousSessionError(SessionError):
    """A session prefix matches more than one session; ``candidates`` are newest first."""

    def __init__(self, query: str, candidates: Sequence[NamedCandidate]) -> None:
        self.query = query
        self.candidates = list(candidates)
        shown = ", ".join(f"{c.id} ({c.path.name})" for c in candidates[:_SHOWN_CANDIDATES])
        more = len(candidates) - _SHOWN_CANDIDATES
        extra = f" and {more} more" if more > 0 else ""
        super().__init__(
            f"session prefix {query!r} is ambiguous: {len(candidates)} sessions match: {shown}{extra}; "
            "type more characters"
        )


class AmbiguousEntryError(SessionError):
    """An entry id prefix matches more than one entry of a session."""

    def __init__(self, query: str, candidates: list[str]) -> None:
        self.query = query
        self.candidates = candidates
        shown = ", ".join(candidates[:_SHOWN_CANDIDATES])
        more = len(candidates) - _SHOWN_CANDIDATES
        extra = f" and {more} more" if more > 0 else ""
        super().__init__(f"entry id prefix {query!r} is ambiguous: matches {shown}{extra}")


class UnstableEntryIdError(EntryNotFoundError):
    """An entry id was not found in a version 1 file, whose ids are invented at every load (§2.2)."""

    def __init__(self, entry_id: str) -> None:
        super().__init__(entry_id)
        self.args = (
            f"Entry {entry_id} not found: this is a version 1 file, whose entry ids are made up anew "
            "each time it is read; migrate it to version 3 (omp-session migrate) to give them stable ids",
        )


class TargetExistsError(SessionError):
    """The output file exists and overwriting it was not allowed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(f"{path}: already exists; refusing to overwrite it")


class UnsafeNameError(SessionError, ValueError):
    """A file name built from an argument (a tool type, a session id) is not one safe path component.

    Also a ``ValueError``, which is what it was before it had its own class.
    """

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        shown = name if len(name) <= 80 else f"{name[:77]}..."
        super().__init__(f"unsafe file name {shown!r}: {reason}")


class UnsupportedByDialectError(SessionError, AttributeError):
    """A method the session's omp version does not have (``append_mcp_tool_selection`` in omp 18)."""

    def __init__(self, method: str, dialect: object) -> None:
        super().__init__(f"no method {method} in {dialect}")


class UnknownDialectError(SessionError, ValueError):
    """A dialect name that is none of ``13``, ``18.2``, ``18.3`` (``18``: the newest 18.x)."""

    def __init__(self, value: str, origin: str) -> None:
        super().__init__(f"unknown omp dialect {value!r} ({origin}); use 13, 18.2, 18.3 or 18")


class ReadStrategyError(SessionError, ValueError):
    """A ``Tuning(read_strategy=...)`` that is no strategy, cannot run in this installation (no
    compiled scanner), or reads through the offset index a runtime switched off."""


class WorkspaceError(SessionError, ValueError):
    """A workspace directory that cannot be added (omp 18)."""


class ForeignSessionError(SessionError):
    """Another agent's transcript cannot be imported (unreadable, empty or malformed).

    The message is omp's own wording (spec importers §1.2, §2.2); ``path`` names the source file.
    The source file is never modified.
    """

    def __init__(self, path: Path | str, message: str) -> None:
        self.path = Path(path)
        super().__init__(message)


class SecretsConfigError(SessionError):
    """An omp ``secrets.yml`` that cannot be read at all (not YAML, or PyYAML missing): redaction
    refuses to guess rather than silently applying fewer rules (docs/sharing.md)."""


class UnwritableValueError(SessionError, ValueError):
    """A value cannot be written the way omp writes it (a title slot whose metadata alone exceeds
    its 256 bytes: omp throws too)."""


class UnsupportedConversion(SessionError, ValueError):
    """A provider request body needs a pi-ai rule ``omp_session.providers`` does not reproduce; no
    body is made rather than one that would differ from omp's."""


class UnsupportedToolSchema(UnsupportedConversion):
    """A tool schema uses a keyword whose provider rewrite is not reproduced."""
