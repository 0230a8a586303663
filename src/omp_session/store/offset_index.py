"""The offset index of a session file: where each entry's line is, and what its context needs.

**What it is.** A cache file, one per session, in ``<agent dir>/cache/offsets/`` (named by a hash
of the session's absolute path, so session directories hold only what omp writes and listings never
see it). For every entry it records the byte offset and length of its line, its id, its parent's
position and its *context state* (see :mod:`omp_session.store.index_builder`), plus the load issues, the
usage totals, the label entries and the header's place. With it, ``SessionManager.open`` builds the
context of the leaf from the few lines it needs instead of parsing the whole file.

**Trust.** The index covers the file up to the last newline it saw (``covered``). It is used only
if the file still has at least ``covered`` bytes and the same header line and the same bytes at 18
sampled places of the covered part (start, 16 evenly spaced blocks, the last 64 KiB); bytes
appended since are indexed on open (that is what makes it append-only). A file that changed since
it was indexed (other size or times) must also still have the CRC-32 of the whole covered part
recorded when it was indexed: another program may have edited lines in place *and* appended, and
the usage totals, counted from every line, are not validated by any read (issue 11 item 8). An
unchanged file (the warm open) is not read for it. Every line read through
it is checked again (it sits between newlines, decodes to an object and has the recorded id).
Anything else (missing, truncated, corrupt, another format) and the file is loaded in full and the
index rebuilt. Deleting it changes no result, only the time ``open`` takes.

Layout: ``MAGIC``, a 4-byte length and a JSON meta object, the binary columns named in the meta,
and a CRC-32 of everything after the magic.

Internal module (part of ``SessionManager.open``); not part of the public API.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import sys
import time
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, islice
from pathlib import Path
from typing import Any

import orjson

from omp_session.format.codec import LineIssue
from omp_session.store.index_builder import ComplexSession, IndexBuilder, State
from omp_session.store.paths import agent_dir

__all__ = [
    "FORMAT_VERSION",
    "MAGIC",
    "MIN_INDEXED_BYTES",
    "RACY_NS",
    "OffsetIndex",
    "changed_in_place",
    "drop_index",
    "file_state",
    "fingerprint",
    "index_path",
    "read_index",
    "write_index",
]

MAGIC = b"OMPIDX\x00\x01"
FORMAT_VERSION = 4  # 4: the sorted id-hash column
#: Files smaller than this are simply read in full (the index would save little).
MIN_INDEXED_BYTES = 256 * 1024
_SAMPLE = 4096
_TAIL_SAMPLE = 65536
# Only the offsets need 64 bits (they come first, so every column stays aligned).
_COLUMNS = (("offsets", "q"), ("lengths", "I"), ("parents", "i"), ("state_ids", "I"), ("defaults", "i"))


def index_path(session_path: Path | str) -> Path:
    """Where the index of ``session_path`` lives (under the agent dir, keyed by absolute path)."""
    key = hashlib.blake2b(os.fsencode(os.path.abspath(session_path)), digest_size=16).hexdigest()
    return agent_dir() / "cache" / "offsets" / f"{key}.idx"


def fingerprint(read: Callable[[int, int], bytes], covered: int, header_line: bytes) -> str:
    """A hash of the header line and of sampled blocks of the first ``covered`` bytes;
    ``read(size, offset)`` reads the file (``os.pread`` with a descriptor, or a slice)."""
    digest = hashlib.blake2b(header_line, digest_size=16)
    digest.update(covered.to_bytes(8, "little"))
    starts = [0, *(covered * k // 17 for k in range(1, 17)), max(0, covered - _TAIL_SAMPLE)]
    for start in starts:
        size = min(_TAIL_SAMPLE if start == starts[-1] else _SAMPLE, covered - start)
        block = read(size, start)
        if len(block) != size:
            return ""  # the file is shorter than the index says
        digest.update(block)
    return digest.hexdigest()


#: A file modified this recently when it was indexed may be modified again within the same tick of
#: the file system's clock, which the recorded times would not show ("racy", as git calls it).
RACY_NS = 2_000_000_000
_CRC_CHUNK = 8 << 20


def _crc(read: Callable[[int, int], bytes], size: int) -> int:
    # CRC-32 of the first ``size`` bytes, read in chunks (no copy of a large file at once).
    crc, at = 0, 0
    while at < size:
        block = read(min(_CRC_CHUNK, size - at), at)
        if not block:
            return -1  # shorter than it was: never the recorded CRC
        crc, at = zlib.crc32(block, crc), at + len(block)
    return crc


def file_state(stat: os.stat_result, prefix_crc: int) -> dict[str, Any]:
    """What the index records of the file it describes (issue 11 item 8): its size and its
    modification and change times in nanoseconds, ``prefix_crc`` (the CRC-32 of the covered part,
    computed by the caller where the bytes pass anyway) and, when the file was modified within
    ``RACY_NS`` of now, that CRC again as ``racy_crc``, since another edit in the same clock tick
    would leave the times as they are."""
    racy = time.time_ns() - max(stat.st_mtime_ns, stat.st_ctime_ns) < RACY_NS
    return {
        "stat": [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns],
        "prefix_crc": prefix_crc,
        "racy_crc": prefix_crc if racy else None,
    }


def changed_in_place(meta: dict[str, Any], stat: os.stat_result, read: Callable[[int, int], bytes]) -> bool:
    """Whether the file was changed since it was indexed other than by appending (then the index
    may describe other content: the usage totals, the state of an entry no read validates).

    Same size but other times: an edit in place (or a ``touch``; the index is rebuilt once).
    Shorter: truncated. Longer: appended, which an index allows (the appended lines are
    indexed on open), but maybe edited in place as well: the covered part must still have the
    CRC recorded for it (one read of it, on the first open after the file grew; the index then
    written records the new size). A racy index (see :func:`file_state`) is checked against the
    CRC of what it covers."""
    recorded = meta.get("stat")
    if not isinstance(recorded, list) or len(recorded) != 3:
        return True  # an index written before these were recorded: rebuild it once
    size, mtime, ctime = recorded
    if stat.st_size < size or (
        stat.st_size == size and [stat.st_mtime_ns, stat.st_ctime_ns] != [mtime, ctime]
    ):
        return True
    if stat.st_size > size:
        recorded_crc = meta.get("prefix_crc")
        return type(recorded_crc) is not int or _crc(read, int(meta["covered"])) != recorded_crc
    racy = meta.get("racy_crc")
    return racy is not None and _crc(read, int(meta["covered"])) != racy


@dataclass
class OffsetIndex:
    """The decoded index of one session file (columns as sequences of ints)."""

    meta: dict[str, Any]
    offsets: Sequence[int]
    lengths: Sequence[int]
    parents: Sequence[int]
    state_ids: Sequence[int]
    defaults: Sequence[int]
    id_ends: Sequence[int]
    id_blob: bytes
    state_ends: Sequence[int]
    state_blob: bytes
    #: CRC-32 of each id's JSON bytes, sorted: "is this id here?" by bisection, without the ids.
    id_hashes: Sequence[int] = ()
    _states: dict[int, State] = field(default_factory=dict)

    # -- meta accessors --------------------------------------------------------------------------

    @property
    def covered(self) -> int:
        return int(self.meta["covered"])

    @property
    def lines(self) -> int:
        return int(self.meta["lines"])

    @property
    def header_span(self) -> tuple[int, int]:
        offset, length = self.meta["header"]
        return int(offset), int(length)

    def __len__(self) -> int:
        return len(self.offsets)

    def issues(self) -> list[LineIssue]:
        return [LineIssue(*issue) for issue in self.meta["issues"]]

    # -- per-entry lookups -----------------------------------------------------------------------

    def id_bytes(self, position: int) -> bytes:
        start = self.id_ends[position - 1] + 1 if position else 0
        return self.id_blob[start : self.id_ends[position]]

    def id_at(self, position: int) -> str | None:
        """The id of the entry at ``position`` (``None``: it has no string id)."""
        return orjson.loads(self.id_bytes(position))  # type: ignore[no-any-return]

    def ids_between(self, start: int, stop: int) -> list[str | None]:
        """The ids of the entries from ``start`` to before ``stop`` (one decode of their slice of
        the id column)."""
        if start >= stop:
            return []
        begin = self.id_ends[start - 1] + 1 if start else 0
        return orjson.loads(b"[" + self.id_blob[begin : self.id_ends[stop - 1]] + b"]")  # type: ignore[no-any-return]

    def state(self, position: int) -> State:
        number = self.state_ids[position]
        state = self._states.get(number)
        if state is None:
            start = self.state_ends[number - 1] + 1 if number else 0
            state = self._states[number] = State.from_json(self.state_blob[start : self.state_ends[number]])
        return state

    def context_positions(self, position: int) -> list[int]:
        """Entries a context replay at ``position`` needs besides the path after the compaction."""
        found = self.state(position).positions()
        if self.defaults[position] >= 0:
            found.append(self.defaults[position])
        return found

    def find_id(self, entry_id: str) -> int | None:
        """Position of the entry with ``entry_id``, by a search of the id column's bytes (ids are
        unique in an indexed file). An element of the column is ``"…"`` JSON between commas, and a
        quote inside one is always escaped, so a match that starts after a comma and ends before
        one is a whole element."""
        try:
            needle = orjson.dumps(entry_id)
        except TypeError:
            return None  # an id orjson cannot write is never indexed
        if not self._may_hold(needle):
            return None  # the usual answer for a fresh id: a few comparisons, no scan
        blob, at = self.id_blob, -1
        while (at := blob.find(needle, at + 1)) >= 0:
            end = at + len(needle)
            if (at == 0 or blob[at - 1] == 44) and (end == len(blob) or blob[end] == 44):
                position = bisect_left(self.id_ends, end)
                return position if position < len(self.id_ends) and self.id_ends[position] == end else None
        return None

    def may_hold_id(self, entry_id: str) -> bool:
        """False if no entry has ``entry_id`` (by bisection of the id-hash column); true means
        probably (a CRC-32 collision is possible: ``find_id`` tells for sure)."""
        try:
            return self._may_hold(orjson.dumps(entry_id))
        except TypeError:
            return False  # an id orjson cannot write is never indexed

    def _may_hold(self, encoded_id: bytes) -> bool:
        hashes, digest = self.id_hashes, zlib.crc32(encoded_id)
        at = bisect_left(hashes, digest)
        return at < len(hashes) and hashes[at] == digest

    def all_ids(self) -> list[Any]:
        """Every entry's id in position order (``None`` where an entry has no string id)."""
        if not self.id_blob:
            return []
        return list(orjson.loads(b"[" + self.id_blob + b"]"))

    # -- (de)serialisation -----------------------------------------------------------------------

    @classmethod
    def from_builder(cls, builder: IndexBuilder, meta: dict[str, Any]) -> OffsetIndex:
        """Freeze ``builder`` (plus file-level ``meta``) into an index."""
        id_blob, id_parts = _id_column(builder.ids)
        return cls._frozen(builder, meta, id_blob, _ends(id_parts), sorted(map(zlib.crc32, id_parts)))

    @classmethod
    def extended(cls, stored: OffsetIndex, builder: IndexBuilder, meta: dict[str, Any]) -> OffsetIndex:
        """The index of ``stored``'s entries plus those ``builder`` added after them (its ``ids``
        are the new entries' alone, ``base`` the stored count): the id column is extended rather
        than encoded and hashed again, so indexing an append costs what was appended, not the file."""
        new_blob, new_parts = _id_column(builder.ids)
        if not new_blob:
            id_blob, id_ends = stored.id_blob, array("I", stored.id_ends)
        elif not stored.id_blob:
            id_blob, id_ends = new_blob, _ends(new_parts)
        else:
            shift = len(stored.id_blob) + 1
            id_blob = stored.id_blob + b"," + new_blob
            id_ends = array("I", stored.id_ends)
            id_ends.extend(end + shift for end in _ends(new_parts))
        # Two sorted runs: the sort merges them in one pass.
        id_hashes = sorted([*stored.id_hashes, *sorted(map(zlib.crc32, new_parts))])
        return cls._frozen(builder, meta, id_blob, id_ends, id_hashes)

    @classmethod
    def _frozen(
        cls,
        builder: IndexBuilder,
        meta: dict[str, Any],
        id_blob: bytes,
        id_ends: Sequence[int],
        id_hashes: list[int],
    ) -> OffsetIndex:
        state_parts = [state.to_json() for state in builder.states]
        meta = {
            **meta,
            "labels": builder.labels,
            "kept": [[c, k] for c, k in builder.kept.items()],
            "dangling": sorted(builder.dangling),
            # As text from the stdlib: totals can be huge integers or infinite, which orjson mangles.
            "usage": json.dumps(builder.usage.to_state()),
            "has_assistant": builder.has_assistant,
        }
        return cls(
            meta,
            array("q", builder.offsets),
            array("I", builder.lengths),
            array("i", builder.parents),
            array("I", builder.state_ids),
            array("i", builder.defaults),
            id_ends,
            id_blob,
            _ends(state_parts),
            b"\n".join(state_parts),
            array("I", id_hashes),
        )

    def to_bytes(self) -> bytes:
        sections = [array(code, getattr(self, name)).tobytes() for name, code in _COLUMNS]
        sections += [array("I", self.id_ends).tobytes(), array("I", self.state_ends).tobytes()]
        sections += [self.id_blob, self.state_blob, array("I", self.id_hashes).tobytes()]
        meta = {**self.meta, "format": FORMAT_VERSION, "byteorder": sys.byteorder}
        meta["sections"] = [len(section) for section in sections]
        meta_bytes = _dumps_meta(meta, len(MAGIC) + 4)
        body = len(meta_bytes).to_bytes(4, "little") + meta_bytes + b"".join(sections)
        return MAGIC + body + zlib.crc32(body).to_bytes(4, "little")

    @classmethod
    def from_bytes(cls, raw: bytes) -> OffsetIndex | None:
        """Decode an index file; ``None`` for anything damaged or of another format."""
        if len(raw) < 16 or not raw.startswith(MAGIC):
            return None
        body = memoryview(raw)[len(MAGIC) : -4]
        if zlib.crc32(body) != int.from_bytes(raw[-4:], "little"):
            return None
        meta_length = int.from_bytes(body[:4], "little")
        try:
            meta = orjson.loads(body[4 : 4 + meta_length])
            sizes = meta["sections"]
            if meta.get("format") != FORMAT_VERSION or meta.get("byteorder") != sys.byteorder:
                return None
        except (orjson.JSONDecodeError, KeyError, TypeError):
            return None
        position, parts = 4 + meta_length, []
        for size in sizes:
            parts.append(body[position : position + size])
            position += size
        if len(parts) != len(_COLUMNS) + 5 or position != len(body):
            return None
        offsets, lengths = parts[0].cast("q"), parts[1].cast("I")
        parents, state_ids, defaults = parts[2].cast("i"), parts[3].cast("I"), parts[4].cast("i")
        id_ends, state_ends = parts[5].cast("I"), parts[6].cast("I")
        id_blob, state_blob = parts[7].tobytes(), parts[8].tobytes()
        return cls(
            meta,
            offsets,
            lengths,
            parents,
            state_ids,
            defaults,
            id_ends,
            id_blob,
            state_ends,
            state_blob,
            parts[9].cast("I"),
        )


