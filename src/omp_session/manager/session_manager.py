"""``SessionManager``: the façade that composes storage, the tree index and context building.

Behaviour follows omp 13.19.0 (spec §6, §7) with the improvements the spec's §9 asks for:
appends are written synchronously as one ``write`` before the method returns; a corrupt file is
never overwritten; a failed write leaves memory unchanged; one writer per session file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from omp_session.dialects import Dialect, DialectChoice, auto_dialect, explicit_dialect
from omp_session.errors import (
    ReadOnlySessionError,
    SessionChangedError,
    SessionNotFoundError,
)
from omp_session.format import entry_factory as make
from omp_session.format.codec import BLANK, LineIssue
from omp_session.format.entries import CURRENT_VERSION, is_assistant_entry
from omp_session.format.title_slot import TitleSlot
from omp_session.format.transform import prepare_for_disk
from omp_session.gcpause import gc_paused
from omp_session.manager.appends import AppendMethods
from omp_session.manager.layout import dialect_for_file, dialect_for_new
from omp_session.manager.navigation import NavigationMethods
from omp_session.manager.omp18_api import Omp18Methods, fork_entries, peek_session_init
from omp_session.manager.runtime import Runtime
from omp_session.manager.titles import TitleMethods
from omp_session.manager.whole_session import ForkResult, WholeSessionMethods, new_header_and_path
from omp_session.manager.workspace import WorkspaceMethods
from omp_session.model.tree import EntryIndex, SessionIndex, SessionTreeNode
from omp_session.store import DurabilityPolicy, Storage
from omp_session.store.artifacts import ArtifactMethods
from omp_session.store.blobs import BlobSink
from omp_session.store.file import FileStorage
from omp_session.store.loading import is_session_header, parse_session, read_session_bytes
from omp_session.store.memory import MemoryStorage
from omp_session.store.opening import OpenedFile, absolute, open_file
from omp_session.store.paths import default_session_dir, session_file_path
from omp_session.tools import listing

Entry = dict[str, Any]
StrPath = str | os.PathLike[str]
# Aliases: inside the class body ``list`` names the ``SessionManager.list`` factory.
EntryList = list[Entry]
InfoList = list[listing.SessionInfo]
NodeList = list[SessionTreeNode]
IssueList = list[LineIssue]
RuleList = list[str]
Content = str | list[dict[str, Any]]


def _session_dir_for(cwd: StrPath, session_dir: StrPath | None) -> Path:
    """An explicit session directory as given, else omp's per-project directory for ``cwd`` (§1.2)."""
    return Path(session_dir) if session_dir is not None else default_session_dir(cwd)


def _working_directory(header: Entry, dialect: Dialect) -> str:
    """The cwd a session opened from ``header`` works in (omp 18: the recorded one only if it can
    be entered, else the process cwd)."""
    recorded = header.get("cwd")
    if not isinstance(recorded, str):
        return os.getcwd()
    if dialect.cwd_must_exist and not (os.path.isdir(recorded) and os.access(recorded, os.X_OK)):
        return os.getcwd()
    return recorded


