"""Whole-session operations of :class:`~omp_session.manager.session_manager.SessionManager` (spec §6.5, §6.6):
branching into a new file, forking, starting afresh, naming, forcing the file onto disk.

Every operation that writes a new file writes it completely (atomically) *before* the manager
switches to it, so a failure leaves the session exactly as it was.

Internal module (part of :class:`~omp_session.SessionManager`, which is the API); not part of the public API.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from omp_session.dialects import Dialect
from omp_session.errors import EntryNotFoundError, ReadOnlySessionError
from omp_session.format import entry_factory as make
from omp_session.format.entries import CURRENT_VERSION
from omp_session.format.transform import prepare_for_disk
from omp_session.manager.runtime import Runtime
from omp_session.manager.workspace import normalize_directories
from omp_session.model.tree import EntryIndex
from omp_session.store import Storage
from omp_session.store.moves import begin_move, finish_move
from omp_session.store.paths import default_session_dir, session_file_path

__all__ = ["ForkResult", "WholeSessionMethods"]

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


class WholeSessionMethods:
    """Mixin over the manager's state (declared here, owned by ``SessionManager``)."""

    _read_only: bool
    _runtime: Runtime
    _storage: Storage
    _index: EntryIndex
    _cwd: str
    _session_dir: str
    _session_name: str | None
    _header: Entry
    _migrated_from: int | None
    _flushed: bool
    _ensured: bool
    _dialect: Dialect
    _title_source: str | None
    _title_updated_at: str
    _additional_directories: list[str]
    _has_slot: bool

    def get_session_file(self) -> str | None:
        raise NotImplementedError

    def get_session_id(self) -> str:
        raise NotImplementedError

    def _reset_state(
        self,
        header: Entry,
        entries: Sequence[Entry],
        title_slot: Any = None,
        *,
        index: EntryIndex | None = None,
    ) -> None:
        raise NotImplementedError

    def _rewrite_all(self, extra: Entry | None = None) -> None:
        raise NotImplementedError

    def _writes_slot(self) -> bool:
        raise NotImplementedError

    def _slot_line(self) -> bytes:
        raise NotImplementedError

    def _adopt_title(self, header: Entry) -> None:
        """Title state of a new file from its header (fork, branch): the slot carries the same."""
        title, source = header.get("title"), header.get("titleSource")
        self._session_name = title if isinstance(title, str) else None
        self._title_source = source if isinstance(source, str) else None
        self._title_updated_at = str(header.get("timestamp") or "")

    @property
    def _persistent(self) -> bool:
        """Whether the session outlives the process (a file or a database row, not memory)."""
        return self._storage.path is not None

    def _require_writable(self) -> None:
        if self._read_only:
            raise ReadOnlySessionError(self.get_session_file())

    def _written_copy(self, path: Path | None, header: Entry, entries: Sequence[Entry]) -> Storage:
        """New storage at ``path`` holding ``header`` + ``entries``, written atomically *before* the
        manager switches to it: if the write fails, this session is left exactly as it was."""
        blobs = self._storage.blobs
        storage = self._storage.sibling(path if self._persistent else None)
        lines: Iterator[bytes] = (
            prepare_for_disk(item, blobs, self._dialect.persist) for item in (header, *entries)
        )
        if self._writes_slot():
            lines = _prefixed(self._slot_line(), lines)
        try:
            storage.rewrite(lines)
        except BaseException:
            storage.close()
            raise
        self._storage.close()
        self._storage = storage
        return storage

    def create_branched_session(self, leaf_id: str) -> str | None:
        """Replace this session by a new one holding only the path to ``leaf_id`` (+ its labels).

        Label entries on the path are dropped and the path stays connected (each entry's parent is
        its nearest kept ancestor; omp leaves an orphan). Returns the new file (``None`` in memory).
        """
        self._require_writable()
        path = self._index.branch(leaf_id)
        if not path:
            raise EntryNotFoundError(leaf_id)
        entries = make.branched_entries(
            path, self._index.labels, self._runtime.new_entry_id, self._runtime.now()
        )
        persistent = self._persistent
        directory = Path(self._session_dir) if persistent else Path(".")
        dialect = self._dialect
        header, new_path = new_header_and_path(self._runtime, self._cwd, directory, dialect=dialect)
        name, source = self._session_name, self._title_source
        header = make.ordered(
            dialect.headers.branched,
            **header,
            title=name,
            titleSource=source,
            parentSession=self.get_session_file() if persistent else None,
            additionalDirectories=list(self._additional_directories) or None,
        )
        state = self._title_state_for_copy(header)
        self._written_copy(new_path if persistent else None, header, entries)
        has_slot = self._has_slot
        self._reset_state(header, entries)
        self._has_slot = has_slot
        # omp 13.19 keeps the name in memory although the header has no title; omp 18 writes it
        self._session_name, self._title_source, self._title_updated_at = state
        self._flushed = True
        return os.fspath(new_path) if persistent else None

    def _title_state_for_copy(self, header: Entry) -> tuple[str | None, str | None, str]:
        """Switch the title state to the new file's (its slot is written from it) and return it."""
        self._title_updated_at = str(header.get("timestamp") or "")
        return self._session_name, self._title_source, self._title_updated_at

    def fork(self) -> ForkResult | None:
        """Copy this session (every branch, same ids) into a new file; ``None`` in memory."""
        self._require_writable()
        if not self._persistent:
            return None
        old_file = self.get_session_file()
        old_header, parent_id = self._header, self.get_session_id()
        title = old_header.get("title", self._session_name)
        source = old_header.get("titleSource", self._title_source)
        key = old_header.get("providerPromptCacheKey")
        dialect = self._dialect
        session_id = self._runtime.session_id(dialect.new_session_id)
        timestamp = self._runtime.now()
        header = make.ordered(
            dialect.headers.fork,
            type="session",
            version=CURRENT_VERSION,
            id=session_id,
            title=title,
            titleSource=source,
            timestamp=timestamp,
            cwd=self._cwd,
            additionalDirectories=list(self._additional_directories) or None,
            parentSession=parent_id,
            providerPromptCacheKey=key if isinstance(key, str) else parent_id,
        )
        new_path = session_file_path(self._session_dir, timestamp, session_id)
        before = (self._session_name, self._title_source, self._title_updated_at)
        self._adopt_title(header)
        try:
            self._written_copy(new_path, header, self._index.entries)
        except BaseException:
            self._session_name, self._title_source, self._title_updated_at = before
            raise
        self._header = header
        self._migrated_from = None
        self._flushed = True
        return ForkResult(old_file, os.fspath(new_path))

    def new_session(
        self,
        parent_session: str | None = None,
        *,
        provider_prompt_cache_key: str | None = None,
        additional_directories: Sequence[str] = (),
    ) -> str | None:
        """Start a fresh, empty session. omp 13.19 writes its file with the first assistant
        message; omp 18 writes it (title slot and header) at once."""
        self._require_writable()
        persistent = self._persistent
        directory = Path(self._session_dir) if persistent else Path(".")
        header, new_path = new_header_and_path(
            self._runtime,
            self._cwd,
            directory,
            parent_session,
            dialect=self._dialect,
            prompt_cache_key=provider_prompt_cache_key,
            directories=normalize_directories(self._cwd, additional_directories),
        )
        has_slot = self._has_slot
        old = self._storage
        old.close()
        self._storage = old.sibling(new_path if persistent else None)
        self._reset_state(header, [])
        self._has_slot = has_slot
        self._ensured = False
        self._flushed = False
        if persistent:
            self._runtime.remember_terminal_session(self._cwd, os.fspath(new_path))
            if self._dialect.new_session_materializes:
                self.ensure_on_disk()
        return os.fspath(new_path) if persistent else None

    def move_to(
        self, new_cwd: str | os.PathLike[str], target_session_dir: str | os.PathLike[str] | None = None
    ) -> None:
        """Move the session to the project directory of ``new_cwd`` (omp's ``moveTo``, §6.6).

        The file and its artifact directory are renamed into the new session directory (the
        file rename is undone if the artifacts cannot follow), and the header's ``cwd`` becomes
        the resolved ``new_cwd``. A no-op when the resolved cwd does not change.
        """
        self._require_writable()
        resolved = os.path.abspath(new_cwd)
        if resolved == os.path.abspath(self._cwd) and target_session_dir is None:
            return
        storage = self._storage
        if self._persistent:
            root = Path(self._session_dir).parent  # stay under the same sessions root
            directory = (
                Path(os.path.abspath(target_session_dir))
                if target_session_dir is not None
                else default_session_dir(resolved, root)
            )
            old_path = os.fspath(str(storage.path))
            if directory != Path(old_path).parent:
                self._move_files(storage, directory)
                if self._dialect.records_previous_files:  # omp 18 remembers where the file was (§2.10)
                    previous = self._header.get("previousSessionFiles")
                    known = list(previous) if isinstance(previous, list) else []
                    if old_path not in known:
                        self._header["previousSessionFiles"] = [*known, old_path]
            self._session_dir = os.fspath(directory)
            self._runtime.remember_terminal_session(
                resolved, os.fspath(directory / Path(str(storage.path)).name)
            )
        self._cwd = resolved
        self._header["cwd"] = resolved
        if storage.exists():
            self._rewrite_all()

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
                os.rename(artifacts, target.with_suffix(""))
            except OSError:
                storage.move(old_path)  # keep file and artifacts together
                raise
            finally:
                finish_move(journal)

    def rewrite_entries(self) -> None:
        """Rewrite the whole file from memory, after entries were changed in place (omp's
        ``rewriteEntries``, used when tool output is pruned). Atomic, as every rewrite."""
        self._require_writable()
        if self._storage.exists():
            self._rewrite_all()

    def ensure_on_disk(self) -> None:
        """Write the session now and persist every later entry immediately."""
        self._require_writable()
        if not self._flushed or self._migrated_from is not None or not self._storage.exists():
            self._rewrite_all()
        self._ensured = True


def _prefixed(first: bytes, rest: Iterable[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest
