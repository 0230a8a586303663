"""The entry checks of ``check``, in compact memory (issue 11 item 14).

``check`` of a large file decodes it a chunk at a time and hands each entry to
:class:`EntryCollector`, which keeps only what the checks need, in compact form: every id once
(a dict of id -> small int), and per entry its line number and the numbers of its id and parent
id in arrays of 32-bit integers. Tool calls and results (their ids), compaction and label targets
and error stops are kept only for the entries that have them. No entry dict survives its chunk.

The collector then finds the entry problems: duplicate and missing ids, self-parents, orphans,
cycles (the same rule as ``SessionIndex.cycle_roots``), missing kept entries and label targets,
and tool calls and results that do not pair up on a branch. A whole read (a small file, or a v1/v2
file after its migration) feeds its entries to the same collector, so both reads report alike.

The tool walk is one iterative depth-first walk over the tree that keeps the calls seen on the
current path: linear in the number of entries, however many branches. Duplicated ids make the tree
a graph: omp attaches the one node of an id under its parent once per occurrence, so a chain of n
duplicated ids has 2^n paths (20 in a 400 KB file made ``check`` run for minutes). The walk
therefore enters each node once; a node met again (through a duplicate or a cycle) is not walked a
second time. Without duplicated ids that is exactly the walk of every path; with them, ``check``
reports the duplicates as errors, and the pairing below a duplicated id is judged on the path (in
file order) that reached it first.

Internal module (``omp-session check``); not part of the public API.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence
from typing import Any, NamedTuple

__all__ = ["EntryCollector", "ToolIssue"]

Entry = dict[str, Any]
_ERROR_STOPS = ("error", "aborted")


def _shared(name: Any) -> Any:
    """A tool name as one shared string (a session names a handful of tools thousands of times)."""
    return sys.intern(name) if type(name) is str else name


class ToolIssue(NamedTuple):
    """A tool call or result that does not pair up on a branch."""

    entry_id: str | None
    tool_call_id: str
    tool_name: str | None
    kind: str
    ended_in_error: bool


class EntryCollector:
    """What the entry checks need of each entry, collected in file order."""

    def __init__(self) -> None:
        self._number: dict[str, int] = {}  # id (of an entry or named as a parent) -> its number
        self._names: list[str] = []  # number -> id
        self._last: array[int] = array("i")  # number -> position of the last entry with it, or -1
        self._order: array[int] = array("i")  # numbers of entry ids, in first-seen order (by_id's)
        self.lines: array[int] = array("I")  # position -> line number
        self._ids: array[int] = array("i")  # position -> number of its id, or -1
        self._parents: array[int] = array("i")  # position -> number of its parent id, or -1
        self._odd_ids: dict[int, Any] = {}  # position -> an id that is not a string
        self._calls: dict[int, list[tuple[str, str | None]]] = {}
        self._results: dict[int, tuple[str, Any]] = {}
        self._call_ids: dict[str, str] = {}
        self._errors: set[int] = set()  # messages that ended in an error or were aborted
        self._kept: dict[int, Any] = {}  # compaction position -> firstKeptEntryId
        self._targets: dict[int, Any] = {}  # label position -> targetId
        #: ``(kind, line, entry id, message)`` of missing and duplicate ids, in file order.
        self.id_problems: list[tuple[str, int, str | None, str]] = []

    def _number_of(self, entry_id: str) -> int:
        number = self._number.get(entry_id)
        if number is None:
            number = self._number[entry_id] = len(self._names)
            self._names.append(entry_id)
            self._last.append(-1)
        return number

    def add(self, entry: Entry, line: int) -> None:
        position = len(self.lines)
        self.lines.append(line)
        entry_id = entry.get("id")
        if isinstance(entry_id, str):
            number = self._number_of(entry_id)
            previous = self._last[number]
            if previous >= 0:
                self.id_problems.append(
                    (
                        "duplicate-id",
                        line,
                        entry_id,
                        f"id {entry_id} was already used on line {self.lines[previous]}",
                    )
                )
            else:
                self._order.append(number)
            self._last[number] = position
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
            self._kept[position] = entry.get("firstKeptEntryId")
        elif kind == "label":
            self._targets[position] = entry.get("targetId")

    def _add_message(self, message: Any, position: int) -> None:
        if not isinstance(message, dict):
            return
        role = message.get("role")
        if message.get("stopReason") in _ERROR_STOPS:
            self._errors.add(position)
        if role == "assistant":
            content = message.get("content")
            if isinstance(content, list):
                calls = [
                    (self._call_id(block["id"]), _shared(block.get("name")))
                    for block in content
                    if isinstance(block, dict)
                    and block.get("type") == "toolCall"
                    and isinstance(block.get("id"), str)
                ]
                if calls:
                    self._calls[position] = calls
        elif role == "toolResult":
            call_id = message.get("toolCallId")
            if isinstance(call_id, str):
                self._results[position] = (self._call_id(call_id), _shared(message.get("toolName")))

    def _call_id(self, call_id: str) -> str:
        """One string per tool call id for its call and its result (memory: issue 11 item 14)."""
        return self._call_ids.setdefault(call_id, call_id)

    # -- after the last entry --------------------------------------------------------------------

    def _indexed(self, value: Any) -> bool:
        number = self._number.get(value) if isinstance(value, str) else None
        return number is not None and self._last[number] >= 0

    def _entry_id(self, position: int) -> Any:
        number = self._ids[position]
        return self._names[number] if number >= 0 else self._odd_ids.get(position)

    def cycle_roots(self) -> set[int]:
        """Numbers of the ids whose parent link closes a cycle (``SessionIndex.cycle_roots``)."""
        last, parents = self._last, self._parents
        rank = array("i", bytes(4 * len(self._names)))  # number -> place in by_id's order
        for place, number in enumerate(self._order):
            rank[number] = place
        state = array("i", bytes(4 * len(self._names)))  # walk number, 0: not seen
        roots: set[int] = set()
        for walk, start in enumerate(self._order, start=1):
            if state[start]:
                continue
            trail: list[int] = []
            current = start
            while current >= 0 and last[current] >= 0 and not state[current]:
                state[current] = walk
                trail.append(current)
                current = parents[last[current]]
            if current >= 0 and state[current] == walk:
                cycle = trail[trail.index(current) :]
                roots.add(min(cycle, key=rank.__getitem__))
        return roots

    def link_problems(self, roots: set[int]) -> list[tuple[str, int, Any, str]]:
        """Self-parents, orphans, cycles, missing kept entries and label targets, in file order."""
        found: list[tuple[str, int, Any, str]] = []
        last, ids, parents, names = self._last, self._ids, self._parents, self._names
        for position, parent in enumerate(parents):
            line = self.lines[position]
            number = ids[position]
            if parent >= 0:
                entry_id = self._entry_id(position)
                if parent == number:
                    found.append(("self-parent", line, entry_id, "the entry is its own parent"))
                elif last[parent] < 0:
                    found.append(("orphan", line, entry_id, f"parent {names[parent]} does not exist"))
                elif number >= 0 and number in roots and last[number] == position:
                    found.append(("cycle", line, entry_id, f"parent links from {entry_id} loop back to it"))
            if position in self._kept and not self._indexed(self._kept[position]):
                found.append(
                    (
                        "missing-kept-entry",
                        line,
                        self._entry_id(position),
                        f"firstKeptEntryId {self._kept[position]} does not exist",
                    )
                )
            if position in self._targets and not self._indexed(self._targets[position]):
                found.append(
                    (
                        "label-target-missing",
                        line,
                        self._entry_id(position),
                        f"label target {self._targets[position]} does not exist",
                    )
                )
        return found

    def _children(self, roots: set[int]) -> tuple[list[int], array[int], array[int]]:
        """Root positions in file order, and the child positions of each id number (compressed:
        those of number ``n`` are ``children[start[n]:start[n + 1]]``, in file order)."""
        last, ids, parents = self._last, self._ids, self._parents
        attached = array("i", [-1]) * len(parents)  # position -> the number it hangs under
        counts = array("i", bytes(4 * (len(self._names) + 1)))
        root_positions: list[int] = []
        for position, parent in enumerate(parents):
            number = ids[position]
            if parent < 0 or parent == number or (number >= 0 and number in roots) or last[parent] < 0:
                root_positions.append(position)
            else:
                attached[position] = parent
                counts[parent + 1] += 1
        start = counts
        for number in range(1, len(start)):
            start[number] += start[number - 1]
        fill = array("i", start)
        children = array("i", bytes(4 * len(parents)))
        for position, parent in enumerate(attached):
            if parent >= 0:
                children[fill[parent]] = position
                fill[parent] += 1
        return root_positions, start, children

    def tool_issues(self, roots: set[int]) -> list[ToolIssue]:
        """Calls without a result on some branch below them, results without a call before them
        (roots and children in file order: see the module's docstring on duplicated ids)."""
        root_positions, start, children = self._children(roots)
        found: dict[tuple[Any, str, str], ToolIssue] = {}
        entered = _EnteredMarks(len(self._names))  # each node is walked once (see above)
        for root in root_positions:
            self._walk(root, start, children, found, entered)
        return list(found.values())

    def _node(self, position: int) -> tuple[int, int]:
        """``(node key, position of the entry it shows)``: an id's node shows its last entry."""
        number = self._ids[position]
        return (number, self._last[number]) if number >= 0 else (-2 - position, position)

    def _walk(
        self,
        root: int,
        start: array[int],
        children: array[int],
        found: dict[tuple[Any, str, str], ToolIssue],
        entered: _EnteredMarks,
    ) -> None:
        open_calls: dict[str, tuple[int, str | None]] = {}  # call id -> (position, tool name)
        answered: dict[str, int] = {}
        pending: dict[str, None] = {}
        # Per level of the current path, what to undo on the way back up (one shared empty tuple
        # for the many levels that change nothing); the stack holds ``position`` to enter a node
        # and ``-1 - position`` to leave it (a path can be as long as the file).
        undo: list[Sequence[tuple[bool, str]]] = []
        stack: list[int] = [root]
        while stack:
            occurrence = stack.pop()
            entering = occurrence >= 0
            if not entering:
                occurrence = -1 - occurrence
            key, shown = self._node(occurrence)
            if not entering:
                for is_call, call_id in undo.pop():
                    if is_call:
                        open_calls.pop(call_id, None)
                        pending.pop(call_id, None)
                    else:
                        answered[call_id] -= 1
                        if not answered[call_id] and call_id in open_calls:
                            pending[call_id] = None
                continue
            if not entered.enter(key):
                continue
            changes: list[tuple[bool, str]] = []
            for call_id, name in self._calls.get(shown, ()):
                if call_id not in open_calls:
                    open_calls[call_id] = (shown, name)
                    if not answered.get(call_id):
                        pending[call_id] = None
                    changes.append((True, call_id))
            result = self._results.get(shown)
            if result is not None:
                call_id, tool_name = result
                if call_id not in open_calls:
                    entry_id = self._entry_id(shown) if self._ids[shown] >= 0 else None
                    issue_key = (entry_id, call_id, "result-without-call")
                    errored = entry_id is not None and shown in self._errors
                    found[issue_key] = ToolIssue(entry_id, call_id, tool_name, issue_key[2], errored)
                answered[call_id] = answered.get(call_id, 0) + 1
                pending.pop(call_id, None)
                changes.append((False, call_id))
            undo.append(changes or ())
            stack.append(-1 - occurrence)
            first, stop = (start[key], start[key + 1]) if key >= 0 else (0, 0)
            if first == stop:
                for call_id in pending:
                    call_position, name = open_calls[call_id]
                    call_entry = self._entry_id(call_position) if self._ids[call_position] >= 0 else None
                    issue_key = (call_entry, call_id, "call-without-result")
                    errored = call_entry is not None and call_position in self._errors
                    found[issue_key] = ToolIssue(call_entry, call_id, name, issue_key[2], errored)
            stack.extend(children[place] for place in range(stop - 1, first - 1, -1))

    def line_of_id(self, entry_id: str | None) -> int | None:
        """The line of the entry the id index keeps for ``entry_id`` (its last one)."""
        number = self._number.get(entry_id) if entry_id is not None else None
        if number is None or self._last[number] < 0:
            return None
        return int(self.lines[self._last[number]])


class _EnteredMarks:
    """Which nodes the walk has entered: one byte per id number (a set of ints would cost ~60 bytes
    a node), a set for the few nodes without an id."""

    def __init__(self, numbers: int) -> None:
        self._numbered = bytearray(numbers)
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