class SessionManager(
    NavigationMethods,
    AppendMethods,
    Omp18Methods,
    TitleMethods,
    WorkspaceMethods,
    WholeSessionMethods,
    ArtifactMethods,
):
    """One session: a header and a tree of entries, persisted to a JSONL file or kept in memory.

    Build one with :meth:`create`, :meth:`open`, :meth:`continue_recent`, :meth:`in_memory` or
    :meth:`fork_from`; use it as a context manager to release the file at the end::

        with SessionManager.create("/work/project") as session:
            session.append_message({"role": "user", "content": "hi", "timestamp": 0})
    """

    def __init__(
        self,
        *,
        cwd: str,
        session_dir: str,
        storage: Storage,
        header: Entry,
        entries: Sequence[Entry] = (),
        index: EntryIndex | None = None,
        ensured_on_disk: bool = False,
        flushed: bool = False,
        migrated_from: int | None = None,
        issues: Sequence[LineIssue] = (),
        read_only: bool = False,
        dialect: Dialect | None = None,
        layout_locked: bool = True,
        title_slot: TitleSlot | None = None,
        runtime: Runtime | None = None,
    ) -> None:
        self._runtime = runtime if runtime is not None else Runtime()
        self._cwd = cwd
        self._session_dir = session_dir
        self._storage = storage
        self._read_only = read_only
        self._issues = list(issues)
        self._read_offset = 0
        self._dialect = dialect if dialect is not None else auto_dialect(title_slot is not None)
        #: Auto mode: never add or remove the title slot of an existing file.
        self._layout_locked = layout_locked
        self._sealed = False
        self._hold_writes = False
        self._title_revision = 0
        self._init_artifacts()
        self._reset_state(header, entries, title_slot, index=index)
        self._ensured = ensured_on_disk
        self._flushed = flushed
        self._migrated_from = migrated_from
        #: omp 18: the first write after a load with malformed lines rewrites the file (§5.4).
        self._rewrite_pending = self._dialect.rewrite_after_malformed and any(
            issue.skipped and issue.reason != BLANK for issue in issues
        )

    def _reset_state(
        self,
        header: Entry,
        entries: Sequence[Entry],
        title_slot: TitleSlot | None = None,
        *,
        index: EntryIndex | None = None,
    ) -> None:
        """Start over with ``header`` and ``entries``; ``index``: the index over them when the
        open path built one (the lazy index of an indexed file), else a ``SessionIndex`` is built."""
        self._header = header
        title = header.get("title")
        self._session_name: str | None = title if isinstance(title, str) else None
        source = header.get("titleSource")
        self._title_source: str | None = source if source in ("auto", "user") else None
        timestamp = header.get("timestamp")
        self._title_updated_at = title_slot.updated_at if title_slot else str(timestamp or "")
        self._has_slot = title_slot is not None
        directories = header.get("additionalDirectories")
        self._additional_directories: list[str] = list(directories) if isinstance(directories, list) else []
        self._rewrite_pending = False
        if index is None:
            with gc_paused():  # right after a load: the collector would walk every new entry
                index = SessionIndex(entries)
        self._index: EntryIndex = index  # lazy for a file opened through its offset index
        self._leaf: str | None = index.last_id()
        self._usage = index.usage()
        self._has_assistant = index.has_assistant()
        self._migrated_from = None

    @property
    def dialect(self) -> Dialect:
        """The omp version whose rules this session follows (see :mod:`omp_session.dialects`)."""
        return self._dialect

    # ------------------------------------------------------------------ factories

    @classmethod
    def create(
        cls,
        cwd: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        durability: DurabilityPolicy = "os",
        dialect: DialectChoice = None,
        runtime: Runtime | None = None,
    ) -> SessionManager:
        """A new persistent session; its file is first written with the first assistant message.

        Writes now: the session directory (created if missing; without ``session_dir``, omp's
        project directory for ``cwd``, a legacy one moved into place) and, unless the runtime turns
        breadcrumbs off, this terminal's breadcrumb ``<agent dir>/terminal-sessions/<terminal>``
        (§7.8) when the terminal has an id.
        """
        runtime = runtime if runtime is not None else Runtime()
        directory = _session_dir_for(cwd, session_dir)
        directory.mkdir(parents=True, exist_ok=True)
        chosen, locked = dialect_for_new(dialect, directory)
        header, path = new_header_and_path(runtime, os.fspath(cwd), directory, dialect=chosen)
        storage = FileStorage(path, runtime.blob_store(), policy=durability)
        runtime.remember_terminal_session(os.fspath(cwd), os.fspath(path))
        manager = cls(
            cwd=os.fspath(cwd),
            session_dir=os.fspath(directory),
            storage=storage,
            header=header,
            dialect=chosen,
            layout_locked=locked,
            runtime=runtime,
        )
        manager._has_slot = locked and chosen.title_slot  # auto: the store already has slot files
        return manager

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        read_only: bool = False,
        durability: DurabilityPolicy = "os",
        dialect: DialectChoice = None,
        throw_if_missing: bool = False,
        runtime: Runtime | None = None,
        blobs: BlobSink | None = None,
    ) -> SessionManager:
        """Open a session file. A missing or blank file starts a new session at that path (its header
        is written at once, as omp does); a file with a bad header raises ``CorruptSessionError`` and
        is never modified.

        Writable (the default): takes the writer lock and writes this terminal's breadcrumb
        ``<agent dir>/terminal-sessions/<terminal>`` (§7.8; unless the runtime turns breadcrumbs
        off); a v1/v2 file is rewritten, with a ``.v<N>.bak`` backup, on the first write.
        ``read_only=True`` takes no lock and never writes the session file, its directory, its
        artifacts, the blob store or a breadcrumb; a missing file raises ``SessionNotFoundError``
        and a blank one ``CorruptSessionError``.

        Either way, unless the runtime turns it off, a file of 256 KiB or more may get its
        offset-index cache written or extended, ``<agent dir>/cache/offsets/<hash>.idx`` (or
        deleted when it no longer matches the file): a cache apart from the session, see
        docs/performance.md. ``blobs`` is the blob store image references are resolved from
        (default: the runtime's; :class:`~omp_session.store.blobs.UnresolvedBlobs` keeps the
        references as written, which is what the viewer and the read-only tools use).
        """
        runtime = runtime if runtime is not None else Runtime()
        file_path = absolute(path)
        directory = os.fspath(session_dir) if session_dir is not None else os.fspath(file_path.parent)
        if throw_if_missing and not file_path.exists():
            raise SessionNotFoundError(file_path)

        def open_it() -> OpenedFile:
            return open_file(
                file_path,
                blobs if blobs is not None else runtime.blob_store(),
                read_only=read_only,
                durability=durability,
                use_index=runtime.offset_index,
            )

        opened = open_it()
        if opened.loaded is None:
            if throw_if_missing:
                opened.storage.close()
                raise SessionNotFoundError(file_path)
            chosen, locked = dialect_for_new(dialect, file_path.parent)
            try:
                return cls._start_at(file_path, directory, opened.storage, chosen, locked, runtime)
            except SessionChangedError:
                opened.storage.close()
                if not file_path.exists():
                    raise
            # Another process created the file between our look and our creation (issue 11 item 2):
            # open theirs instead, which takes the lock or names the process that holds it.
            opened = open_it()
            if opened.loaded is None:  # left blank by them: ours to start, under the lock now
                return cls._start_at(file_path, directory, opened.storage, chosen, locked, runtime)
        loaded = opened.loaded
        header = loaded.header
        try:
            chosen, locked = dialect_for_file(dialect, loaded.title_slot is not None)
            cwd = _working_directory(header, chosen)
            manager = cls(
                cwd=cwd,
                session_dir=directory,
                storage=opened.storage,
                header=header,
                entries=loaded.entries,
                index=loaded.entry_index(),
                ensured_on_disk=True,
                flushed=True,
                issues=loaded.issues,
                read_only=read_only,
                dialect=chosen,
                layout_locked=locked,
                title_slot=loaded.title_slot,
                runtime=runtime,
            )
            manager._migrated_from = loaded.migrated_from
            manager._read_offset = opened.read_offset
            if not read_only:  # a reader is not "using" the session in this terminal
                runtime.remember_terminal_session(cwd, os.fspath(file_path))
        except BaseException:
            opened.storage.close()  # never keep the lock of an open that failed (issue 11 item 7)
            raise
        return manager

    @classmethod
    def _start_at(
        cls,
        path: Path,
        directory: str,
        storage: Storage,
        dialect: Dialect,
        layout_locked: bool,
        runtime: Runtime,
    ) -> SessionManager:
        # Nothing to lose: a missing, empty, whitespace-only or slot-only file gets a fresh header
        # at once.
        cwd = os.getcwd()
        header = make.ordered(
            dialect.headers.new,
            type="session",
            version=CURRENT_VERSION,
            id=runtime.session_id(dialect.new_session_id),
            timestamp=runtime.now(),
            cwd=cwd,
        )
        manager = cls(
            cwd=cwd,
            session_dir=directory,
            storage=storage,
            header=header,
            ensured_on_disk=True,
            runtime=runtime,
            dialect=dialect,
            layout_locked=layout_locked,
        )
        manager._has_slot = layout_locked and dialect.title_slot
        manager._rewrite_all()
        return manager

    @classmethod
    def continue_recent(
        cls,
        cwd: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        durability: DurabilityPolicy = "os",
        dialect: DialectChoice = None,
        runtime: Runtime | None = None,
    ) -> SessionManager:
        """Open this terminal's last session of ``cwd`` (its breadcrumb, §7.8), else the newest valid
        session by mtime, else create a new one. Writes what a writable :meth:`open` or :meth:`create`
        writes (the project's session directory is created if missing)."""
        runtime = runtime if runtime is not None else Runtime()
        directory = _session_dir_for(cwd, session_dir)
        recent = runtime.terminal_session(os.fspath(cwd), directory)
        recent = recent or listing.find_most_recent_session(directory)
        if recent is not None:
            return cls.open(recent, directory, durability=durability, dialect=dialect, runtime=runtime)
        return cls.create(cwd, directory, durability=durability, dialect=dialect, runtime=runtime)

    @classmethod
    def create_empty_session_file(
        cls,
        cwd: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        dialect: DialectChoice = None,
        runtime: Runtime | None = None,
    ) -> str:
        """Write a new session file holding only its header (behind an untitled title slot when
        the session is written as omp 18's) and return its path (omp 18 ``createEmptySessionFile``;
        the header's cwd is resolved)."""
        manager = cls.create(os.path.abspath(cwd), session_dir, dialect=dialect, runtime=runtime)
        try:
            manager.ensure_on_disk()
            return str(manager.get_session_file())
        finally:
            manager.close()

    @staticmethod
    def peek_session_init(path: str | os.PathLike[str]) -> dict[str, Any]:
        """``{cwd, init}`` of a session file without opening it for writing: the header's cwd and
        the **last** ``session_init`` entry in file order (omp 18 ``peekSessionInit``)."""
        return peek_session_init(path)

    @classmethod
    def in_memory(
        cls,
        cwd: str | os.PathLike[str] | None = None,
        *,
        dialect: DialectChoice = None,
        runtime: Runtime | None = None,
    ) -> SessionManager:
        """A session whose entries never touch the disk: no session file, no breadcrumb, artifacts in a
        dict and the images of appended messages in an in-memory blob store.

        The one exception is :meth:`put_blob`, which writes to the runtime's agent directory
        (``<agent dir>/blobs/``) for any session, this one included.
        """
        runtime = runtime if runtime is not None else Runtime()
        cwd_text = os.fspath(cwd) if cwd is not None else os.getcwd()
        chosen, locked = dialect_for_new(dialect, None)
        header = make.ordered(
            chosen.headers.new,
            type="session",
            version=CURRENT_VERSION,
            id=runtime.session_id(chosen.new_session_id),
            timestamp=runtime.now(),
            cwd=cwd_text,
        )
        return cls(
            cwd=cwd_text,
            session_dir="",
            storage=MemoryStorage(),
            header=header,
            dialect=chosen,
            layout_locked=locked,
            runtime=runtime,
        )

    @classmethod
    def fork_from(
        cls,
        source_path: str | os.PathLike[str],
        cwd: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        dialect: DialectChoice = None,
        reset_inherited_cost: bool = False,
        repair_interrupted_tail: bool = False,
        runtime: Runtime | None = None,
    ) -> SessionManager:
        """A new session holding a copy of every entry of ``source_path`` (written at once).

        Writes the new file and creates its directory; the source is only read.

        Unlike omp (§9 #19) a missing or corrupt source raises instead of yielding an empty session.
        omp 18 options: ``reset_inherited_cost`` zeroes the cost of every copied usage (tokens
        kept); ``repair_interrupted_tail`` closes tool calls left without a result.
        """
        runtime = runtime if runtime is not None else Runtime()
        source = Path(source_path)
        if not source.exists():
            raise SessionNotFoundError(source)
        blobs = runtime.blob_store()
        loaded = parse_session(source, read_session_bytes(source), blobs)
        directory = _session_dir_for(cwd, session_dir)
        directory.mkdir(parents=True, exist_ok=True)
        chosen, locked = dialect_for_new(dialect, directory)
        timestamp = runtime.now()
        session_id = runtime.session_id(chosen.new_session_id)
        header = make.fork_from_header(
            chosen.headers.fork_from, session_id, timestamp, os.fspath(cwd), loaded.header
        )
        entries = fork_entries(loaded.entries, reset_inherited_cost, repair_interrupted_tail, runtime)
        storage = FileStorage(session_file_path(directory, timestamp, session_id), blobs)
        manager = cls(
            cwd=os.fspath(cwd),
            session_dir=os.fspath(directory),
            storage=storage,
            header=header,
            entries=entries,
            ensured_on_disk=True,
            dialect=chosen,
            layout_locked=locked,
            runtime=runtime,
        )
        manager._has_slot = locked and chosen.title_slot
        manager._rewrite_all()
        return manager

    @classmethod
    def list(
        cls,
        cwd: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        dialect: DialectChoice = None,
    ) -> InfoList:
        """Sessions of ``cwd`` (or of ``session_dir``), newest first.

        Writes: without ``session_dir`` omp's project directory for ``cwd`` is created if missing
        (and a legacy one moved into place), as omp does; the listing cache is updated as
        :func:`~omp_session.tools.listing.list_sessions` says.
        """
        directory = _session_dir_for(cwd, session_dir)
        return listing.list_sessions(directory, dialect=explicit_dialect(dialect))

    @classmethod
    def list_all(cls, *, dialect: DialectChoice = None) -> InfoList:
        """Sessions of every project under the sessions root, newest first (updates the listing cache
        as :func:`~omp_session.tools.listing.list_sessions` says)."""
        return listing.list_all_sessions(dialect=explicit_dialect(dialect))

    # ------------------------------------------------------------------ persistence

    def _persist(self, entry: Entry) -> None:
        """Write ``entry`` (not yet in memory) or decide to hold it; raises before memory changes."""
        if self._read_only:
            raise ReadOnlySessionError(self.get_session_file())
        if self._hold_writes:
            return  # inside append_entries_atomically: written by its one rewrite
        if not (self._ensured or self._has_assistant or is_assistant_entry(entry)):
            self._flushed = False  # held in memory until an assistant message exists (§7.2)
            return
        if self._migrated_from is not None or not self._flushed or self._rewrite_pending:
            self._rewrite_all(extra=entry)
            return
        self._storage.append(self._disk_line(entry))

    def _disk_line(self, entry: Entry) -> bytes:
        """The line written for ``entry`` (the dialect's persistence transform)."""
        return prepare_for_disk(entry, self._storage.blobs, self._dialect.persist)

    def _lines(self, extra: Entry | None) -> Iterator[bytes]:
        if self._writes_slot():
            yield self._slot_line()
        yield self._disk_line(self._header)
        for entry in self._index.entries:
            yield self._disk_line(entry)
        if extra is not None:
            yield self._disk_line(extra)

    def _rewrite_all(self, extra: Entry | None = None) -> None:
        """Atomically replace the file with header + every entry (+ ``extra``)."""
        if self._read_only:
            raise ReadOnlySessionError(self.get_session_file())
        backup = f".v{self._migrated_from}.bak" if self._migrated_from is not None else None
        if backup is None and self._rewrite_pending:
            backup = ".malformed.bak"  # omp 18 drops malformed lines; we keep the old file beside
        with_slot = self._writes_slot()
        self._storage.rewrite(self._lines(extra), backup_suffix=backup)
        self._has_slot = with_slot
        self._flushed = True
        self._migrated_from = None
        self._rewrite_pending = False

    def _append(self, entry: Entry) -> str:
        if self._sealed:
            return str(entry["id"])  # omp 18: appends after seal() are dropped
        self._persist(entry)
        self._index.add(entry)
        self._leaf = entry["id"]
        self._usage.add_entry(entry)
        self._has_assistant = self._has_assistant or is_assistant_entry(entry)
        return str(entry["id"])

    def _base(self) -> tuple[str, str | None, str]:
        return self._runtime.new_entry_id(self._index.by_id), self._leaf, self._runtime.now()

    def _blobs_dir(self) -> Path:
        return self._runtime.blobs_dir()

    # ------------------------------------------------------------------ whole-session operations

    def flush(self) -> None:
        """Make every written entry durable (fsync)."""
        self._storage.flush()

    def close(self) -> None:
        """Flush and release the file and its lock. The manager must not be used afterwards."""
        self._storage.close()

    def __enter__(self) -> SessionManager:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        where = self.get_session_file() or "in memory"
        return f"<SessionManager {self.get_session_id()} {where} leaf={self._leaf}>"


__all__ = ["ForkResult", "SessionManager", "is_session_header"]
