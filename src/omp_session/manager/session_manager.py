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

from omp_session.errors import (
    EntryNotFoundError,
    ReadOnlySessionError,
)
from omp_session.format import entry_factory as make
from omp_session.format.codec import LineIssue, decode_lines
from omp_session.format.entries import is_assistant_entry
from omp_session.format.ids import new_entry_id, new_session_id, now_iso
from omp_session.format.transform import prepare_for_disk
from omp_session.manager.appends import AppendMethods
from omp_session.manager.whole_session import ForkResult, WholeSessionMethods
from omp_session.model.context import SessionContext
from omp_session.model.tree import SessionTreeNode
from omp_session.model.usage import UsageStatistics
from omp_session.store import DurabilityPolicy, SessionStorage, Storage
from omp_session.store.artifacts import ArtifactMethods
from omp_session.store.blobs import BlobSink, FileBlobStore
from omp_session.store.breadcrumbs import read_breadcrumb, write_breadcrumb
from omp_session.store.configured import session_storage
from omp_session.store.fast_open import (
    context_at,
    has_assistant,
    index_for,
    remember_index,
    usage_of,
)
from omp_session.store.loading import is_session_header, parse_session
from omp_session.store.memory import MemoryStorage
from omp_session.store.opening import absolute
from omp_session.store.paths import blobs_dir, default_session_dir, session_file_path
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


def _default_blobs() -> BlobSink:
    return FileBlobStore(blobs_dir())


def _store(storage: SessionStorage | None) -> SessionStorage:
    """The store a factory works on: the one given, else the process's (files by default)."""
    return session_storage(storage)


