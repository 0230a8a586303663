"""The session-file scanner, pure-Python reference (and fallback) of ``_scanner_c.pyx``.

``scan(data, start, end, hooks, stateful)`` reads the lines of ``data[start:end]`` (``end`` just
after a newline) and builds the columns of an offset index over them: where each line is, its
parent's position, the context-state number and default setter of the path ending at it
(through ``hooks``, which owns the state table), the id column with its sorted CRC-32 hashes, the
parent ids named before any entry had them, the usage values of assistant messages and the
lines that hold the bytes ``\\u`` (``ESCAPE``). Only the entries the index needs whole (state
entries, labels, ``model_usage``, ``task`` tool results) are returned decoded
(``Scanned.special``).

This reference decodes every line with orjson (the full decoder) and reads the fields from the
dict: it *is* the meaning of the scan. The compiled scanner reads the same fields from the bytes
without building any object for an ordinary line, and hands every line it cannot read exactly to
orjson, so both return equal results or raise the same way on every input (a property test,
tests/perf/test_scanner.py, checks this on generated and mutated lines).

Raises ``orjson.JSONDecodeError`` for a line orjson rejects, and whatever ``hooks.irregular``
raises for a shape the index does not model (a line that is not an object, a duplicate id, a
parent named before its entry).

Internal module (the offset index's cold open); not part of the public API.
"""

from __future__ import annotations

import zlib
from array import array
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol

import orjson

__all__ = ["ESCAPE", "ScanHooks", "Scanned", "find", "scan"]

Entry = dict[str, Any]

#: The bytes whose lines a scan lists (``Scanned.escape_lines``): the ``\\u`` of a JSON escape,
#: which can spell any transform marker, so the offset index marks every line holding it. The
#: compiled scanner notes them as it reads each string; the index uses its list only while the
#: marker list's escape marker is these bytes (``store/_indexed/markers.py``).
ESCAPE = b"\\u"


class ScanHooks(Protocol):
    """What the scan asks its caller (the index builder, which owns the state table)."""

    def scan_state(
        self, position: int, entry: Entry, number: int, default: int, lookup: Callable[[str], int]
    ) -> tuple[int, int]:
        """The state number and default setter after the state entry or label ``entry`` at
        ``position`` (``lookup``: the position of an id among the entries before it, or -1)."""
        ...

    def scan_assistant(self, number: int, position: int) -> int:
        """The state number after an assistant message at ``position`` on a path in state
        ``number`` (the scan may reuse an answer equal to ``number`` for later messages)."""
        ...

    def scan_irregular(self, reason: str) -> NoReturn:
        """Raise: the file has a shape the index does not model."""
        ...


@dataclass
class Scanned:
    """The offset-index columns of the scanned lines (positions from 0)."""

    offsets: array[int]  # 'q'
    lengths: array[int]  # 'I'
    parents: array[int]  # 'i'
    state_ids: array[int]  # 'I'
    defaults: array[int]  # 'i'
    id_blob: bytes  # each id's JSON (``null``: no string id), comma-separated
    id_ends: array[int]  # 'I': end of each id in id_blob
    id_hashes: array[int]  # 'I': CRC-32 of each id's JSON, sorted
    dangling: set[str]  # parent ids named before any entry had them
    has_assistant: bool
    #: Entries the index reads whole, decoded, by position: state entries, labels, model_usage
    #: and task tool results.
    special: dict[int, Entry]
    usage_positions: array[int]  # 'i': assistant messages that have a "usage" key
    usage_values: list[Any]  # their usage values, in the same order
    #: 'i': the lines whose bytes hold ``ESCAPE`` (what the offset index's ``marked`` lines
    #: need besides the transform markers, found here instead of in one more pass over the file).
    escape_lines: array[int]


_MESSAGE, _MODEL_USAGE = "message", "model_usage"


def scan(data: bytes, start: int, end: int, hooks: ScanHooks, stateful: Collection[str]) -> Scanned:
    """Scan the lines of ``data[start:end]`` (module docstring)."""
    if start >= end:
        lines: list[bytes] = []
    else:
        if data[end - 1] != 0x0A:
            raise ValueError("a scan ends just after a newline")
        lines = data[start : end - 1].split(b"\n")
    count = len(lines)
    offsets, lengths = array("q", bytes(8 * count)), array("I", bytes(4 * count))
    parents, state_ids, defaults = array("i"), array("I"), array("i")
    positions: dict[str, int] = {}
    dangling: set[str] = set()
    special: dict[int, Entry] = {}
    usage_positions, usage_values = array("i"), []
    id_parts: list[bytes] = []
    stable: set[int] = set()  # state numbers an assistant message leaves unchanged
    has_assistant = False
    lookup = lambda entry_id: positions.get(entry_id, -1)  # noqa: E731
    previous: str | None = None
    number, default = 0, -1
    at = start
    for position, line in enumerate(lines):
        offsets[position], lengths[position] = at, len(line)
        at += len(line) + 1
        entry = orjson.loads(line)
        if type(entry) is not dict:
            hooks.scan_irregular("a line that is not an object")
        raw_id = entry.get("id")
        entry_id = raw_id if isinstance(raw_id, str) else None
        if entry_id is not None and (entry_id in positions or entry_id in dangling):
            hooks.scan_irregular("duplicate id or a parent named before its entry")
        raw_parent = entry.get("parentId")
        if previous is not None and isinstance(raw_parent, str) and raw_parent == previous:
            parent = position - 1
        else:
            parent = -1
            if isinstance(raw_parent, str) and raw_parent and raw_parent != entry_id:
                parent = positions.get(raw_parent, -1)
                if parent < 0:
                    dangling.add(raw_parent)
            number, default = (state_ids[parent], defaults[parent]) if parent >= 0 else (0, -1)
        kind = entry.get("type")
        if kind == _MESSAGE:
            message = entry.get("message")
            if isinstance(message, dict):
                role = message.get("role")
                if role == "assistant":
                    has_assistant = True
                    default = position
                    if number not in stable:
                        after = hooks.scan_assistant(number, position)
                        if after == number:
                            stable.add(number)
                        number = after
                    if "usage" in message:
                        usage_positions.append(position)
                        usage_values.append(message["usage"])
                elif role == "toolResult" and message.get("toolName") == "task":
                    special[position] = entry
        elif kind == _MODEL_USAGE:
            special[position] = entry
        elif isinstance(kind, str) and kind in stateful:
            special[position] = entry
            number, default = hooks.scan_state(position, entry, number, default, lookup)
        if entry_id is not None:
            positions[entry_id] = position
        previous = entry_id or None
        id_parts.append(orjson.dumps(entry_id))
        parents.append(parent)
        state_ids.append(number)
        defaults.append(default)
    id_ends = array("I")
    end_at = -1
    for part in id_parts:
        end_at += len(part) + 1
        id_ends.append(end_at)
    return Scanned(
        offsets,
        lengths,
        parents,
        state_ids,
        defaults,
        b",".join(id_parts),
        id_ends,
        array("I", sorted(map(zlib.crc32, id_parts))),
        dangling,
        has_assistant,
        special,
        usage_positions,
        usage_values,
        array("i", [position for position, line in enumerate(lines) if ESCAPE in line]),
    )


def find(data: bytes, needle: bytes, start: int = 0, end: int | None = None) -> int:
    """``data.find(needle, start, end)``: the reference of the compiled scanner's ``find`` (a
    whole-file search for a marker, through the C library's ``memmem``)."""
    return data.find(needle, start, end)
