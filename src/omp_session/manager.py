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
from typing import Any, NamedTuple

from . import entry_factory as make
from . import listing
from .blobs import BlobSink, FileBlobStore
from .codec import LineIssue, decode_lines
from .context import SessionContext
from .errors import (
    CorruptSessionError,
    EntryNotFoundError,
    ReadOnlySessionError,
    SessionError,
    SessionNotFoundError,
)
from .fast_open import (
    IndexedOpen,
    context_at,
    has_assistant,
    index_for,
    open_indexed,
    remember_index,
    usage_of,
)
from .ids import new_entry_id, new_session_id, now_iso
from .loading import is_blank, is_session_header, parse_session, read_session_bytes
from .paths import blobs_dir, default_session_dir, session_file_path
from .storage import DurabilityPolicy, Storage
from .storage.file import FileStorage
from .storage.memory import MemoryStorage
from .transform import prepare_for_disk
from .tree import SessionTreeNode
from .usage import UsageStatistics

Entry = dict[str, Any]
# Aliases: inside the class body ``list`` names the ``SessionManager.list`` factory.
EntryList = list[Entry]
InfoList = list[listing.SessionInfo]
NodeList = list[SessionTreeNode]
IssueList = list[LineIssue]
Content = str | list[dict[str, Any]]


class ForkResult(NamedTuple):
    old_session_file: str | None
    new_session_file: str


def _is_assistant(entry: Entry) -> bool:
    message = entry.get("message")
    return entry.get("type") == "message" and isinstance(message, dict) and message.get("role") == "assistant"


def _default_blobs() -> BlobSink:
    return FileBlobStore(blobs_dir())


