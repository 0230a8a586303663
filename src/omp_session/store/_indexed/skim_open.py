"""The cold open of a session with compactions: index a skim of every line, decode only the tail.

``fast_open._index_lines`` decodes every line in full (the parse floor) although, once the file
has a compaction, it keeps only the entries from the latest compaction's first kept entry on and
the state entries before it. Here every line is first decoded into a *skim*: msgspec reads only
``type``, ``id``, ``parentId`` and the message's ``role``, ``toolName`` and ``usage`` (as raw
bytes) into small dicts and skips the rest without building it (0.39x the parse floor for the
50 MB bench session, against about 0.9x). The index builder takes the skims as they are
(``IndexBuilder.add_all`` reads nothing else from a message entry), and the few entries it reads
more of (state entries and labels, ``model_usage``, ``task`` tool results) are decoded in full.
Then the lines from the latest compaction's first kept entry on are decoded in full, as the
one-pass open would have kept them (docs/performance.md, "The cold open").

**Exact or nothing.** The skim must never accept a line orjson rejects, or index a value other
than orjson's: a line the full load reads leniently or skips would then be indexed as a plain
entry. What differs between the two decoders is guarded:

* msgspec does not check skipped strings for valid UTF-8 (orjson rejects the line, the full load
  reads it leniently and records an issue): every chunk is checked by decoding it as UTF-8 (C).
* msgspec decodes integers beyond 64 bits exactly where orjson gives a float: the usage, the only
  numbers the index adds, is decoded by orjson from the raw bytes the skim kept.
* msgspec's nesting limit follows the interpreter's recursion limit (orjson's is 1023 levels,
  and Hypothesis alone raises the limit to 2017): a line that could be nested deeper than 1023
  levels (more than 1023 opening brackets, so longer than 2046 bytes) is never skimmed.
* A number too large for a float (``1e400``) in a skipped field, accepted by msgspec: orjson
  decodes every line of the kept tail itself, and a line before it is read through the index
  later with the same decoder as a full load, which reads that number as the full load does.

Anything else (any line msgspec rejects, a message that is not an object, no compaction after
all) returns ``None`` before the index is used, and the caller runs the one-pass open.

Internal module (part of ``SessionManager.open``); not part of the public API.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator
from itertools import accumulate, compress, repeat
from operator import eq
from typing import Any, TypedDict, cast

import msgspec
import orjson

from omp_session.store._indexed.builder import IndexBuilder

__all__ = ["COMPACTION_MARK", "skim_lines"]

Entry = dict[str, Any]

#: How omp writes the start of a compaction line; a file without it has no compaction worth a skim
#: (a match inside some text only costs the skim, which then finds no compaction and gives up).
COMPACTION_MARK = b'{"type":"compaction"'
#: orjson's deepest accepted nesting; msgspec's follows the recursion limit (module docstring).
_ORJSON_DEPTH = 1023


class _MessageSkim(TypedDict, total=False):
    role: Any
    toolName: Any
    usage: msgspec.Raw


class _EntrySkim(TypedDict, total=False):
    type: Any
    id: Any
    parentId: Any
    message: _MessageSkim


#: (Typed as giving plain dicts, which a TypedDict is: the builder reads them as entries.)
_skim = cast("Callable[[bytes], Entry]", msgspec.json.Decoder(_EntrySkim).decode)
_get = dict.get
_NO_MESSAGE: dict[str, Any] = {}  # only read
#: Entry types the builder reads beyond the skim besides its ``stateful_types`` (``UsageStatistics``).
_SPEND_TYPES = frozenset({"model_usage"})


class _NotSkimmable(Exception):
    """Internal: a line the skim cannot index exactly (the caller runs the one-pass open)."""


def skim_lines(
    data: bytes, start: int, end: int, builder: IndexBuilder, chunks: Iterator[tuple[int, int]]
) -> dict[int, Entry] | None:
    """Index the lines of ``data[start:end]`` (``chunks``: its ``(start, stop)`` ranges of whole
    lines) into ``builder`` from their skims, and return the entries the one-pass open keeps by
    position: the state entries and labels before the latest compaction's first kept entry, and
    every entry from there on, decoded in full. ``None`` (``builder`` then half-filled: discard
    it) when the skim cannot be exact or the file turns out to have no compaction."""
    states: dict[int, Entry] = {}
    try:
        for begin, stop in chunks:
            _skim_chunk(data, begin, stop, builder, states)
    except (_NotSkimmable, msgspec.DecodeError, orjson.JSONDecodeError, RecursionError, UnicodeDecodeError):
        return None
    if not builder.kept:
        return None  # no compaction indexed: the context needs every entry in full
    latest = max(builder.kept)
    floor = builder.kept[latest] if builder.kept[latest] >= 0 else latest
    stateful = builder.stateful
    tail = data[builder.offsets[floor] : end - 1].split(b"\n")
    try:
        kept = {position: states[position] for position in stateful[: bisect_left(stateful, floor)]}
        kept.update(zip(range(floor, len(builder)), map(orjson.loads, tail), strict=True))
    except (KeyError, orjson.JSONDecodeError):  # (KeyError: a state entry orjson typed otherwise)
        return None
    return kept


def _skim_chunk(data: bytes, begin: int, stop: int, builder: IndexBuilder, states: dict[int, Entry]) -> None:
    chunk = data[begin : stop - 1]
    stateful = builder.stateful_types
    str(chunk, "utf-8")  # UnicodeDecodeError for what orjson rejects and the skim would not
    lines = chunk.split(b"\n")
    skims = list(map(_skim, lines))  # each line on its own: never two as one value
    lengths = list(map(len, lines))
    for line in compress(lines, map((2 * _ORJSON_DEPTH).__lt__, lengths)):
        if line.count(b"[") + line.count(b"{") > _ORJSON_DEPTH:
            raise _NotSkimmable  # maybe deeper than orjson reads (see the module docstring)
    offsets = list(accumulate(map((1).__add__, lengths[:-1]), initial=begin))
    try:
        kinds = map((stateful | _SPEND_TYPES).__contains__, map(_get, skims, repeat("type")))
        in_full = list(compress(range(len(skims)), kinds))
    except TypeError:  # an unhashable "type": the one-pass open's rules
        raise _NotSkimmable from None
    messages = list(map(_get, skims, repeat("message"), repeat(_NO_MESSAGE)))
    in_full += compress(range(len(skims)), map(eq, map(_get, messages, repeat("toolName")), repeat("task")))
    first = len(builder)
    for index in in_full:
        entry = skims[index] = orjson.loads(lines[index])
        if type(entry) is not dict:
            raise _NotSkimmable
        if entry.get("type") in stateful:  # (kept until the end: the others are not needed)
            states[first + index] = entry
    for message in compress(messages, map(dict.__contains__, messages, repeat("usage"))):
        if type(message["usage"]) is msgspec.Raw:  # (not a message decoded in full above)
            message["usage"] = orjson.loads(memoryview(message["usage"]))
    builder.add_all(skims, offsets, lengths)