class SessionManager(AppendMethods, WholeSessionMethods, ArtifactMethods):
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
        ensured_on_disk: bool = False,
        flushed: bool = False,
        migrated_from: int | None = None,
        issues: Sequence[LineIssue] = (),
        read_only: bool = False,
    ) -> None:
        self._cwd = cwd
        self._session_dir = session_dir
        self._storage = storage
        self._read_only = read_only
        self._issues = list(issues)
        self._read_offset = 0
        self._init_artifacts()
        self._reset_state(header, entries)
        self._ensured = ensured_on_disk
        self._flushed = flushed
        self._migrated_from = migrated_from

    def _reset_state(self, header: Entry, entries: Sequence[Entry]) -> None:
        self._header = header
        title = header.get("title")
        self._session_name: str | None = title if isinstance(title, str) else None
        self._index = index_for(entries)  # lazy for a file opened through its offset index
        self._leaf: str | None = None
        if entries:
            last_id = entries[-1].get("id")
            self._leaf = last_id if isinstance(last_id, str) else None
        self._usage = usage_of(entries)
        self._has_assistant = has_assistant(entries)
        self._migrated_from = None

    # ------------------------------------------------------------------ factories

    @classmethod
    def create(
        cls,
        cwd: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        durability: DurabilityPolicy = "os",
        storage: SessionStorage | None = None,
    ) -> SessionManager:
        """A new persistent session; its file is first written with the first assistant message.

        ``storage`` is where sessions live (default: files; or a ``PostgresStorage``)."""
        directory = _session_dir_for(cwd, session_dir)
        header, path = cls._new_header_and_path(os.fspath(cwd), directory)
        session = _store(storage).new_storage(path, _default_blobs(), durability=durability)
        write_breadcrumb(os.fspath(cwd), os.fspath(path))
        return cls(cwd=os.fspath(cwd), session_dir=os.fspath(directory), storage=session, header=header)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        read_only: bool = False,
        durability: DurabilityPolicy = "os",
        storage: SessionStorage | None = None,
    ) -> SessionManager:
        """Open a session file. A missing or blank file starts a new session at that path (its header
        is written at once, as omp does); a file with a bad header raises ``CorruptSessionError`` and
        is never modified. ``read_only=True`` never writes and takes no lock."""
        file_path = absolute(path)
        directory = os.fspath(session_dir) if session_dir is not None else os.fspath(file_path.parent)
        opened = _store(storage).open_session(
            file_path, _default_blobs(), read_only=read_only, durability=durability
        )
        loaded = opened.loaded
        if loaded is None:
            return cls._start_at(file_path, directory, opened.storage)
        header = loaded.header
        cwd = header["cwd"] if isinstance(header.get("cwd"), str) else os.getcwd()
        manager = cls(
            cwd=cwd,
            session_dir=directory,
            storage=opened.storage,
            header=header,
            entries=loaded.entries,
            ensured_on_disk=True,
            flushed=True,
            issues=loaded.issues,
            read_only=read_only,
        )
        manager._migrated_from = loaded.migrated_from
        manager._read_offset = opened.read_offset
        if not read_only:  # a reader is not "using" the session in this terminal
            write_breadcrumb(cwd, os.fspath(file_path))
        if opened.data is not None:
            remember_index(file_path, opened.data, loaded, manager.get_usage_statistics())
        return manager

    @classmethod
    def _start_at(cls, path: Path, directory: str, storage: Storage) -> SessionManager:
        # Nothing to lose: a missing, empty or whitespace-only file gets a fresh header at once.
        cwd = os.getcwd()
        header = make.header(new_session_id(), now_iso(), cwd)
        manager = cls(cwd=cwd, session_dir=directory, storage=storage, header=header, ensured_on_disk=True)
        manager._rewrite_all()
        return manager

    @classmethod
    def continue_recent(
        cls,
        cwd: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        durability: DurabilityPolicy = "os",
        storage: SessionStorage | None = None,
    ) -> SessionManager:
        """Open this terminal's last session of ``cwd`` (its breadcrumb, §7.8), else the newest valid
        session by mtime, else create a new one."""
        directory = _session_dir_for(cwd, session_dir)
        store = _store(storage)
        recent = read_breadcrumb(
            os.fspath(cwd), directory, exists=store.session_exists
        ) or listing.find_most_recent_session(directory, storage=storage)
        if recent is not None:
            return cls.open(recent, directory, durability=durability, storage=storage)
        return cls.create(cwd, directory, durability=durability, storage=storage)

    @classmethod
    def in_memory(cls, cwd: str | os.PathLike[str] | None = None) -> SessionManager:
        """A session that never touches the disk (not even blobs)."""
        cwd_text = os.fspath(cwd) if cwd is not None else os.getcwd()
        header = make.header(new_session_id(), now_iso(), cwd_text)
        return cls(cwd=cwd_text, session_dir="", storage=MemoryStorage(), header=header)

    @classmethod
    def fork_from(
        cls,
        source_path: str | os.PathLike[str],
        cwd: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        storage: SessionStorage | None = None,
    ) -> SessionManager:
        """A new session holding a copy of every entry of ``source_path`` (written at once), both in
        ``storage`` (default: files).

        Unlike omp (§9 #19) a missing or corrupt source raises instead of yielding an empty session.
        """
        store = _store(storage)
        source = Path(source_path)
        blobs = _default_blobs()
        loaded = parse_session(source, store.read_session(source), blobs)
        directory = _session_dir_for(cwd, session_dir)
        session_id, timestamp = new_session_id(), now_iso()
        header = make.fork_from_header(session_id, timestamp, os.fspath(cwd), loaded.header)
        path = session_file_path(directory, timestamp, session_id)
        manager = cls(
            cwd=os.fspath(cwd),
            session_dir=os.fspath(directory),
            storage=store.new_storage(path, blobs, durability="os"),
            header=header,
            entries=loaded.entries,
            ensured_on_disk=True,
        )
        manager._rewrite_all()
        return manager

    @classmethod
    def list(
        cls,
        cwd: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        storage: SessionStorage | None = None,
    ) -> InfoList:
        """Sessions of ``cwd`` (or of ``session_dir``) in ``storage`` (default: files), newest first."""
        directory = _session_dir_for(cwd, session_dir)
        return listing.list_sessions(directory, storage=storage)

    @classmethod
    def list_all(cls, *, storage: SessionStorage | None = None) -> InfoList:
        """Sessions of every project under the sessions root, newest first."""
        return listing.list_all_sessions(storage=storage)

    # ------------------------------------------------------------------ persistence

    def _persist(self, entry: Entry) -> None:
        """Write ``entry`` (not yet in memory) or decide to hold it; raises before memory changes."""
        if self._read_only:
            raise ReadOnlySessionError(self.get_session_file())
        if not (self._ensured or self._has_assistant or is_assistant_entry(entry)):
            self._flushed = False  # held in memory until an assistant message exists (§7.2)
            return
        if self._migrated_from is not None or not self._flushed:
            self._rewrite_all(extra=entry)
            return
        self._storage.append(prepare_for_disk(entry, self._storage.blobs))

    def _lines(self, extra: Entry | None) -> Iterator[bytes]:
        blobs = self._storage.blobs
        yield prepare_for_disk(self._header, blobs)
        for entry in self._index.entries:
            yield prepare_for_disk(entry, blobs)
        if extra is not None:
            yield prepare_for_disk(extra, blobs)

    def _rewrite_all(self, extra: Entry | None = None) -> None:
        """Atomically replace the file with header + every entry (+ ``extra``)."""
        if self._read_only:
            raise ReadOnlySessionError(self.get_session_file())
        backup = f".v{self._migrated_from}.bak" if self._migrated_from is not None else None
        self._storage.rewrite(self._lines(extra), backup_suffix=backup)
        self._flushed = True
        self._migrated_from = None

    def _append(self, entry: Entry) -> str:
        self._persist(entry)
        self._index.add(entry)
        self._leaf = entry["id"]
        self._usage.add_entry(entry)
        self._has_assistant = self._has_assistant or is_assistant_entry(entry)
        return str(entry["id"])

    def _base(self) -> tuple[str, str | None, str]:
        return new_entry_id(self._index.by_id), self._leaf, now_iso()

    # ------------------------------------------------------------------ reads and navigation

    def get_leaf_id(self) -> str | None:
        return self._leaf

    def get_leaf_entry(self) -> Entry | None:
        return self._index.get(self._leaf)

    def get_entry(self, entry_id: str) -> Entry | None:
        return self._index.get(entry_id)

    def get_entries(self) -> EntryList:
        """Every entry in file order (a new list; the entries themselves are live)."""
        return [*self._index.entries]

    def get_header(self) -> Entry:
        return self._header

    def get_branch(self, from_id: str | None = None) -> EntryList:
        """Root→entry path for ``from_id`` (default: the leaf); ``[]`` if unknown."""
        return self._index.branch(from_id if from_id is not None else self._leaf)

    def get_tree(self) -> NodeList:
        return self._index.get_tree()

    def get_children(self, parent_id: str) -> EntryList:
        return self._index.children(parent_id)

    def get_label(self, entry_id: str) -> str | None:
        return self._index.labels.get(entry_id)

    def get_labels(self) -> dict[str, str]:
        """Every current label by target id (a copy)."""
        return dict(self._index.labels)

    def branch(self, entry_id: str) -> None:
        """Move the leaf to an existing entry (not persisted, as in omp)."""
        if entry_id not in self._index.by_id:
            raise EntryNotFoundError(entry_id)
        self._leaf = entry_id

    def reset_leaf(self) -> None:
        """Move the leaf before the first entry; the next append starts a new root."""
        self._leaf = None

    def build_session_context(self) -> SessionContext:
        """The LLM context at the current leaf (O(depth))."""
        if self._leaf is None:
            return SessionContext()
        return context_at(self._index, self._leaf)

    def get_injected_ttsr_rules(self) -> RuleList:
        """TTSR rule names injected along the current branch, first appearance first (§5)."""
        return self.build_session_context().injected_ttsr_rules if self._leaf is not None else []

    def get_last_model_change_role(self) -> str | None:
        """``role`` (default ``"default"``) of the nearest ``model_change`` above the leaf (§5)."""
        for entry in reversed(self.get_branch()):
            if entry.get("type") == "model_change":
                role = entry.get("role")
                return role if isinstance(role, str) else "default"
        return None

    def get_usage_statistics(self) -> UsageStatistics:
        """Totals over every branch (a copy, not a live object)."""
        return self._usage.copy()

    def get_session_id(self) -> str:
        return str(self._header.get("id"))

    def get_session_file(self) -> str | None:
        path = self._storage.path
        return os.fspath(path) if path is not None else None

    def get_session_dir(self) -> str:
        return self._session_dir

    def get_cwd(self) -> str:
        return self._cwd

    def get_session_name(self) -> str | None:
        return self._session_name

    def get_load_issues(self) -> IssueList:
        """Lines skipped or read leniently when the file was loaded."""
        return [*self._issues]

    def is_persisted(self) -> bool:
        return self._storage.path is not None

    # ------------------------------------------------------------------ whole-session operations

    def refresh(self) -> EntryList:
        """Read entries appended to the file since it was loaded (for read-only followers).

        Only complete lines are read; returns the new entries, which also move the leaf. If the
        writer replaced the file meanwhile (a full rewrite), it is read again in full.
        """
        if not self._persistent or not self._storage.exists():
            return []
        if self._read_only and self._storage.replaced_since_read():
            return self._reload()
        data = self._storage.read_from(self._read_offset)
        complete = data[: data.rfind(b"\n") + 1]
        if not complete:
            return []
        self._read_offset += len(complete)
        added = decode_lines(complete).records
        for entry in added:
            self._index.add(entry)
            self._usage.add_entry(entry)
            self._has_assistant = self._has_assistant or is_assistant_entry(entry)
            if isinstance(entry.get("id"), str):
                self._leaf = entry["id"]
        return added

    def _reload(self) -> EntryList:
        # The writer replaced the file (a migration, rename or repair): read it again in full and
        # report the entries this reader had not seen.
        data = self._storage.read()
        loaded = parse_session(Path(str(self.get_session_file())), data, self._storage.blobs)
        seen = set(self._index.by_id)
        self._reset_state(loaded.header, loaded.entries)
        self._read_offset = data.rfind(b"\n") + 1
        return [entry for entry in loaded.entries if entry.get("id") not in seen]

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
