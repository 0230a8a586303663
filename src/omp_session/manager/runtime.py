"""What a :class:`~omp_session.manager.SessionManager` takes from the world, in one object.

Time, randomness, the agent directory and the store sessions live in are the manager's only inputs
besides its arguments. Passing a :class:`Runtime` replaces them, so tests and reproducible tools
(the sample generator) never patch module globals, and no process-wide setting picks the store:
the command line builds one runtime from ``--store`` and hands it to every command.

    >>> from omp_session import Runtime, SessionManager
    >>> runtime = Runtime.fixed(start_ms=1_750_000_000_000)
    >>> session = SessionManager.in_memory("/work", runtime=runtime)
    >>> session.get_header()["timestamp"]
    '2025-06-15T15:06:40.000Z'
"""

from __future__ import annotations

import random
from collections.abc import Callable, Container
from dataclasses import dataclass, replace
from pathlib import Path

from omp_session.format.ids import SnowflakeGenerator, iso_from_ms, new_entry_id, now_iso
from omp_session.store import SessionStorage
from omp_session.store.blobs import FileBlobStore
from omp_session.store.breadcrumbs import read_breadcrumb, write_breadcrumb
from omp_session.store.file_sessions import FileSessionStorage
from omp_session.store.paths import blobs_dir, terminal_sessions_dir
from omp_session.store.tuning import DEFAULT_TUNING, Tuning

__all__ = ["Runtime"]


@dataclass(frozen=True)
class Runtime:
    """The clock, the id sources, the agent directory, the store and the caches a manager uses."""

    #: The current time as omp writes it (``YYYY-MM-DDTHH:MM:SS.mmmZ``).
    now: Callable[[], str] = now_iso
    #: A fresh session id; ``None``: the id style of the session's dialect (Snowflake for omp 13.19,
    #: UUIDv7 for omp 18).
    new_session_id: Callable[[], str] | None = None
    #: A fresh entry id not in the given container.
    new_entry_id: Callable[[Container[str]], str] = new_entry_id
    #: The agent directory for blobs and terminal breadcrumbs; ``None``: the configured one
    #: (``PI_CODING_AGENT_DIR``, the XDG rule, else ``~/.omp/agent``).
    agent_dir: Path | None = None
    #: Whether ``open`` may use and write the offset-index cache (``<agent dir>/cache/offsets``).
    offset_index: bool = True
    #: Whether terminal breadcrumbs are read and written (spec §7.8).
    breadcrumbs: bool = True
    #: Where sessions live: ``None`` for session files (with their fast paths), else a store such
    #: as a ``PostgresStorage``; a factory's ``storage=`` argument overrides it for that session.
    store: SessionStorage | None = None
    #: The thresholds, chunk sizes and cache budgets the session files are read with
    #: (:class:`~omp_session.store.tuning.Tuning`; a :attr:`store` of files brings its own).
    tuning: Tuning = DEFAULT_TUNING

    def sessions(self) -> SessionStorage:
        """The store this runtime's sessions live in: :attr:`store`, else session files read with
        :attr:`tuning`."""
        return self.store if self.store is not None else FileSessionStorage(self.tuning)

    def with_store(self, storage: SessionStorage | None) -> Runtime:
        """This runtime, its sessions in ``storage`` when one is given (a factory's ``storage=``)."""
        return self if storage is None or storage is self.store else replace(self, store=storage)

    def session_id(self, dialect_style: Callable[[], str]) -> str:
        """A fresh session id: this runtime's source when it has one, else ``dialect_style``."""
        return self.new_session_id() if self.new_session_id is not None else dialect_style()

    def blobs_dir(self) -> Path:
        """The content-addressed blob store of this agent directory (spec §6.7)."""
        return self.agent_dir / "blobs" if self.agent_dir is not None else blobs_dir()

    def blob_store(self) -> FileBlobStore:
        """The blob store of this agent directory."""
        return FileBlobStore(self.blobs_dir())

    def terminal_sessions_dir(self) -> Path:
        """Where terminal breadcrumbs live."""
        if self.agent_dir is not None:
            return self.agent_dir / "terminal-sessions"
        return terminal_sessions_dir()

    def remember_terminal_session(self, cwd: str, session_file: str) -> None:
        """Write this terminal's breadcrumb (best effort; nothing when breadcrumbs are off)."""
        if self.breadcrumbs:
            write_breadcrumb(cwd, session_file, directory=self.terminal_sessions_dir())

    def terminal_session(
        self, cwd: str, session_dir: Path, *, exists: Callable[[Path], bool] = Path.is_file
    ) -> Path | None:
        """This terminal's last session of ``cwd`` inside ``session_dir`` (see breadcrumbs.py), if
        ``exists`` says it is still stored (a file by default; a row of a database store)."""
        if not self.breadcrumbs:
            return None
        return read_breadcrumb(cwd, session_dir, directory=self.terminal_sessions_dir(), exists=exists)

    @classmethod
    def fixed(cls, start_ms: int, *, step_ms: int = 1000, seed: int = 0, **options: object) -> Runtime:
        """A deterministic runtime: the clock starts at ``start_ms`` and advances ``step_ms`` per
        reading, ids come from generators seeded with ``seed`` (for tests and samples)."""
        clock = [start_ms - step_ms]
        rng = random.Random(seed)

        def now() -> str:
            clock[0] += step_ms
            return iso_from_ms(clock[0])

        def entry_id(existing: Container[str]) -> str:
            while (candidate := f"{rng.getrandbits(32):08x}") in existing:
                pass
            return candidate

        session_ids = SnowflakeGenerator(start_seq=seed, clock=lambda: clock[0])
        return cls(now=now, new_session_id=session_ids.next_id, new_entry_id=entry_id, **options)  # type: ignore[arg-type]
