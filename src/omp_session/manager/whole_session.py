"""Whole-session operations of :class:`~omp_session.manager.session_manager.SessionManager` (spec §6.5, §6.6):
branching into a new file, forking, starting afresh, naming, forcing the file onto disk.

Every operation that writes a new file writes it completely (atomically) *before* the manager
switches to it, so a failure leaves the session exactly as it was.

Internal module (part of :class:`~omp_session.SessionManager`, which is the API); not part of the public API.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from omp_session.dialects import Dialect
from omp_session.errors import EntryNotFoundError
from omp_session.format import entry_factory as make
from omp_session.format.entries import CURRENT_VERSION
from omp_session.manager.persistence import Persistence
from omp_session.manager.runtime import Runtime
from omp_session.manager.state import SessionState
from omp_session.manager.workspace import normalize_directories
from omp_session.store import Storage
from omp_session.store.moves import begin_move, finish_move, move_directory
from omp_session.store.paths import default_session_dir, session_file_path

__all__ = ["ForkResult", "WholeSession", "new_header_and_path"]

Entry = dict[str, Any]


class ForkResult(NamedTuple):
    old_session_file: str | None
    new_session_file: str


def new_header_and_path(
    runtime: Runtime,
    cwd: str,
    directory: Path,
    parent: str | None = None,
    *,
    dialect: Dialect,
    prompt_cache_key: str | None = None,
    directories: Sequence[str] = (),
) -> tuple[Entry, Path]:
    session_id = runtime.session_id(dialect.new_session_id)
    timestamp = runtime.now()
    header = make.ordered(
        dialect.headers.new,
        type="session",
        version=CURRENT_VERSION,
        id=session_id,
        timestamp=timestamp,
        cwd=cwd,
        parentSession=parent,
        providerPromptCacheKey=prompt_cache_key,
        additionalDirectories=list(directories) or None,
    )
    return header, session_file_path(directory, timestamp, session_id)


class WholeSession:
    """Operations that replace the whole session or its file, over the session's state and
    written through its persistence."""

    def __init__(self, state: SessionState, persistence: Persistence) -> None:
        self._state = state
        self._persistence = persistence

    def _adopt_title(self, header: Entry) -> None:
        """Title state of a new file from its header (fork, branch): the slot carries the same."""
        title, source = header.get("title"), header.get("titleSource")
        self._state.session_name = title if isinstance(title, str) else None
        self._state.title_source = source if isinstance(source, str) else None
        self._state.title_updated_at = str(header.get("timestamp") or "")

    def _written_copy(
        self, path: Path | None, header: Entry, entries: Sequence[Entry], *, same_entries: bool = False
    ) -> Storage:
        """New storage at ``path`` holding ``header`` + ``entries``, written atomically *before* the
        manager switches to it: if the write fails, this session is left exactly as it was.
        ``same_entries``: ``entries`` are this session's, so the storage may copy their unchanged
        lines from the old one's (``Storage.write_entries``); otherwise every line is encoded."""
        old = self._state.storage
        storage = old.sibling(path if self._state.persistent else None)
        head = self._persistence.head_lines(header)
        try:
            storage.write_entries(
                head, entries, self._persistence.disk_line, source=old if same_entries else None
            )
        except BaseException:
            storage.close()
            raise
        old.close()
        self._state.storage = storage
        return storage

    def create_branched_session(self, leaf_id: str, *, cwd: str | None = None) -> str | None:
        """Replace this session by a new one holding only the path to ``leaf_id`` (+ its labels).

        Label entries on the path are dropped and the path stays connected (each entry's parent is
        its nearest kept ancestor; omp leaves an orphan). Returns the new file (``None`` in memory).
        ``cwd``: the new header's cwd (default: this session's working directory, as omp does;
        ``omp-session fork`` passes the recorded one, which omp 18 replaces by the process cwd
        when that directory is gone).
        """
        self._state.require_writable()
        # omp's getBranch(leafId ?? leaf): a null leaf id branches from the current leaf
        start = leaf_id if leaf_id is not None else self._state.leaf
        path = self._state.index.branch(start) if self._state.knows(start) else []
        if not path:
            raise EntryNotFoundError(leaf_id)
        entries = make.branched_entries(
            path, self._state.index.labels, self._state.runtime.new_entry_id, self._state.runtime.now()
        )
        persistent = self._state.persistent
        directory = Path(self._state.session_dir) if persistent else Path(".")
        dialect = self._state.dialect
        header, new_path = new_header_and_path(
            self._state.runtime, cwd if cwd is not None else self._state.cwd, directory, dialect=dialect
        )
        name, source = self._state.session_name, self._state.title_source
        header = make.ordered(
            dialect.headers.branched,
            **header,
            title=name,
            titleSource=source,
            parentSession=self._state.session_file() if persistent else None,
            additionalDirectories=list(self._state.additional_directories) or None,
        )
        state = self._title_state_for_copy(header)
        self._written_copy(new_path if persistent else None, header, entries)
        self._persistence.reset(header, entries, keep_slot=True)
        # omp 13.19 keeps the name in memory although the header has no title; omp 18 writes it
        self._state.session_name, self._state.title_source, self._state.title_updated_at = state
        self._persistence.written_whole()
        return os.fspath(new_path) if persistent else None

    def _title_state_for_copy(self, header: Entry) -> tuple[str | None, str | None, str]:
        """Switch the title state to the new file's (its slot is written from it) and return it."""
        self._state.title_updated_at = str(header.get("timestamp") or "")
        return self._state.session_name, self._state.title_source, self._state.title_updated_at

    def fork(self) -> ForkResult | None:
        """Copy this session (every branch, same ids) into a new file; ``None`` in memory."""
        self._state.require_writable()
        if not self._state.persistent:
            return None
        old_file = self._state.session_file()
        old_header, parent_id = self._state.header, str(self._state.header.get("id"))
        title = old_header.get("title", self._state.session_name)
        source = old_header.get("titleSource", self._state.title_source)
        key = old_header.get("providerPromptCacheKey")
        dialect = self._state.dialect
        session_id = self._state.runtime.session_id(dialect.new_session_id)
        timestamp = self._state.runtime.now()
        header = make.ordered(
            dialect.headers.fork,
            type="session",
            version=CURRENT_VERSION,
            id=session_id,
            title=title,
            titleSource=source,
            timestamp=timestamp,
            cwd=self._state.cwd,
            additionalDirectories=list(self._state.additional_directories) or None,
            parentSession=parent_id,
            providerPromptCacheKey=key if isinstance(key, str) else parent_id,
        )
        new_path = session_file_path(self._state.session_dir, timestamp, session_id)
        before = (self._state.session_name, self._state.title_source, self._state.title_updated_at)
        self._adopt_title(header)
        try:
            self._written_copy(new_path, header, self._state.index.entries, same_entries=True)
        except BaseException:
            self._state.session_name, self._state.title_source, self._state.title_updated_at = before
            raise
        self._state.header = header
        self._persistence.written_whole()
        return ForkResult(old_file, os.fspath(new_path))

    def new_session(
        self,
        parent_session: str | None = None,
        *,
        provider_prompt_cache_key: str | None = None,
        additional_directories: Sequence[str] = (),
        session_dir: str | os.PathLike[str] | None = None,
    ) -> str | None:
        """Start a fresh, empty session. omp 13.19 writes its file with the first assistant
        message; omp 18 writes it (title slot and header) at once. ``session_dir`` (omp 18.3):
        this file and every later one of this manager (``new_session``, ``fork``) go into that
        directory (resolved against the process cwd; created with the first write), which
        :meth:`get_session_dir` then returns; ignored in memory."""
        self._state.require_writable()
        persistent = self._state.persistent
        if persistent and session_dir is not None:
            self._state.session_dir = os.path.abspath(session_dir)  # this and every later file
        directory = Path(self._state.session_dir) if persistent else Path(".")
        header, new_path = new_header_and_path(
            self._state.runtime,
            self._state.cwd,
            directory,
            parent_session,
            dialect=self._state.dialect,
            prompt_cache_key=provider_prompt_cache_key,
            directories=normalize_directories(self._state.cwd, additional_directories),
        )
        old = self._state.storage
        old.close()
        self._state.storage = old.sibling(new_path if persistent else None)
        self._persistence.started_afresh(header)
        if persistent:
            self._state.runtime.remember_terminal_session(self._state.cwd, os.fspath(new_path))
            if self._state.dialect.new_session_materializes:
                self._persistence.ensure_on_disk()
        return os.fspath(new_path) if persistent else None

    def move_to(
        self, new_cwd: str | os.PathLike[str], target_session_dir: str | os.PathLike[str] | None = None
    ) -> None:
        """Move the session to the project directory of ``new_cwd`` (omp's ``moveTo``, §6.6).

        The file and its artifact directory are renamed into the new session directory (the
        file rename is undone if the artifacts cannot follow), and the header's ``cwd`` becomes
        the resolved ``new_cwd``. A no-op when the resolved cwd does not change.
        """
        self._state.require_writable()
        resolved = os.path.abspath(new_cwd)
        if resolved == os.path.abspath(self._state.cwd) and target_session_dir is None:
            return
        storage = self._state.storage
        if self._state.persistent:
            root = Path(self._state.session_dir).parent  # stay under the same sessions root
            directory = (
                Path(os.path.abspath(target_session_dir))
                if target_session_dir is not None
                else default_session_dir(resolved, root)
            )
            old_path = os.fspath(str(storage.path))
            if directory != Path(old_path).parent:
                self._move_files(storage, directory)
                if self._state.dialect.records_previous_files:  # omp 18 remembers where the file was (§2.10)
                    previous = self._state.header.get("previousSessionFiles")
                    known = list(previous) if isinstance(previous, list) else []
                    if old_path not in known:
                        self._state.header["previousSessionFiles"] = [*known, old_path]
            self._state.session_dir = os.fspath(directory)
            self._state.runtime.remember_terminal_session(
                resolved, os.fspath(directory / Path(str(storage.path)).name)
            )
        self._state.cwd = resolved
        self._state.header["cwd"] = resolved
        if storage.exists():
            self._persistence.rewrite_all()

    @staticmethod
    def _move_files(storage: Storage, directory: Path) -> None:
        old_path = Path(str(storage.path))
        artifacts = old_path.with_suffix("")
        target = directory / old_path.name
        # A journal makes a move killed between the two renames recoverable: the next writable
        # open of the moved file brings its artifacts after it (issue 11 item 11).
        journal = begin_move(artifacts, target) if artifacts.is_dir() else None
        storage.move(target)
        if journal is not None:
            try:
                move_directory(artifacts, target.with_suffix(""))  # copied across filesystems
            except OSError:
                storage.move(old_path)  # keep file and artifacts together
                raise
            finally:
                finish_move(journal)

    def drop_session(self, path: str | os.PathLike[str]) -> None:
        """Delete the session file ``path`` and its artifact directory (omp 18 ``dropSession``); a
        missing file is not an error. When ``path`` is this session's file, its writer is closed
        first (later appends write the file anew). Under a dialect that asks for it (omp 18.2.9+)
        every ``<name>.jsonl.*.bak`` beside it goes too (docs/compatibility.md)."""
        target = Path(os.path.abspath(path))
        storage = self._state.storage
        if storage.path is not None and Path(os.path.abspath(storage.path)) == target:
            # omp drains and closes its writer; the next write starts the file anew
            storage.close()
            self._state.storage = storage.sibling(storage.path)
            self._persistence.lost_file()  # (a fresh storage: no stored lines to copy)
        self._state.runtime.sessions().delete_session(
            target, backups=self._state.dialect.drop_removes_backups
        )

    def rewrite_entries(self) -> None:
        """Rewrite the whole file from memory, after entries were changed in place (omp's
        ``rewriteEntries``, used when tool output is pruned). Atomic, as every rewrite."""
        self._state.require_writable()
        # The caller changed entries in place (omp's contract for ``rewriteEntries``): none of
        # the file's lines can be trusted to match memory, so every entry is encoded.
        self._state.storage.forget_lines()
        if self._state.storage.exists():
            self._persistence.rewrite_all()
