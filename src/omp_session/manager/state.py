"""The state one session's parts share: a plain object, owned by the manager, handed to each part.

``SessionManager`` is composed of parts (persistence, appends, reads, titles, workspace,
whole-session operations, artifacts), each a class that receives this object (and, where it
writes, the persistence part) in its constructor. None of them knows the manager; what they
share lives here, in one place, instead of as attributes spread over mixins. What is on disk (the
write flags: flushed, ensured, the title slot, a pending rewrite, the read offset) is not here:
:class:`~omp_session.manager.persistence.Persistence` owns it, behind named transitions.

Internal module (part of :class:`~omp_session.SessionManager`, which is the API); not part of the public API.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from omp_session.dialects import Dialect, auto_dialect
from omp_session.errors import ReadOnlySessionError
from omp_session.format.codec import LineIssue
from omp_session.format.title_slot import TitleSlot
from omp_session.gcpause import gc_paused
from omp_session.manager.runtime import Runtime
from omp_session.model.tree import EntryIndex, SessionIndex
from omp_session.model.usage import UsageStatistics
from omp_session.store import Storage

__all__ = ["SessionState"]

Entry = dict[str, Any]


@dataclass(eq=False)
class SessionState:
    """What the parts of one session share (mutable; the parts change it in place), except what is
    on disk, which is the persistence part's."""

    runtime: Runtime
    #: The working directory of the session (omp 18: the process cwd when the recorded one is gone).
    cwd: str
    session_dir: str
    #: The backend; whole-session operations replace it (a fork or branch moves to a new file).
    storage: Storage
    dialect: Dialect
    read_only: bool = False
    #: Auto mode: never add or remove the title slot of an existing file.
    layout_locked: bool = True
    #: Lines skipped or read leniently when the file was loaded.
    issues: list[LineIssue] = field(default_factory=list)

    # -- the tree -------------------------------------------------------------------------------
    header: Entry = field(default_factory=dict)
    #: Lazy for a file opened through its offset index.
    index: EntryIndex = field(default_factory=SessionIndex)
    leaf: str | None = None
    usage: UsageStatistics = field(default_factory=UsageStatistics)
    has_assistant: bool = False

    # -- the title (header fields and omp 18's title slot) ---------------------------------------
    session_name: str | None = None
    title_source: str | None = None
    title_updated_at: str = ""
    title_revision: int = 0

    #: omp 18 workspace roots besides the cwd (header ``additionalDirectories``).
    additional_directories: list[str] = field(default_factory=list)

    @classmethod
    def build(
        cls,
        *,
        cwd: str,
        session_dir: str,
        storage: Storage,
        header: Entry,
        entries: Sequence[Entry] = (),
        issues: Sequence[LineIssue] = (),
        read_only: bool = False,
        dialect: Dialect | None = None,
        layout_locked: bool = True,
        title_slot: TitleSlot | None = None,
        runtime: Runtime | None = None,
        index: EntryIndex | None = None,
    ) -> SessionState:
        """The state of a session holding ``header`` and ``entries`` (``SessionManager``'s arguments)."""
        state = cls(
            runtime=runtime if runtime is not None else Runtime(),
            cwd=cwd,
            session_dir=session_dir,
            storage=storage,
            dialect=dialect if dialect is not None else auto_dialect(title_slot is not None),
            read_only=read_only,
            layout_locked=layout_locked,
            issues=list(issues),
        )
        state._take(header, entries, title_slot, index)
        return state

    def reset(
        self,
        header: Entry,
        entries: Sequence[Entry],
        title_slot: TitleSlot | None = None,
        *,
        index: EntryIndex | None = None,
    ) -> None:
        """Take ``header`` and ``entries`` as the whole session (a reload, a new file, a rollback):
        the storage's stored lines no longer are these entries' (``Storage.forget_lines``). Only
        ``Persistence.reset`` calls it: what is on disk changes with it."""
        self.storage.forget_lines()
        self._take(header, entries, title_slot, index)

    def _take(
        self, header: Entry, entries: Sequence[Entry], title_slot: TitleSlot | None, index: EntryIndex | None
    ) -> None:
        self.header = header
        title = header.get("title")
        self.session_name = title if isinstance(title, str) else None
        source = header.get("titleSource")
        self.title_source = source if source in ("auto", "user") else None
        timestamp = header.get("timestamp")
        self.title_updated_at = title_slot.updated_at if title_slot else str(timestamp or "")
        directories = header.get("additionalDirectories")
        self.additional_directories = list(directories) if isinstance(directories, list) else []
        if index is None:
            with gc_paused():  # right after a load: the collector would walk every new entry
                index = SessionIndex(entries)
        self.index = index  # lazy for a file opened through its offset index
        if self.read_only:
            index.allow_forgetting()  # nothing is written: entries may be decoded again (issue 12)
        self.leaf = index.last_id()
        self.usage = index.usage()
        self.has_assistant = index.has_assistant()
        index.on_reread(self._adopt_reread_totals)

    def _adopt_reread_totals(self, usage: UsageStatistics, has_assistant: bool) -> None:
        # The index read its file anew (it changed in place under a stale offset index): the totals
        # counted at open described the old content (issue 11 item 8).
        self.usage = usage
        self.has_assistant = has_assistant

    @property
    def persistent(self) -> bool:
        """Whether the session outlives the process (a file or a database row, not memory)."""
        return self.storage.path is not None

    def session_file(self) -> str | None:
        path = self.storage.path
        return os.fspath(path) if path is not None else None

    def knows(self, entry_id: object) -> bool:
        """Whether an entry has the id ``entry_id``; ``False`` for any value that is no id (a
        list, an object: omp's lookup of one simply fails), never a ``TypeError``."""
        try:
            return entry_id in self.index.by_id
        except TypeError:  # unhashable
            return False

    def require_writable(self) -> None:
        if self.read_only:
            raise ReadOnlySessionError(self.session_file())

    def base(self) -> tuple[str, str | None, str]:
        """``(new entry id, current leaf, now)``: what every appended entry starts from."""
        return self.runtime.new_entry_id(self.index.by_id), self.leaf, self.runtime.now()
