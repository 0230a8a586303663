"""Which load-side transforms a session file needs, and which of its lines they can change.

omp resolves blob references and sanitises OpenAI replay history on load, after whole-file tests
for their markers (``parse_session``). The offset index records the file's markers and the lines
that hold one (or a ``\\u`` escape that could spell one), so a lazy read transforms only those.

Internal module (the offset index and ``LazyStore``); not part of the public API.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence

from omp_session.format.transform import (
    BLOB_MARKER,
    COPILOT_MARKER,
    ESCAPE_MARKER,
    IMAGE_URL_MARKER,
    OPENAI_MARKER,
)

__all__ = ["BLOB_MARKER", "ESCAPE_MARKER", "OPENAI_MARKER", "Markers", "marked_lines"]

# The markers are format/transform.py's (the one list; a \\u escape can spell either marker, so
# such lines are always transformed).
#: The \\u escapes of a whole file, found by ``re``'s literal search: 2.5-3x faster than a loop
#: of ``bytes.find`` with this two-byte pattern in CPython 3.11, whose skip search gains little on
#: so short a needle (issue 12; 50 MB with 146k backslashes and no escape: 22 ms against 57 ms of
#: CPU, 35-43 against 94-120 ms on a loaded machine). Only a file with a transform marker and a
#: backslash (any \\n in a message's text) pays this scan; ``bytes.find`` stays faster for the
#: longer markers (``image_url``: 58 against 85 ms).
_ESCAPE_SEARCH = re.compile(re.escape(ESCAPE_MARKER))


class Markers:
    """Which load-side transforms the file needs (the same whole-file tests as parse_session).

    ``copilot``: the file names ``github-copilot``, the only provider whose OpenAI replay omp 18
    drops on load; with ``openai`` too, whether that makes a rewrite depends on which lines hold
    them, which only a full load knows (fast_open.py). Looked for only where ``openai`` was found
    (``None``: not looked for; a scan of a big file costs as much as each marker's)."""

    def __init__(self, blob: bool, image_url: bool, openai: bool, copilot: bool | None = None) -> None:
        self.blob, self.image_url, self.openai, self.copilot = blob, image_url, openai, copilot

    @classmethod
    def of(cls, data: bytes, end: int | None = None) -> Markers:
        """The markers found in ``data[:end]`` (without copying it)."""
        stop = len(data) if end is None else end
        openai = data.find(OPENAI_MARKER, 0, stop) >= 0
        return cls(
            data.find(BLOB_MARKER, 0, stop) >= 0,
            data.find(IMAGE_URL_MARKER, 0, stop) >= 0,  # kept even without blobs: a later tail may add one
            openai,
            data.find(COPILOT_MARKER, 0, stop) >= 0 if openai else None,
        )

    @property
    def any(self) -> bool:
        return self.blob or self.openai

    def merged(self, other: Markers) -> Markers:
        return Markers(
            self.blob or other.blob,
            self.image_url or other.image_url,
            self.openai or other.openai,
            True
            if self.copilot or other.copilot
            else None
            if None in (self.copilot, other.copilot)
            else False,
        )

    @property
    def replay_needs_full_load(self) -> bool:
        """Whether keeping OpenAI replay (omp 18) may still drop a ``github-copilot`` one (a part
        not searched for the name counts as naming it)."""
        return self.openai and self.copilot is not False

    def to_list(self) -> list[bool | None]:
        return [self.blob, self.image_url, self.openai, self.copilot]


def marked_lines(
    data: bytes,
    begin: int,
    end: int,
    offsets: Sequence[int],
    lengths: Sequence[int],
    shift: int,
    markers: Markers | None = None,
) -> list[int]:
    """Positions of the lines in ``data[begin:end]`` that hold a transform marker or a ``\\u``
    escape (only those can need ``LazyStore.transform``); line ``p`` starts at byte
    ``offsets[p] - shift`` of ``data``. ``markers``: those of that same range when the caller
    has them (a marker it lacks needs no second scan of the whole range)."""
    hits: list[int] = []
    # A \\u escape needs a backslash: one byte, found far faster than the two-byte pattern.
    escapes = data.find(b"\\", begin, end) >= 0
    wanted = [
        marker
        for marker, present in (
            (BLOB_MARKER, markers is None or markers.blob),
            (OPENAI_MARKER, markers is None or markers.openai),
        )
        if present
    ]
    for marker in wanted:
        at = data.find(marker, begin, end)
        while at >= 0:
            hits.append(at + shift)
            at = data.find(marker, at + 1, end)
    if escapes:  # (the same positions as a find loop: two distinct bytes cannot overlap)
        hits.extend(match.start() + shift for match in _ESCAPE_SEARCH.finditer(data, begin, end))
    found = set()
    for hit in hits:
        position = bisect_right(offsets, hit) - 1
        if position >= 0 and hit < offsets[position] + lengths[position]:
            found.add(position)
    return sorted(found)
