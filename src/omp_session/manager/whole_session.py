"""Whole-session operations of :class:`~omp_session.manager.session_manager.SessionManager` (spec §6.5, §6.6):
branching into a new file, forking, starting afresh, naming, forcing the file onto disk.

Every operation that writes a new file writes it completely (atomically) *before* the manager
switches to it, so a failure leaves the session exactly as it was.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from omp_session.errors import EntryNotFoundError, ReadOnlySessionError
from omp_session.format import entry_factory as make
from omp_session.format.ids import new_entry_id, new_session_id, now_iso
from omp_session.format.transform import prepare_for_disk
from omp_session.model.tree import SessionIndex
from omp_session.store import Storage
from omp_session.store.breadcrumbs import write_breadcrumb
from omp_session.store.lazy_index import LazySessionIndex
from omp_session.store.paths import default_session_dir, session_file_path

Entry = dict[str, Any]
_MISSING = object()


class ForkResult(NamedTuple):
    old_session_file: str | None
    new_session_file: str


class WholeSessionMethods:
    """Mixin over the manager's state (declared here, owned by ``SessionManager``)."""

    _read_only: bool
    _storage: Storage
    _index: SessionIndex | LazySessionIndex
    _cwd: str
    _session_dir: str
    _session_name: str | None
    _header: Entry
    _migrated_from: int | None
    _flushed: bool
    _ensured: bool

    def get_session_file(self) -> str | None:
        raise NotImplementedError

    def get_session_id(self) -> str:
        raise NotImplementedError

    def _reset_state(self, header: Entry, entries: Sequence[Entry]) -> None:
        raise NotImplementedError

    def _rewrite_all(self, extra: Entry | None = None) -> None:
        raise NotImplementedError

    @staticmethod
    def _new_header_and_path(cwd: str, directory: Path, parent: str | None = None) -> tuple[Entry, Path]:
        session_id = new_session_id()
        timestamp = now_iso()
        return make.header(session_id, timestamp, cwd, parent), session_file_path(
            directory, timestamp, session_id
        )

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
        lines = (prepare_for_disk(item, blobs) for item in (header, *entries))
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
        entries = make.branched_entries(path, self._index.labels, new_entry_id, now_iso())
        persistent = self._persistent
        directory = Path(self._session_dir) if persistent else Path(".")
        header, new_path = self._new_header_and_path(
            self._cwd, directory, self.get_session_file() if persistent else None
        )
        self._written_copy(new_path if persistent else None, header, entries)
        name = self._session_name
        self._reset_state(header, entries)
        self._session_name = name  # omp keeps the name in memory although the header has no title
        self._flushed = True
        return os.fspath(new_path) if persistent else None

    def fork(self) -> ForkResult | None:
        """Copy this session (every branch, same ids) into a new file; ``None`` in memory."""
        self._require_writable()
        if not self._persistent:
            return None
        old_file = self.get_session_file()
        title = self._header.get("title", self._session_name)
        session_id, timestamp = new_session_id(), now_iso()
        header = make.fork_header(session_id, title, timestamp, self._cwd, self.get_session_id())
        new_path = session_file_path(self._session_dir, timestamp, session_id)
        self._written_copy(new_path, header, self._index.entries)
        self._header = header
        self._migrated_from = None
        self._flushed = True
        return ForkResult(old_file, os.fspath(new_path))

    def new_session(self, parent_session: str | None = None) -> str | None:
        """Start a fresh, empty session (no file until the first assistant message)."""
        self._require_writable()
        persistent = self._persistent
        directory = Path(self._session_dir) if persistent else Path(".")
        header, new_path = self._new_header_and_path(self._cwd, directory, parent_session)
        old = self._storage
        old.close()
        self._storage = old.sibling(new_path if persistent else None)
        self._reset_state(header, [])
        self._ensured = False
        self._flushed = False
        if persistent:
            write_breadcrumb(self._cwd, os.fspath(new_path))
        return os.fspath(new_path) if persistent else None

    def set_session_name(self, name: str) -> None:
        """Set the title in the header; rewrites the file at once if it exists."""
        self._require_writable()
        previous = self._header.get("title", _MISSING)
        self._header["title"] = name
        if self._storage.exists():
            try:
                self._rewrite_all()
            except BaseException:  # keep memory as the file still says
                if previous is _MISSING:
                    del self._header["title"]
                else:
                    self._header["title"] = previous
                raise
        self._session_name = name

    def move_to(self, new_cwd: str | os.PathLike[str]) -> None:
        """Move the session to the project directory of ``new_cwd`` (omp's ``moveTo``, §6.6).

        The file and its artifact directory are renamed into the new session directory (the
        file rename is undone if the artifacts cannot follow), and the header's ``cwd`` becomes
        the resolved ``new_cwd``. A no-op when the resolved cwd does not change.
        """
        self._require_writable()
        resolved = os.path.abspath(new_cwd)
        if resolved == os.path.abspath(self._cwd):
            return
        storage = self._storage
        if self._persistent:
            root = Path(self._session_dir).parent  # stay under the same sessions root
            directory = default_session_dir(resolved, root)
            self._move_files(storage, directory)
            self._session_dir = os.fspath(directory)
            write_breadcrumb(resolved, os.fspath(directory / Path(str(storage.path)).name))
        self._cwd = resolved
        self._header["cwd"] = resolved
        if storage.exists():
            self._rewrite_all()

    @staticmethod
    def _move_files(storage: Storage, directory: Path) -> None:
        old_path = Path(str(storage.path))
        artifacts = old_path.with_suffix("")
        target = directory / old_path.name
        storage.move(target)
        if artifacts.is_dir():
            try:
                os.rename(artifacts, target.with_suffix(""))
            except OSError:
                storage.move(old_path)  # keep file and artifacts together
                raise

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
