"""Building the offset index (see :mod:`omp_session.store._indexed.offsets`) from decoded records.

For every entry the builder records where its line is, its parent's *position* and the
"context state" of the path that ends at it: which entries a replay of ``_scan_state``
(:mod:`omp_session.model.context`) needs to give the same thinking level, models, rules, MCP selection,
service tier, mode and last compaction as a replay of the whole path. That lets the context of
any leaf be built from a handful of lines plus the lines after the last compaction. Which entry
types those are, which state each sets and how its entries are kept is the one table of
context-state rules, ``STATE_RULES`` in :mod:`omp_session.model.context` (read when a builder is
made and per entry): this module adds no rule of its own, only the ways to keep them (``Keep``).

The model is exact only for files whose parent links all point backwards at unique ids. Anything
else (a duplicate id, a parent named before its entry appears, a value ``_scan_state`` would fail
on) marks the index *complex* and the session is loaded in full, as before.

Internal module (part of ``SessionManager.open``); not part of the public API.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

import orjson

from omp_session.model.context import STATE_RULES, Keep
from omp_session.model.usage import UsageStatistics

if TYPE_CHECKING:
    from omp_session.store.scanner import Scanned

__all__ = [
    "EMPTY_STATE",
    "ComplexSession",
    "IndexBuilder",
    "ModelSlot",
    "State",
    "line_spans",
    "stateful_types",
]

Entry = dict[str, Any]
ModelSlot = tuple[Any, int, int]  # (role key, first setter, last setter; -1 for "default")


class ComplexSession(Exception):
    """Internal signal: the file has a shape the index does not model; load it in full instead.

    Caught by the open path; never reaches a caller of the library.
    """


class State(NamedTuple):
    """Positions (-1: none) of the entries the context state of a path depends on."""

    thinking: int = -1
    service_tier: int = -1
    mcp: int = -1
    mode: int = -1
    compaction: int = -1
    models: tuple[ModelSlot, ...] = ()
    ttsr: tuple[int, ...] = ()  # entries that added at least one new rule, in path order
    rules: tuple[Any, ...] = ()  # the rules seen so far (to find the next contributor)

    def positions(self) -> list[int]:
        """Every position this state names (the ``"default"`` model's last setter is separate)."""
        found = [self.thinking, self.service_tier, self.mcp, self.mode, self.compaction, *self.ttsr]
        for _key, first, last in self.models:
            found.extend((first, last))
        return [position for position in found if position >= 0]

    def to_json(self) -> bytes:
        try:
            return orjson.dumps([*self[:5], [list(slot) for slot in self.models], self.ttsr, self.rules])
        except TypeError as exc:  # a key or rule orjson cannot write exactly (huge integer)
            raise ComplexSession(f"state not serialisable: {exc}") from None

    @classmethod
    def from_json(cls, data: bytes) -> State:
        thinking, tier, mcp, mode, compaction, models, ttsr, rules = orjson.loads(data)
        slots = tuple((key, first, last) for key, first, last in models)
        return cls(thinking, tier, mcp, mode, compaction, slots, tuple(ttsr), tuple(rules))


EMPTY_STATE = State()


def _with_model(state: State, key: Any, position: int, is_default: bool) -> State:
    # Dict semantics of _scan_state: the first setter fixes the key's place, the last its value.
    for index, (known, first, _last) in enumerate(state.models):
        if known == key:
            if is_default:
                return state  # the "default" value lives in the defaults column
            slots = list(state.models)
            slots[index] = (known, first, position)
            return state._replace(models=tuple(slots))
    return state._replace(models=(*state.models, (key, position, -1 if is_default else position)))


def _with_items(state: State, items: Sequence[Any], position: int) -> State:
    # An ordered set: the entry is kept if it adds an item the path has not seen.
    new: list[Any] = []
    for item in items:
        if item not in state.rules and item not in new:
            new.append(item)
    if not new:
        return state
    return state._replace(ttsr=(*state.ttsr, position), rules=(*state.rules, *new))


class IndexBuilder:
    """Accumulates the columns of an offset index; ``add`` one entry at a time in file order."""

    def __init__(self) -> None:
        self.offsets: list[int] = []
        self.lengths: list[int] = []
        self.parents: list[int] = []
        self.state_ids: list[int] = []
        self.defaults: list[int] = []
        self.ids: list[str | None] = []  # the id of each entry (None: none that is a string)
        #: Entries indexed before this builder's ``ids`` (an extension of a stored index: its ids
        #: stay in the stored id column, and ``id_positions`` looks them up there).
        self.base = 0
        self.states: list[State] = [EMPTY_STATE]
        self._state_numbers: dict[State, int] = {EMPTY_STATE: 0}
        #: State numbers an assistant message leaves unchanged (their "default" slot exists).
        self._after_assistant: dict[int, int] = {}
        self.id_positions: MutableMapping[str, int] = {}
        self.dangling: set[str] = set()  # parent ids named before any entry had them
        self.labels: list[int] = []
        self.kept: dict[int, int] = {}  # compaction position -> position of its first kept entry
        #: The entry types ``_apply`` reads (the state rules' as the table is now, and labels).
        self.stateful_types = stateful_types()
        #: Positions of the state entries and labels this builder indexed (``stateful_types``).
        self.stateful: list[int] = []
        self.usage = UsageStatistics()
        self.has_assistant = False
        #: The id column (blob, ends, sorted hashes) when a scan built it (``adopt``).
        self.id_column: tuple[bytes, Sequence[int], Sequence[int]] | None = None
        #: The positions of the lines holding ``scanner.ESCAPE``, when a scan listed them.
        self.escape_lines: Sequence[int] | None = None
        #: How ``_apply`` finds a compaction's first kept entry (a scan's own id table during it).
        self._lookup: Callable[[str], int] | None = None

    def __len__(self) -> int:
        return len(self.offsets)

    def state_number(self, state: State) -> int:
        number = self._state_numbers.get(state)
        if number is None:
            number = self._state_numbers[state] = len(self.states)
            self.states.append(state)
        return number

    def add(self, entry: Entry, offset: int, length: int) -> None:
        """Index one entry whose line starts at ``offset`` and is ``length`` bytes (no newline)."""
        self.add_all([entry], [offset], [length])

    def add_all(self, entries: Sequence[Entry], offsets: Sequence[int], lengths: Sequence[int]) -> None:
        """``add`` each entry (in file order) with the offset and length of its line.

        One loop with the per-entry work inlined: this is the hot path of a cold open. Only entries
        that change the state call out. ``AttributeError`` for a value that is not an object.
        """
        parents, state_ids, defaults, ids = self.parents, self.state_ids, self.defaults, self.ids
        id_positions, dangling, states, apply = self.id_positions, self.dangling, self.states, self._apply
        add_usage, after_assistant = self.usage.add_entry, self._after_assistant
        # An assistant message's usage is ``message["usage"]`` (UsageStatistics.add_entry):
        # added directly, without classifying the entry a second time.
        add_message_usage = self.usage.add_usage
        add_id, add_parent, add_state, add_default = (
            ids.append,
            parents.append,
            state_ids.append,
            defaults.append,
        )
        has_assistant, add_stateful = self.has_assistant, self.stateful.append
        stateful = self.stateful_types
        position = self.base + len(ids)
        # The entry before, whose child most entries are (omp appends to the leaf): its id (None
        # if it cannot be a parent), state and default setter, without a lookup.
        previous = ids[-1] if ids and ids[-1] else None
        number, default = (state_ids[-1], defaults[-1]) if ids else (0, -1)
        for entry in entries:
            raw_id = entry.get("id")
            entry_id = raw_id if isinstance(raw_id, str) else None
            if entry_id is not None and (entry_id in id_positions or (dangling and entry_id in dangling)):
                raise ComplexSession("duplicate id or a parent named before its entry")
            raw_parent = entry.get("parentId")
            if previous is not None and raw_parent == previous and isinstance(raw_parent, str):
                parent = position - 1  # (number and default are still the previous entry's)
            else:
                # A root: null, empty, non-string or self parent, as SessionIndex walks it.
                parent = -1
                if isinstance(raw_parent, str) and raw_parent and raw_parent != entry_id:
                    parent = id_positions.get(raw_parent, -1)
                    if parent < 0:
                        dangling.add(raw_parent)
                if parent >= 0:
                    number, default = state_ids[parent], defaults[parent]
                else:
                    number, default = 0, -1
            kind = entry.get("type")
            if kind == "message":
                message = entry.get("message")
                if isinstance(message, dict):
                    role = message.get("role")
                    if role == "assistant":
                        has_assistant = True
                        default = position
                        after = after_assistant.get(number)
                        if after is None:
                            before = states[number]
                            slotted = _with_model(before, "default", position, True)
                            if slotted is before:  # the "default" slot exists: the same for any position
                                after = after_assistant[number] = number
                            else:  # a new slot records this position as its first setter
                                after = self.state_number(slotted)
                        number = after
                        add_message_usage(message.get("usage"))
                    elif role == "toolResult" and message.get("toolName") == "task":
                        add_usage(entry)
            elif kind == "model_usage":  # omp 18's spend entries (UsageStatistics.add_entry)
                add_usage(entry)
            elif isinstance(kind, str) and kind in stateful:
                add_stateful(position)
                before = states[number]
                state, default = apply(entry, kind, position, before, default)
                if state is not before:  # most entries change nothing: no need to hash the state
                    number = self.state_number(state)
            if entry_id is not None:
                id_positions[entry_id] = position
            previous = entry_id or None
            add_id(entry_id)
            add_parent(parent)
            add_state(number)
            add_default(default)
            position += 1
        self.has_assistant = has_assistant
        self.offsets.extend(offsets)
        self.lengths.extend(lengths)

    def _apply(self, entry: Entry, kind: str, position: int, state: State, default: int) -> tuple[State, int]:
        """The state after ``entry``, of a kind in ``stateful_types``: what its rule of
        ``STATE_RULES`` keeps (with the ``DEFAULT_MODEL`` rule in ``add_all``'s loop), or a label."""
        rule = STATE_RULES.get(kind)
        if rule is None:  # (a label: the only other kind of stateful_types)
            self.labels.append(position)
            return state, default
        keep = rule.keep
        if keep is Keep.LAST:
            last: dict[str, Any] = {rule.key: position}  # (a State field: a test checks each key)
            state = state._replace(**last)
            if rule.key == "compaction":
                self._keep_from(entry, position)
        elif keep is Keep.BY_ROLE:
            role = rule.reads(entry) if rule.reads is not None else None
            if role is not None:
                is_default = role == "default"
                state = _with_model(state, role, position, is_default)
                default = position if is_default else default
        elif keep is Keep.NEW_ITEMS:
            state = _with_items(state, rule.reads(entry) if rule.reads is not None else (), position)
        return state, default

    def _keep_from(self, compaction: Entry, position: int) -> None:
        """Record where the kept entries of the compaction at ``position`` start (-1: unknown)."""
        kept = compaction.get("firstKeptEntryId")
        if not isinstance(kept, str):
            self.kept[position] = -1
        elif self._lookup is not None:
            self.kept[position] = self._lookup(kept)
        else:
            self.kept[position] = self.id_positions.get(kept, -1)

    # -- the scanner's hooks (store/scanner.py) and its result ---------------------------------

    def scan_state(
        self, position: int, entry: Entry, number: int, default: int, lookup: Callable[[str], int]
    ) -> tuple[int, int]:
        """``add_all``'s branch for an entry of a ``stateful_types`` kind, for the scanner."""
        self._lookup = lookup
        self.stateful.append(position)
        before = self.states[number]
        state, default = self._apply(entry, entry["type"], position, before, default)
        if state is not before:
            number = self.state_number(state)
        return number, default

    def scan_assistant(self, number: int, position: int) -> int:
        """``add_all``'s state change for an assistant message, for the scanner."""
        after = self._after_assistant.get(number)
        if after is None:
            before = self.states[number]
            slotted = _with_model(before, "default", position, True)
            if slotted is before:
                after = self._after_assistant[number] = number
            else:
                after = self.state_number(slotted)
        return after

    def scan_irregular(self, reason: str) -> NoReturn:
        raise ComplexSession(reason)

    def adopt(self, scanned: Scanned) -> None:
        """Take the columns of a scan of every entry (this builder is fresh, its hooks were the
        scan's), and add the usage totals in file order, as ``add_all`` would have."""
        assert not self.offsets and self.base == 0
        self._lookup = None
        self.offsets, self.lengths = scanned.offsets, scanned.lengths  # type: ignore[assignment]
        self.parents, self.state_ids = scanned.parents, scanned.state_ids  # type: ignore[assignment]
        self.defaults = scanned.defaults  # type: ignore[assignment]
        self.id_column = (scanned.id_blob, scanned.id_ends, scanned.id_hashes)
        self.dangling = scanned.dangling
        self.escape_lines = scanned.escape_lines
        self.has_assistant = scanned.has_assistant
        usage, special = self.usage, scanned.special
        add_entry = usage.add_entry
        positions, values = scanned.usage_positions, scanned.usage_values
        # The compiled scanner's values stay in the file's bytes and are added in C
        # (``add_to(stats, begin, end)``); a list (the pure-Python scanner's) is added here.
        add_run = getattr(values, "add_to", None)
        if add_run is None:
            add_usage = usage.add_usage

            def add_run(stats: UsageStatistics, begin: int, end: int) -> None:
                for index in range(begin, end):
                    add_usage(values[index])

        # The entries that carry spend besides assistant messages, merged in by position.
        others = [p for p, e in special.items() if e.get("type") in _SPEND_TYPES]
        begin = 0
        for position in others:
            end = bisect_left(positions, position, begin)
            add_run(usage, begin, end)
            add_entry(special[position])
            begin = end
        add_run(usage, begin, len(positions))


def stateful_types() -> frozenset[str]:
    """Entry types ``_apply`` handles: those of the state rules but the ``DEFAULT_MODEL`` one
    (``message``, in ``add_all``'s loop and the scanner's message case), and labels (recorded for
    the file-wide label table). Read from the table when a builder is made."""
    rules = STATE_RULES.items()
    return frozenset(kind for kind, rule in rules if rule.keep is not Keep.DEFAULT_MODEL) | {"label"}


#: Entry types of ``Scanned.special`` that may carry spend (``UsageStatistics.add_entry``).
_SPEND_TYPES = frozenset({"message", "model_usage"})


def line_spans(data: bytes, line_numbers: Sequence[int], start_line: int = 1) -> Iterator[tuple[int, int]]:
    """``(offset, length)`` of each of ``line_numbers`` (ascending, 1-based from ``start_line``)
    in ``data``; a line without a final newline ends at the end of ``data``."""
    position, line = 0, start_line
    find = data.find
    for wanted in line_numbers:
        while line < wanted:
            position = find(b"\n", position) + 1
            line += 1
        end = find(b"\n", position)
        yield position, (end if end >= 0 else len(data)) - position
