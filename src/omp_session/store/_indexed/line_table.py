"""Where each entry of a session sits in its file, so that a whole-file rewrite copies the lines
of unchanged entries byte for byte instead of encoding them again (issue 11 item 6).

The open path records the table (``LoadedSession.lines``): the offset and length of each entry's
line, by the entry's position in the session's entry list. The write path adds the lines it
appends and, after a rewrite, the lines it wrote. A rewrite then asks :meth:`LineTable.span` for
each entry: a span means "these bytes of the current file are this entry's line".

When a span is trusted:

* the table belongs to the file as we last read or wrote it: a rewrite copies only after the
  changed-file check passed (``FileStorage.check_unchanged``) and checks again before its rename;
* the entry at that position is the very object that was read or written there (identity), where
  the open path kept the list; the lazy open (offset index) decodes entries on demand and has no
  list to keep, so there the table relies on the rule below alone;
* every operation that replaces entries in memory (``SessionState.reset``: a rollback, a discard,
  a new file) drops the table, and ``rewrite_entries`` (entries changed in place by the caller)
  encodes every entry.

Internal module (the manager's write path); not part of the public API.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["LineTable"]

Entry = dict[str, Any]


class LineTable:
    """``(offset, length)`` of the line of each entry position (the newline excluded)."""

    __slots__ = ("_added", "_entries", "_lengths", "_offsets")

    def __init__(
        self, offsets: Sequence[int], lengths: Sequence[int], entries: Sequence[Entry] | None = None
    ) -> None:
        """``entries``: the entries read from those lines, in the same order (checked by identity);
        ``None`` when the open path decodes them later (the lazy open)."""
        self._offsets = offsets
        self._lengths = lengths
        self._entries = entries
        #: Lines appended since, by the identity of their entry: ``id(entry)`` -> (entry, offset,
        #: length). (Not by position: counting the entries of a lazy index would load them all.)
        self._added: dict[int, tuple[Entry, int, int]] = {}

    def __len__(self) -> int:
        return len(self._offsets)

    @property
    def identified(self) -> bool:
        """Whether the table checks each entry's identity (else it was read lazily)."""
        return self._entries is not None

    def span(self, position: int, entries: Sequence[Entry]) -> tuple[int, int] | None:
        """Where the line of ``entries[position]`` is in the file, or ``None``: encode it. A
        lazily read table answers for its own lines without reading the entry."""
        if position < len(self._offsets):
            known = self._entries
            if known is None or known[position] is entries[position]:
                return self._offsets[position], self._lengths[position]
        entry = entries[position]
        added = self._added.get(id(entry))
        if added is not None and added[0] is entry:
            return added[1], added[2]
        return None

    def note_append(self, entry: Entry, offset: int, length: int) -> None:
        """``entry`` was just appended as the line at ``offset`` (it follows every other entry)."""
        self._added[id(entry)] = (entry, offset, length)