def _id_column(ids: list[str | None]) -> tuple[bytes, list[bytes]]:
    """The ids as JSON separated by commas, and each id's JSON."""
    try:
        id_blob = orjson.dumps(ids)[1:-1]
    except TypeError:
        raise ComplexSession("an id orjson cannot write (lone surrogate)") from None
    id_parts = id_blob.split(b",") if id_blob else []
    if len(id_parts) != len(ids):  # an id holds a comma: encode them one by one
        id_parts = [orjson.dumps(entry_id) for entry_id in ids]
    return id_blob, id_parts


def _ends(parts: Sequence[bytes]) -> array[int]:
    # End offset of each part in b"\n".join(parts).
    return _ends_of_sizes(list(map(len, parts)))


def _ends_of_sizes(sizes: Sequence[int]) -> array[int]:
    # End offsets of parts of these sizes, joined with a one-byte separator.
    # The running sum of (size + 1), less the separator after the last part: all in C (the
    # running sum starts at -1, so that one pass over the sizes is enough).
    return array("I", islice(accumulate(map((1).__add__, sizes), initial=-1), 1, None))


def _dumps_meta(meta: dict[str, Any], prefix: int) -> bytes:
    # Padded with spaces (valid JSON) so that the columns after it are 8-byte aligned.
    data = orjson.dumps(meta)
    return data + b" " * (-(prefix + len(data)) % 8)


def read_index(session_path: Path | str) -> OffsetIndex | None:
    """The stored index of ``session_path``, or ``None`` if there is none usable."""
    try:
        raw = index_path(session_path).read_bytes()
    except OSError:
        return None
    return OffsetIndex.from_bytes(raw)


def write_index(session_path: Path | str, index: OffsetIndex) -> None:
    """Store ``index`` atomically (temp file + rename); failures are ignored: it is only a cache."""
    target = index_path(session_path)
    temp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    # TypeError/OverflowError: a value beyond the meta's JSON (a header version of 2**64, issue 11
    # item 7); such a file is simply loaded in full every time.
    with contextlib.suppress(OSError, TypeError, ValueError, OverflowError):
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            temp.write_bytes(index.to_bytes())
            os.replace(temp, target)
        finally:
            temp.unlink(missing_ok=True)


def drop_index(session_path: Path | str) -> None:
    """Delete the stored index of ``session_path`` (if any)."""
    with contextlib.suppress(OSError):
        index_path(session_path).unlink()
