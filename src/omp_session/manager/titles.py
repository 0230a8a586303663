"""Session titles: ``set_session_name`` and the omp 18 title slot of the file (omp18-differences §1).

omp 13.19 stores the name verbatim in the header and rewrites the file. omp 18 cleans it, never
lets an automatic title replace a user's, records a ``title_change`` entry and rewrites the
256-byte slot **in place** when the file already has one (else the whole file, which gains a
slot). Which of the two happens is the dialect's rule; whether a file has or gets a slot is the
layout rule of docs/compatibility.md.

Internal module (part of :class:`~omp_session.SessionManager`, which is the API); not part of the public API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from omp_session.dialects import Dialect
from omp_session.errors import ReadOnlySessionError
from omp_session.format import entry_factory as make
from omp_session.format.title_slot import TitleSlot, encode_slot
from omp_session.manager.runtime import Runtime
from omp_session.model.tree import EntryIndex
from omp_session.store import Storage

__all__ = ["TitleMethods"]

Entry = dict[str, Any]
_MISSING = object()


class TitleMethods:
    """Mixin over the manager's state (declared here, owned by ``SessionManager``)."""

    _dialect: Dialect
    _layout_locked: bool
    _runtime: Runtime
    _has_slot: bool
    _header: Entry
    _session_name: str | None
    _title_source: str | None
    _title_updated_at: str
    _title_revision: int
    _sealed: bool
    _read_only: bool
    _storage: Storage
    _index: EntryIndex
    _leaf: str | None
    _ensured: bool
    _flushed: bool
    _has_assistant: bool
    _migrated_from: int | None
    _rewrite_pending: bool

    if TYPE_CHECKING:  # provided by SessionManager and the other mixins

        def _rewrite_all(self, extra: Entry | None = None) -> None:
            raise NotImplementedError

        def _persist(self, entry: Entry) -> None:
            raise NotImplementedError

        def _disk_line(self, entry: Entry) -> bytes:
            raise NotImplementedError

        def get_session_file(self) -> str | None:
            raise NotImplementedError

    # -- the slot --------------------------------------------------------------------------------

    def _writes_slot(self) -> bool:
        """Whether a full write starts with the title slot: a file that has one keeps it; a
        slot-less file gains one only under an explicit omp 18 dialect (never in auto mode)."""
        return self._has_slot or (self._dialect.title_slot and not self._layout_locked)

    def _slot_line(self) -> bytes:
        updated = self._title_updated_at or str(self._header.get("timestamp") or "")
        return encode_slot(TitleSlot(self._session_name or "", updated, self._title_source))

    def has_title_slot(self) -> bool:
        """Whether the session file starts (or will start) with omp 18's title slot."""
        return self._has_slot

    def get_title_source(self) -> str | None:
        """``"auto"``, ``"user"`` or ``None`` (omp 18 ``titleSource``)."""
        return self._title_source

    def get_title_revision(self) -> int:
        """How many times a user renamed the session in this manager (omp 18 ``titleRevision``)."""
        return self._title_revision

    # -- renaming --------------------------------------------------------------------------------

    def set_session_name(self, name: str, source: str = "auto", trigger: str | None = None) -> bool:
        """Name the session; returns whether the name was taken.

        omp 18 rules (dialect 18): the name is cleaned (controls → spaces, runs collapsed,
        trimmed); an empty result, an automatic name after a user's, or a sealed session return
        ``False``. A ``title_change`` entry is appended and the slot rewritten in place, atomically
        and durably (``Storage.overwrite_title_slot``; for files ``store/file.py``). omp 13.19
        rules: the name goes verbatim into the header and the file is rewritten at once if it exists.
        """
        if self._read_only:
            raise ReadOnlySessionError(self.get_session_file())
        if self._sealed:
            return False
        if not self._dialect.title_change_entries:
            self._rename_in_header(name)
            return True
        if self._title_source == "user" and source == "auto":
            return False
        title = self._dialect.clean_title(name)
        if not title:
            return False
        timestamp = self._runtime.now()
        entry = make.typed(
            self._runtime.new_entry_id(self._index.by_id),
            self._leaf,
            timestamp,
            "title_change",
            title=title,
            source=source,
            previousTitle=self._session_name or make.OMIT,
            trigger=trigger or make.OMIT,
        )
        before = self._title_state()
        self._session_name, self._title_source, self._title_updated_at = title, source, timestamp
        self._header["title"], self._header["titleSource"] = title, source
        try:
            self._persist_title_change(entry)
        except BaseException:
            self._restore_title_state(before)
            raise
        if source == "user":
            self._title_revision += 1
        self._index.add(entry)
        self._leaf = str(entry["id"])
        return True

    def _persist_title_change(self, entry: Entry) -> None:
        storage = self._storage
        if not (self._ensured or self._has_assistant):
            self._persist(entry)  # not materialised yet: memory only
        elif self._is_current() and self._has_slot and storage.exists():
            storage.append(self._disk_line(entry))
            storage.overwrite_title_slot(self._slot_line())
        else:
            self._rewrite_all(extra=entry)

    def _is_current(self) -> bool:
        return self._flushed and self._migrated_from is None and not self._rewrite_pending

    def _rename_in_header(self, name: str) -> None:
        before = self._title_state()
        self._header["title"] = name
        self._session_name = name
        if self._has_slot:
            self._title_updated_at = self._runtime.now()
        if self._storage.exists():
            try:
                self._rewrite_all()
            except BaseException:
                self._restore_title_state(before)
                raise

    def _title_state(self) -> tuple[Any, ...]:
        header = self._header
        return (
            self._session_name,
            self._title_source,
            self._title_updated_at,
            header.get("title", _MISSING),
            header.get("titleSource", _MISSING),
        )

    def _restore_title_state(self, state: tuple[Any, ...]) -> None:
        self._session_name, self._title_source, self._title_updated_at, title, source = state
        for key, value in (("title", title), ("titleSource", source)):
            if value is _MISSING:
                self._header.pop(key, None)
            else:
                self._header[key] = value
