"""Reading a session: the getters, navigation and context of ``SessionManager`` (following a live
writer, ``refresh``, is persistence's).

Internal module (part of :class:`~omp_session.SessionManager`, which is the API); not part of the public API.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from omp_session.errors import EntryNotFoundError
from omp_session.format.codec import LineIssue
from omp_session.manager.state import SessionState
from omp_session.model.context import SessionContext, context_from_path
from omp_session.model.transcript_context import transcript_from_path
from omp_session.model.tree import SessionTreeNode, path_stopping_at_repeat
from omp_session.model.usage import UsageStatistics

__all__ = ["EntryList", "IssueList", "Navigation", "NodeList", "RuleList"]

Entry = dict[str, Any]
#: What entry reads return: a list, or for a lazily opened file a view that decodes entries on
#: access (``LazyEntries``: indexing, slicing to a list, ``len``, iteration, ``==`` a list).
EntryList = Sequence[Entry]
NodeList = list[SessionTreeNode]
IssueList = list[LineIssue]
RuleList = list[str]


class Navigation:
    """Reads, navigation and context over the session's state (moves only the leaf)."""

    def __init__(self, state: SessionState) -> None:
        self._state = state

    # ------------------------------------------------------------------ reads and navigation

    def get_leaf_id(self) -> str | None:
        return self._state.leaf

    def get_leaf_entry(self) -> Entry | None:
        return self._state.index.get(self._state.leaf)

    def get_entry(self, entry_id: str) -> Entry | None:
        return self._state.index.get(entry_id)

    def get_entries(self) -> EntryList:
        """Every entry in file order: a new list, or, for a file opened through its offset index,
        a view of the entries there are now that decodes them from the file on access (a slice
        of it is a list; copy it with ``list(...)`` to change it). The entries themselves are
        live; in a read-only session an entry may be decoded anew (an equal dict) once the
        bounded cache dropped it, so a change made to it in place may not last
        (docs/performance.md, "Memory")."""
        entries = self._state.index.entries
        # A list is the index's own (copied: the caller may change it); a view is made per call.
        return entries.copy() if isinstance(entries, list) else entries

    def get_header(self) -> Entry:
        return self._state.header

    def path(self, from_id: str | None) -> list[Entry]:
        """The root→``from_id`` path as the dialect walks it (omp 18: until an id repeats)."""
        path = self._state.index.branch(from_id)
        if self._state.dialect.path_stops_at_repeated_id:
            return path_stopping_at_repeat(self._state.index, path, from_id)
        return path

    def get_branch(self, from_id: str | None = None) -> EntryList:
        """Root→entry path for ``from_id`` (default: the leaf); ``[]`` if unknown."""
        return self.path(from_id if from_id is not None else self._state.leaf)

    def get_tree(self) -> NodeList:
        return self._state.index.get_tree()

    def get_children(self, parent_id: str) -> EntryList:
        return self._state.index.children(parent_id)

    def get_label(self, entry_id: str) -> str | None:
        return self._state.index.labels.get(entry_id)

    def get_labels(self) -> dict[str, str]:
        """Every current label by target id (a copy)."""
        return dict(self._state.index.labels)

    def branch(self, entry_id: str) -> None:
        """Move the leaf to an existing entry (not persisted, as in omp)."""
        if not self._state.knows(entry_id):
            raise EntryNotFoundError(entry_id)
        self._state.leaf = entry_id

    def reset_leaf(self) -> None:
        """Move the leaf before the first entry; the next append starts a new root."""
        self._state.leaf = None

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
        rules = self._state.dialect.context
        if self._state.leaf is None:
            return SessionContext(rules=rules)
        if transcript:
            return transcript_from_path(
                self.path(self._state.leaf),
                SessionContext(rules=rules),
                collapse_compacted_history=collapse_compacted_history,
                keep_dangling_tool_calls=keep_dangling_tool_calls,
            )
        if self._state.dialect.path_stops_at_repeated_id:  # omp 18: reads the whole path anyway
            return context_from_path(self.path(self._state.leaf), rules=rules)
        return self._state.index.context(self._state.leaf, rules)

    def get_injected_ttsr_rules(self) -> RuleList:
        """TTSR rule names injected along the current branch, first appearance first (§5)."""
        return self.build_session_context().injected_ttsr_rules if self._state.leaf is not None else []

    def get_last_model_change_role(self) -> str | None:
        """``role`` (default ``"default"``) of the nearest ``model_change`` above the leaf (§5)."""
        for entry in reversed(self.get_branch()):
            if entry.get("type") == "model_change":
                role = entry.get("role")
                return role if isinstance(role, str) else "default"
        return None

    def get_usage_statistics(self) -> UsageStatistics:
        """Totals over every branch (a copy, not a live object), as this dialect reports them."""
        return self._state.usage.reported(self._state.dialect.usage)

    def get_session_id(self) -> str:
        return str(self._state.header.get("id"))

    def get_session_file(self) -> str | None:
        path = self._state.storage.path
        return os.fspath(path) if path is not None else None

    def get_session_dir(self) -> str:
        return self._state.session_dir

    def get_cwd(self) -> str:
        return self._state.cwd

    def get_session_name(self) -> str | None:
        return self._state.session_name

    def get_parent(self, entry: Entry) -> Entry | None:
        """The parent of ``entry`` as the tree sees it: ``None`` for a root (no, unknown, own or
        cycle-closing parent; docs/durability.md)."""
        return self._state.index.parent_of(entry)

    def get_load_issues(self) -> IssueList:
        """Lines skipped or read leniently when the file was loaded."""
        return [*self._state.issues]

    def is_persisted(self) -> bool:
        return self._state.storage.path is not None

    def is_session_on_disk(self) -> bool:
        """Whether this session's file (or database row) exists now (omp 18 ``isSessionOnDisk``);
        always ``False`` in memory. Reads only."""
        return self._state.storage.path is not None and self._state.storage.exists()
