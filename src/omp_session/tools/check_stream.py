"""The entry checks of ``check``, in compact memory (issue 11 item 14).

``check`` of a large file decodes it a chunk at a time and hands each entry to
:class:`EntryCollector`, which keeps only what the checks need, in flat columns: every id once
(its bytes in a :class:`StringTable`, which numbers it), and per entry its line number and the
numbers of its id and parent id in arrays of 32-bit integers. Tool calls and results (their call
id numbers and tool names), error stops, compaction and label targets are kept only for the
entries that have them. No entry dict and no per-entry Python object survives its chunk (about 90
bytes an entry in all on a generated session: docs/durability.md). The columns come from a
:class:`~omp_session.tools.columns.ColumnStore`: in memory, or for a large file in temporary files
with a bounded resident set, so the memory of ``check`` does not grow with the file; every loop
below reports its steps to the store, which is how it knows when to drop resident pages.

The collector then finds the entry problems: duplicate and missing ids, self-parents, orphans,
cycles (the same rule as ``SessionIndex.cycle_roots``), missing kept entries and label targets,
and tool calls and results that do not pair up on a branch. A whole read (a small file, or a v1/v2
file after its migration) feeds its entries to the same collector, so both reads report alike.

The tool walk (``ToolWalk``, at the end of this module) is one iterative depth-first walk over the
tree that keeps the calls seen on the current path: linear in the number of entries, however many
branches. Duplicated ids make the tree a graph: omp attaches the one node of an id under its parent
once per occurrence, so a chain of n duplicated ids has 2^n paths (20 in a 400 KB file made
``check`` run for minutes). The walk therefore enters each node once; a node met again (through a
duplicate or a cycle) is not walked a second time. Without duplicated ids that is exactly the walk
of every path; with them, ``check`` reports the duplicates as errors, and the pairing below a
duplicated id is judged on the path (in file order) that reached it first.

Internal module (``omp-session check``); not part of the public API.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any, NamedTuple

from omp_session.tools.columns import Column, ColumnStore
from omp_session.tools.string_table import StringTable

__all__ = ["EntryCollector", "ToolIssue"]

Entry = dict[str, Any]
_ERROR_STOPS = ("error", "aborted")


class EntryCollector:
    """What the entry checks need of each entry, collected in file order.

    Memory (issue 11 item 14): about 70 bytes an entry and 50 a tool call, in flat columns of one
    :class:`~omp_session.tools.columns.ColumnStore`, in memory or (a large file) in temporary
    files. Ids and tool call ids are numbered by :class:`StringTable` (their bytes, no string
    objects); per entry its line, the numbers of its id and parent and where its tool calls and
    result are kept are ``int32`` columns; tool calls and results are columns in file order. Only
    what few entries have (ids, kept ids, label targets and tool names that are not strings)
    stays in Python dicts and lists, in memory either way."""

    def __init__(self, table_slots: int = 8, store: ColumnStore | None = None) -> None:
        # Every column comes from one store: in memory, or spilled to temporary files (columns.py).
        self.store = store = store if store is not None else ColumnStore()
        self._table = StringTable(table_slots, store)  # id (of an entry or named as a parent) -> number
        self._last = store.column("i")  # number -> position of the last entry with it, or -1
        self._order = store.column("i")  # numbers of entry ids, in first-seen order (by_id's)
        self.lines = store.column("I")  # position -> line number
        self._ids = store.column("i")  # position -> number of its id, or -1
        self._parents = store.column("i")  # position -> number of its parent id, or -1
        self._odd_ids: dict[int, Any] = {}  # position -> an id that is not a string
        self._call_table = StringTable(table_slots, store)  # tool call id -> number
        # Tool names: a string's number in its own table, or -1 - its place among the few that
        # are not strings (any JSON value, kept as it is for the message).
        self._name_table = StringTable(table_slots, store)
        self._odd_names: list[Any] = []
        # Tool calls (several per position possible) and results (one per position), by position.
        self._call_positions = store.column("i")
        self._call_ids = store.column("i")
        self._call_names = store.column("i")
        # Per position, where its calls start and its result is: the tool walk finds them in
        # O(1), touching two pages, instead of bisecting the columns above (~20 pages a lookup).
        self._first_calls = store.column("i")  # position -> place of its first call
        self._result_places = store.column("i")  # position -> place of its result, or -1
        self._result_ids = store.column("i")
        self._result_names = store.column("i")
        self._errors = store.column("i")  # positions of messages that ended in an error
        # The ids compactions keep from and labels point at, in file order: the position, whether
        # it is a label, and the id's number in the id table (-1: not a string, see _odd_links).
        self._link_positions = store.column("i")
        self._link_is_label = store.column("B")
        self._link_ids = store.column("i")
        self._odd_links: dict[int, Any] = {}  # position -> a kept id or target that is not a string
        #: ``(kind, line, entry id, message)`` of missing and duplicate ids, in file order.
        self.id_problems: list[tuple[str, int, str | None, str]] = []

    def _number_of(self, entry_id: str) -> int:
        number = self._table.add(entry_id)
        if number == len(self._last):
            self._last.append(-1)
        return number

    def id_of_number(self, number: int) -> str:
        """The id numbered ``number``."""
        return self._table.string(number)

    def add(self, entry: Entry, line: int) -> None:
        self.store.step()
        position = len(self.lines)
        self.lines.append(line)
        self._first_calls.append(len(self._call_ids))
        results = len(self._result_ids)
        entry_id = entry.get("id")
        if isinstance(entry_id, str):
            number = self._number_of(entry_id)
            previous = self._last.cells[number]
            if previous >= 0:
                self.id_problems.append(
                    (
                        "duplicate-id",
                        line,
                        entry_id,
                        f"id {entry_id} was already used on line {self.lines.cells[previous]}",
                    )
                )
            else:
                self._order.append(number)
            self._last.cells[number] = position
            self._ids.append(number)
        else:
            self.id_problems.append(
                ("missing-id", line, None, "the entry has no string id, so nothing can refer to it")
            )
            self._ids.append(-1)
            if entry_id is not None:
                self._odd_ids[position] = entry_id
        parent = entry.get("parentId")
        self._parents.append(self._number_of(parent) if isinstance(parent, str) and parent else -1)
        kind = entry.get("type")
        if kind == "message":
            self._add_message(entry.get("message"), position)
        elif kind == "compaction":
            self._add_link(position, entry.get("firstKeptEntryId"), False)
        elif kind == "label":
            self._add_link(position, entry.get("targetId"), True)
        self._result_places.append(results if len(self._result_ids) > results else -1)

    def _add_message(self, message: Any, position: int) -> None:
        if not isinstance(message, dict):
            return
        role = message.get("role")
        if message.get("stopReason") in _ERROR_STOPS:
            self._errors.append(position)
        if role == "assistant":
            content = message.get("content")
            if isinstance(content, list):
                for block in content:
                    if (
                        isinstance(block, dict)
                        and block.get("type") == "toolCall"
                        and isinstance(block.get("id"), str)
                    ):
                        self._call_positions.append(position)
                        self._call_ids.append(self._call_table.add(block["id"]))
                        self._call_names.append(self._tool_name(block.get("name")))
        elif role == "toolResult":
            call_id = message.get("toolCallId")
            if isinstance(call_id, str):
                self._result_ids.append(self._call_table.add(call_id))
                self._result_names.append(self._tool_name(message.get("toolName")))

    def _add_link(self, position: int, target: Any, is_label: bool) -> None:
        self._link_positions.append(position)
        self._link_is_label.append(int(is_label))
        if isinstance(target, str):  # numbered like a parent: an id that may never exist
            self._link_ids.append(self._number_of(target))
        else:
            self._link_ids.append(-1)
            self._odd_links[position] = target

    def _tool_name(self, name: Any) -> int:
        """A number for a tool name (a session names a handful of tools thousands of times)."""
        if isinstance(name, str):
            return self._name_table.add(name)
        self._odd_names.append(name)
        return -len(self._odd_names)

    def _tool_name_of(self, number: int) -> Any:
        return self._name_table.string(number) if number >= 0 else self._odd_names[-1 - number]

    def _ended_in_error(self, position: int) -> bool:
        errors = self._errors
        place = bisect_left(errors.cells, position, 0, len(errors))
        return place < len(errors) and errors.cells[place] == position

    # -- after the last entry --------------------------------------------------------------------
    # Every loop below counts its steps (``store.step()``): a spilled store drops the pages it
    # touched every so many steps, so the resident set stays bounded (columns.py).

    def _entry_id(self, position: int) -> Any:
        number = self._ids.cells[position]
        return self._table.string(number) if number >= 0 else self._odd_ids.get(position)

    def cycle_roots(self) -> set[int]:
        """Numbers of the ids whose parent link closes a cycle (``SessionIndex.cycle_roots``)."""
        store = self.store
        last, parents = self._last.cells, self._parents.cells
        rank_column = store.column("i", len(self._last))  # number -> place in by_id's order
        state_column = store.column("i", len(self._last))  # walk number, 0: not seen
        rank, state = rank_column.cells, state_column.cells
        for place, number in enumerate(self._order.view()):
            store.step()
            rank[number] = place
        roots: set[int] = set()
        for walk, start in enumerate(self._order.view(), start=1):
            if state[start]:
                continue
            current = start
            while current >= 0 and last[current] >= 0 and not state[current]:
                store.step()
                state[current] = walk
                current = parents[last[current]]
            if current >= 0 and state[current] == walk:
                roots.add(self._cycle_root(current, rank))
        store.free(rank_column)
        store.free(state_column)
        return roots

    def _cycle_root(self, member: int, rank: memoryview) -> int:
        """The id of the cycle through ``member`` that comes first in by_id's order (the cycle is
        followed again through the parent links rather than kept: a path can be the whole file)."""
        last, parents = self._last.cells, self._parents.cells
        root, current = member, parents[last[member]]
        while current != member:
            self.store.step()
            if rank[current] < rank[root]:
                root = current
            current = parents[last[current]]
        return root

    def link_problems(self, roots: set[int]) -> list[tuple[str, int, Any, str]]:
        """Self-parents, orphans, cycles, missing kept entries and label targets, in file order."""
        found: list[tuple[str, int, Any, str]] = []
        store = self.store
        last, ids, lines = self._last.cells, self._ids.cells, self.lines.cells
        link_positions, links, link = self._link_positions.cells, len(self._link_positions), 0
        for position, parent in enumerate(self._parents.view()):
            store.step()
            line = lines[position]
            number = ids[position]
            if parent >= 0:
                entry_id = self._entry_id(position)
                if parent == number:
                    found.append(("self-parent", line, entry_id, "the entry is its own parent"))
                elif last[parent] < 0:
                    found.append(
                        ("orphan", line, entry_id, f"parent {self._table.string(parent)} does not exist")
                    )
                elif number >= 0 and number in roots and last[number] == position:
                    found.append(("cycle", line, entry_id, f"parent links from {entry_id} loop back to it"))
            if link < links and link_positions[link] == position:
                problem = self._link_problem(link, line)
                if problem is not None:
                    found.append(problem)
                link += 1
        return found

    def _link_problem(self, link: int, line: int) -> tuple[str, int, Any, str] | None:
        """A compaction's kept entry or a label's target that does not exist."""
        position, number = self._link_positions.cells[link], self._link_ids.cells[link]
        if number >= 0 and self._last.cells[number] >= 0:
            return None
        target = self._table.string(number) if number >= 0 else self._odd_links[position]
        if self._link_is_label.cells[link]:
            return (
                "label-target-missing",
                line,
                self._entry_id(position),
                f"label target {target} does not exist",
            )
        return (
            "missing-kept-entry",
            line,
            self._entry_id(position),
            f"firstKeptEntryId {target} does not exist",
        )

    def _children(self, roots: set[int]) -> tuple[Column, Column, Column]:
        """Root positions in file order, and the child positions of each id number (compressed:
        those of number ``n`` are ``children[start[n]:start[n + 1]]``, in file order)."""
        store = self.store
        last, ids = self._last.cells, self._ids.cells
        positions = len(self._parents)
        attached_column = store.column("i", positions, -1)  # position -> the number it hangs under
        start = store.column("i", len(self._last) + 1)  # counts first, then where each one starts
        root_positions = store.column("i")
        attached, counts = attached_column.cells, start.cells
        for position, parent in enumerate(self._parents.view()):
            store.step()
            number = ids[position]
            if parent < 0 or parent == number or (number >= 0 and number in roots) or last[parent] < 0:
                root_positions.append(position)
            else:
                attached[position] = parent
                counts[parent + 1] += 1
        for number in range(1, len(start)):
            store.step()
            counts[number] += counts[number - 1]
        fill_column = store.copy(start)
        children = store.column("i", positions)
        fill, places = fill_column.cells, children.cells
        for position in range(positions):
            store.step()
            parent = attached[position]
            if parent >= 0:
                places[fill[parent]] = position
                fill[parent] += 1
        store.free(attached_column)
        store.free(fill_column)
        return root_positions, start, children

    def tool_issues(self, roots: set[int]) -> list[ToolIssue]:
        """Calls without a result on some branch below them, results without a call before them
        (roots and children in file order: see the module's docstring on duplicated ids)."""
        root_positions, start, children = self._children(roots)
        walk = ToolWalk(self, start, children)
        for place in range(len(root_positions)):
            walk.run(root_positions.cells[place])
        walk.close()
        for column in (root_positions, start, children):
            self.store.free(column)
        return list(walk.found.values())

    def _node(self, position: int) -> tuple[int, int]:
        """``(node key, position of the entry it shows)``: an id's node shows its last entry."""
        number = self._ids.cells[position]
        return (number, self._last.cells[number]) if number >= 0 else (-2 - position, position)

    def _call_places(self, position: int) -> range:
        """Places in the call columns of the tool calls of the entry at ``position``."""
        first_calls = self._first_calls
        following = position + 1
        stop = first_calls.cells[following] if following < len(first_calls) else len(self._call_ids)
        return range(first_calls.cells[position], stop)

    def _result_place(self, position: int) -> int:
        """Place in the result columns of the tool result at ``position``, or ``-1``."""
        return int(self._result_places.cells[position])

    def line_of_id(self, entry_id: str | None) -> int | None:
        """The line of the entry the id index keeps for ``entry_id`` (its last one)."""
        number = self._table.find(entry_id) if entry_id is not None else -1
        if number < 0 or self._last.cells[number] < 0:
            return None
        return int(self.lines.cells[self._last.cells[number]])


# -- the tool walk (issue 11 item 14) ------------------------------------------------------------


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
