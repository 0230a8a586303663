"""Strings numbered in order of first appearance, in a few flat buffers (issue 11 item 14).

``check`` of a large file must remember every entry id (and every tool call id) once, to find
duplicates, parents and pairs. A ``dict[str, int]`` costs about 130 bytes an id (the string object,
about 57 bytes for omp's 8 hex characters, and its dict slot), and the strings, allocated between
the short-lived objects of each decoded chunk, keep the allocator from returning memory. Here an id
costs its UTF-8 bytes plus about 24: the bytes go into one ``bytearray``, their end offsets and
hashes into ``array`` columns, and an open-addressing table of ``int32`` numbers finds them (at
most half full, probed the way CPython's dict probes, with Python's own randomised string hash, so
crafted ids cannot force long probe chains). Lookups compare the stored bytes, so two different
strings are never taken for one: the numbering is exact, as a dict's.

Its buffers are :class:`~omp_session.tools.columns.Column` objects of the caller's
:class:`~omp_session.tools.columns.ColumnStore`: in memory, or in temporary files beyond a size.

Internal module (``tools/check_stream.py``); not part of the public API.
"""

from __future__ import annotations

from omp_session.tools.columns import ColumnStore

__all__ = ["StringTable"]

_UNUSED = -1
_HASH_BITS = (1 << 64) - 1


def _encoded(text: str) -> bytes:
    # Lone surrogates (a cut emoji, issue 11 item 5) are valid in an id: keep them reversible.
    return text.encode("utf-8", "surrogatepass")


class StringTable:
    """Numbers ``0, 1, 2, ...`` for distinct strings, and the string of each number."""

    def __init__(self, slots: int = 8, store: ColumnStore | None = None) -> None:
        if slots < 2 or slots & (slots - 1):
            raise ValueError("slots must be a power of two, at least 2")
        self._store = store if store is not None else ColumnStore()
        self._text = self._store.column("B")  # the UTF-8 of every string, one after the other
        self._ends = self._store.column("q")  # number -> offset in _text just after its string
        self._hashes = self._store.column("q")  # number -> hash(string) (rehashing needs no decoding)
        self._slots = self._store.column("i", slots, _UNUSED)  # open addressing: slot -> number, or -1

    def __len__(self) -> int:
        return len(self._ends)

    def _probe(self, hashed: int, data: bytes) -> tuple[int, int]:
        """``(slot, number)`` of ``data``, or ``(free slot, -1)`` when it is not in the table."""
        self._store.step()  # a lookup reads a few pages at random: counted for a spilled store
        slots, ends = self._slots.cells, self._ends.cells
        hashes, text = self._hashes.cells, self._text.cells
        mask = len(self._slots) - 1
        perturb = hashed & _HASH_BITS
        slot = perturb & mask
        while True:
            number = slots[slot]
            if number == _UNUSED:
                return slot, _UNUSED
            if hashes[number] == hashed:
                start = ends[number - 1] if number else 0
                if text[start : ends[number]] == data:
                    return slot, number
            perturb >>= 5
            slot = (slot * 5 + 1 + perturb) & mask

    def find(self, text: str) -> int:
        """The number of ``text``, or ``-1`` if it was never added."""
        return self._probe(hash(text), _encoded(text))[1]

    def add(self, text: str) -> int:
        """The number of ``text``, numbering it now if it is new."""
        hashed = hash(text)
        data = _encoded(text)
        slot, number = self._probe(hashed, data)
        if number != _UNUSED:
            return number
        number = len(self._ends)
        self._text.extend_from(data)
        self._ends.append(len(self._text))
        self._hashes.append(hashed)
        self._slots.cells[slot] = number
        if 2 * len(self._ends) > len(self._slots):
            self._grow()
        return number

    def _grow(self) -> None:
        column = self._store.column("i", 2 * len(self._slots), _UNUSED)
        slots, mask, step = column.cells, len(column) - 1, self._store.step
        for number, hashed in enumerate(self._hashes.view()):
            step()  # a spilled table is rehashed with a bounded resident set too
            perturb = hashed & _HASH_BITS
            slot = perturb & mask
            while slots[slot] != _UNUSED:
                perturb >>= 5
                slot = (slot * 5 + 1 + perturb) & mask
            slots[slot] = number
        self._store.free(self._slots)
        self._slots = column

    def string(self, number: int) -> str:
        """The string numbered ``number``."""
        self._store.step()
        ends = self._ends.cells
        start = ends[number - 1] if number else 0
        return bytes(self._text.cells[start : ends[number]]).decode("utf-8", "surrogatepass")
