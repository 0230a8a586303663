"""The offset index of a session file: where each entry's line is, and what its context needs.

**What it is.** A cache file, one per session, in ``<agent dir>/cache/offsets/`` (named by a hash
of the session's absolute path, so session directories hold only what omp writes and listings never
see it). For every entry it records the byte offset and length of its line, its id, its parent's
position and its *context state* (see :mod:`omp_session.store._indexed.builder`), plus the load issues, the
usage totals, the label entries and the header's place. With it, ``SessionManager.open`` builds the
context of the leaf from the few lines it needs instead of parsing the whole file.

**Trust** (:mod:`.index_trust`): the index is used only while the file still holds what it
describes, and every line read through it is checked again.

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
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate, islice
from pathlib import Path
from typing import Any

import orjson

from omp_session.errors import CorruptSessionError
from omp_session.format.codec import LineIssue
from omp_session.store._indexed.builder import ComplexSession, IndexBuilder, State
from omp_session.store._indexed.trust import changed_in_place, file_state, fingerprint
from omp_session.store.paths import agent_dir
from omp_session.store.regular import read_regular

__all__ = [
    "FORMAT_VERSION",
    "MAGIC",
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
FORMAT_VERSION = 5  # 4: the sorted id-hash column; 5: the github-copilot marker
# Only the offsets need 64 bits (they come first, so every column stays aligned).
_COLUMNS = (("offsets", "q"), ("lengths", "I"), ("parents", "i"), ("state_ids", "I"), ("defaults", "i"))


def _as_array(column: Sequence[int], code: str) -> array[Any]:
    # The column as an array of ``code`` items, itself when it already is one.
    return column if isinstance(column, array) and column.typecode == code else array(code, column)


def index_path(session_path: Path | str) -> Path:
    """Where the index of ``session_path`` lives (under the agent dir, keyed by absolute path)."""
    key = hashlib.blake2b(os.fsencode(os.path.abspath(session_path)), digest_size=16).hexdigest()
    return agent_dir() / "cache" / "offsets" / f"{key}.idx"


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
        return self.ids_between(0, len(self))

    # -- (de)serialisation -----------------------------------------------------------------------

    @classmethod
    def from_builder(cls, builder: IndexBuilder, meta: dict[str, Any]) -> OffsetIndex:
        """Freeze ``builder`` (plus file-level ``meta``) into an index."""
        if builder.id_column is not None:  # built by the scanner (store/scanner.py)
            id_blob, id_ends, id_hashes = builder.id_column
            return cls._frozen(builder, meta, id_blob, id_ends, list(id_hashes))
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
        id_hashes: Sequence[int],
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

    def to_parts(self) -> list[bytes | array[Any]]:
        """The index file as parts to write one after another (``to_bytes`` joins them): the
        columns go out as they are, not copied into one body first (a big session's index is
        megabytes, copied four times by joining)."""
        sections: list[bytes | array[Any]] = [_as_array(getattr(self, name), code) for name, code in _COLUMNS]
        sections += [_as_array(self.id_ends, "I"), _as_array(self.state_ends, "I")]
        sections += [self.id_blob, self.state_blob, _as_array(self.id_hashes, "I")]
        meta = {**self.meta, "format": FORMAT_VERSION, "byteorder": sys.byteorder}
        meta["sections"] = [memoryview(section).nbytes for section in sections]
        meta_bytes = _dumps_meta(meta, len(MAGIC) + 4)
        head = len(meta_bytes).to_bytes(4, "little") + meta_bytes
        crc = zlib.crc32(head)
        for section in sections:
            crc = zlib.crc32(section, crc)
        return [MAGIC, head, *sections, crc.to_bytes(4, "little")]

    def to_bytes(self) -> bytes:
        return b"".join(self.to_parts())

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
        except orjson.JSONDecodeError:
            return None
        if not _meta_is_whole(meta):  # (then the readers of the meta need no guard of their own)
            return None
        sizes = meta["sections"]
        position, parts = 4 + meta_length, []
        for size in sizes:
            parts.append(body[position : position + size])
            position += size
        if len(parts) != len(_COLUMNS) + 5 or position != len(body):
            return None
        try:
            offsets, lengths = parts[0].cast("q"), parts[1].cast("I")
            parents, state_ids, defaults = parts[2].cast("i"), parts[3].cast("I"), parts[4].cast("i")
            id_ends, state_ends = parts[5].cast("I"), parts[6].cast("I")
            hashes = parts[9].cast("I")
        except TypeError:  # a section whose length is no multiple of its item size
            return None
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
            hashes,
        )


#: The meta every reader relies on, key -> the JSON types its value may have (``bool`` counts as an
#: ``int`` in Python: the builder's own booleans are stored as such).
_META_SHAPE: dict[str, tuple[type, ...]] = {
    "format": (int,),
    "byteorder": (str,),
    "sections": (list,),
    "covered": (int,),
    "lines": (int,),
    "header": (list,),
    "markers": (list,),
    "issues": (list,),
    "version": (int, float),
    "file": (list,),
    "usage": (str,),
    "has_assistant": (bool,),
    "labels": (dict, list),
    "kept": (list,),
    "dangling": (list,),
    "stat": (list,),
}
_COMPLEX_SHAPE: dict[str, tuple[type, ...]] = {
    key: _META_SHAPE[key] for key in ("format", "sections", "covered")
}


def _meta_is_whole(meta: Any) -> bool:
    """Whether ``meta`` is an index meta of this format: every key its readers take, each of its
    type, and the section sizes non-negative integers. An index with a good checksum but another
    shape (written by another version of this code) is then simply not used."""
    if (
        not isinstance(meta, dict)
        or meta.get("format") != FORMAT_VERSION
        or meta.get("byteorder") != sys.byteorder
    ):
        return False
    # A file the index does not model keeps only why and how far (``complex``): it is read in full.
    shape = _COMPLEX_SHAPE if isinstance(meta.get("complex"), str) else _META_SHAPE
    for key, kinds in shape.items():
        if not isinstance(meta.get(key), kinds):
            return False
    sizes = meta["sections"]
    return all(type(size) is int and size >= 0 for size in sizes) and (
        shape is _COMPLEX_SHAPE or len(meta["header"]) == 2
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
        raw = read_regular(index_path(session_path))
    except (OSError, CorruptSessionError):
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
            with temp.open("wb") as handle:
                handle.writelines(index.to_parts())
            os.replace(temp, target)
        finally:
            temp.unlink(missing_ok=True)


def drop_index(session_path: Path | str) -> None:
    """Delete the stored index of ``session_path`` (if any)."""
    with contextlib.suppress(OSError):
        index_path(session_path).unlink()