class SessionManager:
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
    ) -> SessionManager:
        """A new persistent session; its file is first written with the first assistant message."""
        directory = Path(session_dir) if session_dir is not None else default_session_dir(cwd)
        directory.mkdir(parents=True, exist_ok=True)
        header, path = cls._new_header_and_path(os.fspath(cwd), directory)
        storage = FileStorage(path, _default_blobs(), policy=durability)
        return cls(cwd=os.fspath(cwd), session_dir=os.fspath(directory), storage=storage, header=header)

    @staticmethod
    def _new_header_and_path(cwd: str, directory: Path, parent: str | None = None) -> tuple[Entry, Path]:
        session_id = new_session_id()
        timestamp = now_iso()
        header = make.header(session_id, timestamp, cwd, parent)
        return header, session_file_path(directory, timestamp, session_id)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        read_only: bool = False,
        durability: DurabilityPolicy = "os",
    ) -> SessionManager:
        """Open a session file. A missing or blank file starts a new session at that path (its header
        is written at once, as omp does); a file with a bad header raises ``CorruptSessionError`` and
        is never modified. ``read_only=True`` never writes and takes no lock."""
        file_path = Path(os.path.abspath(path))
        directory = os.fspath(session_dir) if session_dir is not None else os.fspath(file_path.parent)
        if file_path.is_dir():
            raise CorruptSessionError(file_path, "is a directory, not a session file")
        storage = FileStorage(file_path, _default_blobs(), policy=durability, read_only=read_only)
        if not file_path.exists():
            if read_only:
                raise SessionNotFoundError(file_path)
            return cls._start_at(file_path, directory, storage)
        data = cls._lock_and_read(storage, file_path, read_only)
        if isinstance(data, IndexedOpen):
            loaded, read_offset = data
        else:
            if is_blank(data):
                if read_only:
                    raise CorruptSessionError(file_path, "empty session file")
                return cls._start_at(file_path, directory, storage)
            try:
                loaded = parse_session(file_path, data, storage.blobs)
            except BaseException:
                storage.close()
                raise
            read_offset = data.rfind(b"\n") + 1
        header = loaded.header
        cwd = header["cwd"] if isinstance(header.get("cwd"), str) else os.getcwd()
        manager = cls(
            cwd=cwd,
            session_dir=directory,
            storage=storage,
            header=header,
            entries=loaded.entries,
            ensured_on_disk=True,
            flushed=True,
            issues=loaded.issues,
            read_only=read_only,
        )
        manager._migrated_from = loaded.migrated_from
        manager._read_offset = read_offset
        if not isinstance(data, IndexedOpen):
            remember_index(file_path, data, loaded, manager.get_usage_statistics())
        return manager

    @staticmethod
    def _lock_and_read(storage: FileStorage, path: Path, read_only: bool) -> bytes | IndexedOpen:
        """Take the writer lock (unless read-only), then read: nobody can append in between.
        A large file with a valid offset index is opened through it instead (fast_open.py)."""
        try:
            if not read_only:
                storage.lock()
            return open_indexed(path, storage) or storage.read()
        except SessionError:
            storage.close()
            raise
        except OSError as exc:
            storage.close()
            raise CorruptSessionError(path, f"cannot be opened: {exc.strerror or exc}") from exc

    @classmethod
    def _start_at(cls, path: Path, directory: str, storage: FileStorage) -> SessionManager:
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
    ) -> SessionManager:
        """Open the newest valid session of ``cwd`` (by mtime), or create a new one."""
        directory = Path(session_dir) if session_dir is not None else default_session_dir(cwd)
        recent = listing.find_most_recent_session(directory)
        if recent is not None:
            return cls.open(recent, directory, durability=durability)
        return cls.create(cwd, directory, durability=durability)

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
    ) -> SessionManager:
        """A new session holding a copy of every entry of ``source_path`` (written at once).

        Unlike omp (§9 #19) a missing or corrupt source raises instead of yielding an empty session.
        """
        source = Path(source_path)
        if not source.exists():
            raise SessionNotFoundError(source)
        blobs = _default_blobs()
        loaded = parse_session(source, read_session_bytes(source), blobs)
        directory = Path(session_dir) if session_dir is not None else default_session_dir(cwd)
        directory.mkdir(parents=True, exist_ok=True)
        session_id, timestamp = new_session_id(), now_iso()
        header = make.fork_from_header(session_id, timestamp, os.fspath(cwd), loaded.header)
        storage = FileStorage(session_file_path(directory, timestamp, session_id), blobs)
        manager = cls(
            cwd=os.fspath(cwd),
            session_dir=os.fspath(directory),
            storage=storage,
            header=header,
            entries=loaded.entries,
            ensured_on_disk=True,
        )
        manager._rewrite_all()
        return manager

    @classmethod
    def list(cls, cwd: str | os.PathLike[str], session_dir: str | os.PathLike[str] | None = None) -> InfoList:
        """Sessions of ``cwd`` (or of ``session_dir``), newest first."""
        directory = Path(session_dir) if session_dir is not None else default_session_dir(cwd)
        return listing.list_sessions(directory)

    @classmethod
    def list_all(cls) -> InfoList:
        """Sessions of every project under the sessions root, newest first."""
        return listing.list_all_sessions()

    # ------------------------------------------------------------------ persistence

    def _persist(self, entry: Entry) -> None:
        """Write ``entry`` (not yet in memory) or decide to hold it; raises before memory changes."""
        if self._read_only:
            raise ReadOnlySessionError(self.get_session_file())
        if not (self._ensured or self._has_assistant or _is_assistant(entry)):
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
        self._has_assistant = self._has_assistant or _is_assistant(entry)
        return str(entry["id"])

    def _base(self) -> tuple[str, str | None, str]:
        return new_entry_id(self._index.by_id), self._leaf, now_iso()

    # ------------------------------------------------------------------ appends

    def append_message(self, message: dict[str, Any]) -> str:
        """Append a ``message`` entry (any role); returns the new entry id."""
        return self._append(make.message(*self._base(), message))

    def append_thinking_level_change(self, level: str | None = None) -> str:
        return self._append(make.typed(*self._base(), "thinking_level_change", thinkingLevel=level))

    def append_model_change(self, model: str, role: str | None = None) -> str:
        return self._append(make.typed(*self._base(), "model_change", model=model, role=make.OMIT_NONE(role)))

    def append_service_tier_change(self, tier: str | None) -> str:
        return self._append(make.typed(*self._base(), "service_tier_change", serviceTier=tier))

    def append_mode_change(self, mode: str, data: dict[str, Any] | None = None) -> str:
        return self._append(make.typed(*self._base(), "mode_change", mode=mode, data=make.OMIT_NONE(data)))

    def append_session_init(
        self, system_prompt: str, task: str, tools: Sequence[str], output_schema: Any = None
    ) -> str:
        return self._append(
            make.typed(
                *self._base(),
                "session_init",
                systemPrompt=system_prompt,
                task=task,
                tools=[*tools],
                outputSchema=make.OMIT_NONE(output_schema),
            )
        )

    def append_compaction(
        self,
        summary: str,
        short_summary: str | None,
        first_kept_entry_id: str | None,
        tokens_before: int,
        details: Any = None,
        from_extension: bool | None = None,
        preserve_data: dict[str, Any] | None = None,
    ) -> str:
        """Append a compaction (``first_kept_entry_id`` is not validated, as in omp)."""
        return self._append(
            make.typed(
                *self._base(),
                "compaction",
                summary=summary,
                shortSummary=make.OMIT_NONE(short_summary),
                firstKeptEntryId=make.OMIT_NONE(first_kept_entry_id),
                tokensBefore=tokens_before,
                details=make.OMIT_NONE(details),
                fromExtension=make.OMIT_NONE(from_extension),
                preserveData=make.OMIT_NONE(preserve_data),
            )
        )

    def append_custom_entry(self, custom_type: str, data: Any = None) -> str:
        return self._append(make.custom(*self._base(), custom_type, data))

    def append_custom_message_entry(
        self,
        custom_type: str,
        content: Content,
        display: bool,
        details: Any = None,
        attribution: str = "agent",
    ) -> str:
        return self._append(
            make.custom_message(*self._base(), custom_type, content, display, details, attribution)
        )

    def append_ttsr_injection(self, rule_names: Sequence[str]) -> str:
        return self._append(make.typed(*self._base(), "ttsr_injection", injectedRules=[*rule_names]))

    def append_mcp_tool_selection(self, tool_names: Sequence[str]) -> str:
        return self._append(make.typed(*self._base(), "mcp_tool_selection", selectedToolNames=[*tool_names]))

    def append_label_change(self, target_id: str, label: str | None = None) -> str:
        """Set (or with ``None``/``""`` clear) the label of any entry; the label entry moves the leaf."""
        if target_id not in self._index.by_id:
            raise EntryNotFoundError(target_id)
        return self._append(
            make.typed(*self._base(), "label", targetId=target_id, label=make.OMIT_NONE(label))
        )

    def branch_with_summary(
        self, entry_id: str | None, summary: str, details: Any = None, from_extension: bool | None = None
    ) -> str:
        """Move the leaf to ``entry_id`` (``None``: before the first entry) and append a branch summary."""
        if entry_id is not None and entry_id not in self._index.by_id:
            raise EntryNotFoundError(entry_id)
        entry = make.typed(
            new_entry_id(self._index.by_id),
            entry_id,
            now_iso(),
            "branch_summary",
            fromId=entry_id if entry_id is not None else "root",
            summary=summary,
            details=make.OMIT_NONE(details),
            fromExtension=make.OMIT_NONE(from_extension),
        )
        self._leaf = entry_id
        return self._append(entry)

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

    def _switch_storage(self, path: Path | None) -> None:
        blobs = self._storage.blobs
        self._storage.close()
        if path is not None and isinstance(self._storage, FileStorage):
            self._storage = FileStorage(path, blobs, policy=self._storage.policy)
        else:
            self._storage = MemoryStorage(blobs)

    def create_branched_session(self, leaf_id: str) -> str | None:
        """Replace this session by a new one holding only the path to ``leaf_id`` (+ its labels).

        Label entries on the path are dropped and the path stays connected (each entry's parent is
        its nearest kept ancestor; omp leaves an orphan). Returns the new file (``None`` in memory).
        """
        path = self._index.branch(leaf_id)
        if not path:
            raise EntryNotFoundError(leaf_id)
        kept = make.reparent_without_labels(path)
        used = {str(entry.get("id")) for entry in kept}
        previous = kept[-1].get("id") if kept else None
        on_path = {entry.get("id") for entry in kept}
        for target, label in self._index.labels.items():
            if target in on_path:
                label_id = new_entry_id(used)
                used.add(label_id)
                kept.append(make.typed(label_id, previous, now_iso(), "label", targetId=target, label=label))
                previous = label_id
        old_file = self.get_session_file()
        persistent = isinstance(self._storage, FileStorage)
        directory = Path(self._session_dir) if persistent else Path(".")
        header, new_path = self._new_header_and_path(self._cwd, directory, old_file if persistent else None)
        name = self._session_name
        self._switch_storage(new_path if persistent else None)
        self._reset_state(header, kept)
        self._session_name = name  # omp keeps the name in memory although the header has no title
        self._rewrite_all()
        return os.fspath(new_path) if persistent else None

    def fork(self) -> ForkResult | None:
        """Copy this session (every branch, same ids) into a new file; ``None`` in memory."""
        if not isinstance(self._storage, FileStorage):
            return None
        old_file = self.get_session_file()
        title = self._header.get("title", self._session_name)
        session_id, timestamp = new_session_id(), now_iso()
        header = make.fork_header(session_id, title, timestamp, self._cwd, self.get_session_id())
        new_path = session_file_path(self._session_dir, timestamp, session_id)
        self._switch_storage(new_path)
        self._header = header
        self._migrated_from = None
        self._rewrite_all()
        return ForkResult(old_file, os.fspath(new_path))

    def new_session(self, parent_session: str | None = None) -> str | None:
        """Start a fresh, empty session (no file until the first assistant message)."""
        persistent = isinstance(self._storage, FileStorage)
        directory = Path(self._session_dir) if persistent else Path(".")
        header, new_path = self._new_header_and_path(self._cwd, directory, parent_session)
        self._switch_storage(new_path if persistent else None)
        self._reset_state(header, [])
        self._ensured = False
        self._flushed = False
        return os.fspath(new_path) if persistent else None

    def set_session_name(self, name: str) -> None:
        """Set the title in the header; rewrites the file at once if it exists."""
        self._session_name = name
        self._header["title"] = name
        if self._storage.exists():
            self._rewrite_all()

    def ensure_on_disk(self) -> None:
        """Write the session now and persist every later entry immediately."""
        if not self._flushed or self._migrated_from is not None or not self._storage.exists():
            self._rewrite_all()
        self._ensured = True

    def refresh(self) -> EntryList:
        """Read entries appended to the file since it was loaded (for read-only followers).

        Only complete lines are read; returns the new entries, which also move the leaf.
        """
        if not isinstance(self._storage, FileStorage) or not self._storage.exists():
            return []
        data = self._storage.read_from(self._read_offset)
        complete = data[: data.rfind(b"\n") + 1]
        if not complete:
            return []
        self._read_offset += len(complete)
        added = decode_lines(complete).records
        for entry in added:
            self._index.add(entry)
            self._usage.add_entry(entry)
            self._has_assistant = self._has_assistant or _is_assistant(entry)
            if isinstance(entry.get("id"), str):
                self._leaf = entry["id"]
        return added

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
        return f"<SessionManager {self.get_session_id()} {where} entries={len(self._index.entries)}>"


__all__ = ["ForkResult", "SessionManager", "is_session_header"]
