"""Reading a session: the getters, navigation and context of ``SessionManager``, and following
a live writer (``refresh``), as a mixin over the manager's state.

Internal module (part of :class:`~omp_session.SessionManager`, which is the API); not part of the public API.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omp_session.dialects import Dialect
from omp_session.errors import EntryNotFoundError
from omp_session.format.codec import LineIssue, decode_lines
from omp_session.format.entries import is_assistant_entry
from omp_session.format.title_slot import SLOT_BYTES, TitleSlot, fold_into_header, split_slot
from omp_session.model.context import SessionContext
from omp_session.model.transcript_context import transcript_from_path
from omp_session.model.tree import EntryIndex, SessionTreeNode
from omp_session.model.usage import UsageStatistics
from omp_session.store import Storage
from omp_session.store.loading import parse_session

__all__ = ["EntryList", "IssueList", "NavigationMethods", "NodeList", "RuleList"]

Entry = dict[str, Any]
EntryList = list[Entry]
NodeList = list[SessionTreeNode]
IssueList = list[LineIssue]
RuleList = list[str]


class NavigationMethods:
    """Mixin over the manager's state (declared here, owned by ``SessionManager``)."""

    _dialect: Dialect
    _index: EntryIndex
    _leaf: str | None
    _header: Entry
    _storage: Storage
    _usage: UsageStatistics
    _has_assistant: bool
    _has_slot: bool
    _session_name: str | None
    _title_source: str | None
    _title_updated_at: str
    _session_dir: str
    _cwd: str
    _issues: list[LineIssue]
    _read_only: bool
    _read_offset: int
    _migrated_from: int | None

    if TYPE_CHECKING:  # provided by SessionManager

        @property
        def _persistent(self) -> bool: ...

        def _reset_state(
            self,
            header: Entry,
            entries: Sequence[Entry],
            title_slot: TitleSlot | None = None,
            *,
            index: EntryIndex | None = None,
        ) -> None: ...

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

    def build_session_context(
        self,
        *,
        transcript: bool = False,
        collapse_compacted_history: bool = False,
        keep_dangling_tool_calls: bool = False,
    ) -> SessionContext:
        """The LLM context at the current leaf (O(depth)).

        ``transcript=True`` builds omp 18's display transcript instead (every entry, compactions
        inline; ``collapse_compacted_history`` shows only the latest compacted tail), see
        :mod:`omp_session.model.transcript_context`.
        """
        rules = self._dialect.context
        if self._leaf is None:
            return SessionContext(rules=rules)
        if transcript:
            return transcript_from_path(
                self._index.branch(self._leaf),
                SessionContext(rules=rules),
                collapse_compacted_history=collapse_compacted_history,
                keep_dangling_tool_calls=keep_dangling_tool_calls,
            )
        return self._index.context(self._leaf, rules)

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
        """Totals over every branch (a copy, not a live object), as this dialect reports them."""
        return self._usage.reported(self._dialect.usage)

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

    def get_parent(self, entry: Entry) -> Entry | None:
        """The parent of ``entry`` as the tree sees it: ``None`` for a root (no, unknown, own or
        cycle-closing parent; docs/durability.md)."""
        return self._index.parent_of(entry)

    def get_migrated_from(self) -> int | None:
        """The format version the file had when it was opened, if it was migrated in memory and not
        yet written back (``None`` otherwise). Version 1 files get their entry ids at load."""
        return self._migrated_from

    def get_load_issues(self) -> IssueList:
        """Lines skipped or read leniently when the file was loaded."""
        return [*self._issues]

    def is_persisted(self) -> bool:
        return self._storage.path is not None

    # ------------------------------------------------------------------ following a writer

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
        if self._has_slot and any(entry.get("type") == "title_change" for entry in added):
            self._follow_title_slot()
        return added

    def _follow_title_slot(self) -> None:
        # omp 18 renames in place: a title_change line is appended and the slot overwritten (same
        # inode, so no reload). The slot, not the entry, is what a load would show: read it.
        slot = split_slot(self._storage.read_from(0)[:SLOT_BYTES])[0]
        if slot is None:
            return
        fold_into_header(self._header, slot)
        self._session_name = slot.title or None
        self._title_source, self._title_updated_at = slot.source, slot.updated_at

    def _reload(self) -> EntryList:
        # The writer replaced the file (a migration, rename or repair): read it again in full and
        # report the entries this reader had not seen.
        data = self._storage.read()
        loaded = parse_session(Path(str(self.get_session_file())), data, self._storage.blobs)
        seen = set(self._index.by_id)
        self._reset_state(loaded.header, loaded.entries, loaded.title_slot, index=loaded.entry_index())
        self._read_offset = data.rfind(b"\n") + 1
        return [entry for entry in loaded.entries if entry.get("id") not in seen]
