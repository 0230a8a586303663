"""Session titles: ``set_session_name`` and the omp 18 title slot of the file (omp18-differences §1).

omp 13.19 stores the name verbatim in the header and rewrites the file. omp 18 cleans it, never
lets an automatic title replace a user's, records a ``title_change`` entry and rewrites the
256-byte slot **in place** when the file already has one (else the whole file, which gains a
slot). Which of the two happens is the dialect's rule; whether a file has or gets a slot is the
layout rule of docs/compatibility.md.

Internal module (part of :class:`~omp_session.SessionManager`, which is the API); not part of the public API.
"""

from __future__ import annotations

from typing import Any

from omp_session.errors import ReadOnlySessionError
from omp_session.format import entry_factory as make
from omp_session.manager.persistence import Persistence
from omp_session.manager.state import SessionState

__all__ = ["Titles"]

Entry = dict[str, Any]
_MISSING = object()


class Titles:
    """The session's name and omp 18's title slot, written through the session's persistence."""

    def __init__(self, state: SessionState, persistence: Persistence) -> None:
        self._state = state
        self._persistence = persistence

    def has_title_slot(self) -> bool:
        """Whether the session file starts (or will start) with omp 18's title slot."""
        return self._persistence.has_slot

    def get_title_source(self) -> str | None:
        """``"auto"``, ``"user"`` or ``None`` (omp 18 ``titleSource``)."""
        return self._state.title_source

    def get_title_revision(self) -> int:
        """How many times a user renamed the session in this manager (omp 18 ``titleRevision``)."""
        return self._state.title_revision

    # -- renaming --------------------------------------------------------------------------------

    def set_session_name(self, name: str, source: str = "auto", trigger: str | None = None) -> bool:
        """Name the session; returns whether the name was taken.

        omp 18 rules (dialect 18): the name is cleaned (controls → spaces, runs collapsed,
        trimmed); an empty result, an automatic name after a user's, or a sealed session return
        ``False``. A ``title_change`` entry is appended and the slot rewritten in place, atomically
        and durably (``Storage.overwrite_title_slot``; for files ``store/file.py``). omp 13.19
        rules: the name goes verbatim into the header and the file is rewritten at once if it exists.
        """
        if self._state.read_only:
            raise ReadOnlySessionError(self._state.session_file())
        if self._persistence.sealed:
            return False
        if not self._state.dialect.title_change_entries:
            self._rename_in_header(name)
            return True
        if self._state.title_source == "user" and source == "auto":
            return False
        title = self._state.dialect.clean_title(name)
        if not title:
            return False
        timestamp = self._state.runtime.now()
        entry = make.typed(
            self._state.runtime.new_entry_id(self._state.index.by_id),
            self._state.leaf,
            timestamp,
            "title_change",
            title=title,
            source=source,
            previousTitle=self._state.session_name or make.OMIT,
            trigger=trigger or make.OMIT,
        )
        before = self._title_state()
        self._state.session_name, self._state.title_source, self._state.title_updated_at = (
            title,
            source,
            timestamp,
        )
        self._state.header["title"], self._state.header["titleSource"] = title, source
        try:
            self._persist_title_change(entry)
        except BaseException:
            self._restore_title_state(before)
            raise
        if source == "user":
            self._state.title_revision += 1
        self._state.index.add(entry)
        self._state.leaf = str(entry["id"])
        return True

    def _persist_title_change(self, entry: Entry) -> None:
        storage = self._state.storage
        if not (self._persistence.ensured or self._state.has_assistant):
            self._persistence.persist(entry)  # not materialised yet: memory only
        elif self._persistence.is_current() and self._persistence.has_slot and storage.exists():
            storage.append(self._persistence.disk_line(entry))
            storage.overwrite_title_slot(self._persistence.slot_line())
        else:
            self._persistence.rewrite_all(extra=entry)

    def _rename_in_header(self, name: str) -> None:
        before = self._title_state()
        self._state.header["title"] = name
        self._state.session_name = name
        if self._persistence.has_slot:
            self._state.title_updated_at = self._state.runtime.now()
        if self._state.storage.exists():
            try:
                self._persistence.rewrite_all()
            except BaseException:
                self._restore_title_state(before)
                raise

    def _title_state(self) -> tuple[Any, ...]:
        header = self._state.header
        return (
            self._state.session_name,
            self._state.title_source,
            self._state.title_updated_at,
            header.get("title", _MISSING),
            header.get("titleSource", _MISSING),
        )

    def _restore_title_state(self, state: tuple[Any, ...]) -> None:
        self._state.session_name, self._state.title_source, self._state.title_updated_at, title, source = (
            state
        )
        for key, value in (("title", title), ("titleSource", source)):
            if value is _MISSING:
                self._state.header.pop(key, None)
            else:
                self._state.header[key] = value
