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

Internal module (``tools/check_stream.py``); not part of the public API.
"""

from __future__ import annotations

from array import array

__all__ = ["StringTable"]

_UNUSED = -1
_HASH_BITS = (1 << 64) - 1


def _encoded(text: str) -> bytes:
    # Lone surrogates (a cut emoji, issue 11 item 5) are valid in an id: keep them reversible.
    return text.encode("utf-8", "surrogatepass")


class StringTable:
    """Numbers ``0, 1, 2, ...`` for distinct strings, and the string of each number."""

    def __init__(self, slots: int = 8) -> None:
        if slots < 2 or slots & (slots - 1):
            raise ValueError("slots must be a power of two, at least 2")
        self._text = bytearray()  # the UTF-8 of every string, one after the other
        self._ends = array("q")  # number -> offset in _text just after its string
        self._hashes = array("q")  # number -> hash(string) (rehashing needs no decoding)
        self._slots = array("i", [_UNUSED]) * slots  # open addressing: slot -> number, or -1

    def __len__(self) -> int:
        return len(self._ends)

    def _probe(self, hashed: int, data: bytes) -> tuple[int, int]:
        """``(slot, number)`` of ``data``, or ``(free slot, -1)`` when it is not in the table."""
        slots, ends, hashes, text = self._slots, self._ends, self._hashes, self._text
        mask = len(slots) - 1
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
        self._text += data
        self._ends.append(len(self._text))
        self._hashes.append(hashed)
        self._slots[slot] = number
        if 2 * len(self._ends) > len(self._slots):
            self._grow()
        return number

    def _grow(self) -> None:
        slots = array("i", [_UNUSED]) * (2 * len(self._slots))
        mask = len(slots) - 1
        for number, hashed in enumerate(self._hashes):
            perturb = hashed & _HASH_BITS
            slot = perturb & mask
            while slots[slot] != _UNUSED:
                perturb >>= 5
                slot = (slot * 5 + 1 + perturb) & mask
            slots[slot] = number
        self._slots = slots

    def string(self, number: int) -> str:
        """The string numbered ``number``."""
        start = self._ends[number - 1] if number else 0
        return self._text[start : self._ends[number]].decode("utf-8", "surrogatepass")
