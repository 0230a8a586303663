"""The tool-pairing walk of ``check`` (issue 11 item 14), split from ``tools/check_stream.py``.

One iterative depth-first walk over the tree the collector's columns describe, entering each node
once (see ``check_stream``'s docstring on duplicated ids), keeping the state of the current path
per tool call id, never per level: a path can be as long as the file. Its columns come from the
collector's :class:`~omp_session.tools.columns.ColumnStore`, spilled with the rest for a large file.

Internal module; not part of the public API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from omp_session.tools.columns import Column

if TYPE_CHECKING:  # the collector imports this module
    from omp_session.tools.check_stream import EntryCollector

__all__ = ["ToolIssue", "ToolWalk"]


class ToolIssue(NamedTuple):
    """A tool call or result that does not pair up on a branch."""

    entry_id: str | None
    tool_call_id: str
    tool_name: str | None
    kind: str
    ended_in_error: bool


class _EnteredMarks:
    """Which nodes the walk has entered: one byte per id number (a set of ints would cost ~60 bytes
    a node), a set for the few nodes without an id."""

    def __init__(self, marks: Column) -> None:
        self.column = marks
        self._numbered = marks.cells
        self._others: set[int] = set()

    def enter(self, key: int) -> bool:
        """Mark ``key``; ``False`` if it was entered before (through a duplicate or a cycle)."""
        if key >= 0:
            if self._numbered[key]:
                return False
            self._numbered[key] = 1
            return True
        if key in self._others:
            return False
        self._others.add(key)
        return True


class ToolWalk:
    """The depth-first walk of :meth:`EntryCollector.tool_issues`, in memory that does not grow
    with the length of a path (a path can be the whole file): the state of the current path is
    kept per tool call id number in two ``int32`` columns, the place of the call that opened it and
    how many results answered it, and the stack is an ``int32`` column holding ``position`` to
    enter a node and ``-1 - position`` to leave it (spilled with the rest: it is as deep as the
    path). Leaving a node undoes what entering it did, found again from the node itself (a call is
    closed only if this node's call is the one that opened it), so nothing is remembered per level."""

    def __init__(self, entries: EntryCollector, start: Column, children: Column) -> None:
        self._entries = entries
        self._start = start.cells
        self._children = children.cells
        store = entries.store
        calls = len(entries._call_table)
        self._opened_column = store.column("i", calls, -1)  # call id -> call place, or -1
        self._answered_column = store.column("i", calls)  # call id -> results on the path
        self._opened_by, self._answered = self._opened_column.cells, self._answered_column.cells
        self._stack = store.column("i")
        self._pending: dict[int, None] = {}  # open calls without a result on the path
        self._entered = _EnteredMarks(store.column("B", len(entries._last)))  # each node once
        self.found: dict[tuple[Any, int, str], ToolIssue] = {}

    def close(self) -> None:
        store = self._entries.store
        for column in (self._opened_column, self._answered_column, self._stack, self._entered.column):
            store.free(column)

    def run(self, root: int) -> None:
        entries, start, children = self._entries, self._start, self._children
        stack, step = self._stack, entries.store.step
        stack.append(root)
        while len(stack):
            step()
            occurrence = stack.pop()
            if occurrence < 0:
                self._leave(entries._node(-1 - occurrence)[1])
                continue
            key, shown = entries._node(occurrence)
            if not self._entered.enter(key):
                continue
            self._enter(shown)
            stack.append(-1 - occurrence)
            first, stop = (start[key], start[key + 1]) if key >= 0 else (0, 0)
            if first == stop:
                self._leaf()
            else:
                stack.extend_from(children[first:stop][::-1])

    def _enter(self, shown: int) -> None:
        entries, opened_by, answered = self._entries, self._opened_by, self._answered
        call_ids = entries._call_ids.cells
        for place in entries._call_places(shown):
            call = call_ids[place]
            if opened_by[call] < 0:
                opened_by[call] = place
                if not answered[call]:
                    self._pending[call] = None
        place = entries._result_place(shown)
        if place >= 0:
            call = entries._result_ids.cells[place]
            if opened_by[call] < 0:
                entry_id = entries._entry_id(shown) if entries._ids.cells[shown] >= 0 else None
                errored = entry_id is not None and entries._ended_in_error(shown)
                name = entries._tool_name_of(entries._result_names.cells[place])
                self._found(entry_id, call, name, "result-without-call", errored)
            answered[call] += 1
            self._pending.pop(call, None)

    def _leave(self, shown: int) -> None:
        entries, opened_by, answered = self._entries, self._opened_by, self._answered
        call_ids = entries._call_ids.cells
        for place in entries._call_places(shown):
            call = call_ids[place]
            if opened_by[call] == place:
                opened_by[call] = -1
                self._pending.pop(call, None)
        place = entries._result_place(shown)
        if place >= 0:
            call = entries._result_ids.cells[place]
            answered[call] -= 1
            if not answered[call] and opened_by[call] >= 0:
                self._pending[call] = None

    def _leaf(self) -> None:
        entries, step = self._entries, self._entries.store.step
        for call in self._pending:
            step()  # many calls can be open on a path: each one touches pages of its own
            place = self._opened_by[call]
            position = entries._call_positions.cells[place]
            entry_id = entries._entry_id(position) if entries._ids.cells[position] >= 0 else None
            errored = entry_id is not None and entries._ended_in_error(position)
            name = entries._tool_name_of(entries._call_names.cells[place])
            self._found(entry_id, call, name, "call-without-result", errored)

    def _found(self, entry_id: Any, call: int, name: Any, kind: str, errored: bool) -> None:
        call_id = self._entries._call_table.string(call)
        self.found[(entry_id, call, kind)] = ToolIssue(entry_id, call_id, name, kind, errored)
