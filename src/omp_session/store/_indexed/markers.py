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

from omp_session.format import markers as marker_list
from omp_session.store import scanner
from omp_session.store.scanner import ESCAPE

__all__ = ["Markers", "marked_lines"]

# The markers are format/markers.py's (the one list, asked at each use; a \\u escape can spell
# either marker, so such lines are always transformed).
#: The \\u escapes of a whole file, found by ``re``'s literal search: 2.5-3x faster than a loop
#: of ``bytes.find`` with this two-byte pattern in CPython 3.11, whose skip search gains little on
#: so short a needle (issue 12; 50 MB with 146k backslashes and no escape: 22 ms against 57 ms of
#: CPU, 35-43 against 94-120 ms on a loaded machine). Only a file with a transform marker and a
#: backslash (any \\n in a message's text) pays this scan; ``bytes.find`` stays faster for the
#: longer markers (``image_url``: 58 against 85 ms).
_escape_search: dict[bytes, re.Pattern[bytes]] = {}


def _search_of(escape: bytes) -> re.Pattern[bytes]:
    search = _escape_search.get(escape)
    if search is None:
        search = _escape_search[escape] = re.compile(re.escape(escape))
    return search


#: A part this short is searched for ``github-copilot`` even without ``openai``: the search costs
#: nothing there, and a part not searched counts as naming it (the tail after a file's last newline,
#: usually empty, would otherwise leave every file with OpenAI replay to a full load under omp 18).
_SEARCHED_ANYWAY = 1 << 16


class Markers:
    """Which load-side transforms the file needs (the same whole-file tests as parse_session).

    ``copilot``: the file names ``github-copilot``, the only provider whose OpenAI replay omp 18
    drops on load; with ``openai`` too, whether that makes a rewrite depends on which lines hold
    them, which only a full load knows (fast_open.py). Looked for only where ``openai`` was found
    or the part is short (``None``: not looked for; a scan of a big file costs as much as each
    marker's)."""

    def __init__(self, blob: bool, image_url: bool, openai: bool, copilot: bool | None = None) -> None:
        self.blob, self.image_url, self.openai, self.copilot = blob, image_url, openai, copilot

    @classmethod
    def of(cls, data: bytes, end: int | None = None) -> Markers:
        """The markers found in ``data[:end]`` (without copying it)."""
        found = marker_list.current()
        stop = len(data) if end is None else end

        def finds(test: marker_list.Load) -> bool:
            return found.finds(test, data, 0, stop, scanner.find)

        openai = finds("openai")
        return cls(
            finds("blob"),
            finds("image_url"),  # kept even without blobs: a later tail may add one
            openai,
            finds("copilot") if openai or stop <= _SEARCHED_ANYWAY else None,
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
    escape_lines: Sequence[int] | None = None,
) -> list[int]:
    """Positions of the lines in ``data[begin:end]`` that hold a transform marker or a ``\\u``
    escape (only those can need ``LazyStore.transform``); line ``p`` starts at byte
    ``offsets[p] - shift`` of ``data``. ``markers``: those of that same range when the caller
    has them (a marker it lacks needs no second scan of the whole range). ``escape_lines``: the
    positions of the lines holding ``scanner.ESCAPE``, when a scan of the range listed them
    (``Scanned.escape_lines``): used while they are what the marker list calls the escape."""
    hits: list[int] = []
    load = marker_list.current().load
    escape = load.get("escape")
    listed = escape_lines if escape == ESCAPE else None  # (the scan's list serves this marker)
    # A \\u escape needs a backslash: one byte, found far faster than the two-byte pattern.
    escapes = escape is not None and listed is None and data.find(b"\\", begin, end) >= 0
    wanted = [
        load[test]
        for test, present in (
            ("blob", markers is None or markers.blob),
            ("openai", markers is None or markers.openai),
        )
        if present and test in load
    ]
    find = scanner.find
    for marker in wanted:
        at = find(data, marker, begin, end)
        while at >= 0:
            hits.append(at + shift)
            at = find(data, marker, at + 1, end)
    if escapes:  # (the same positions as a find loop: two distinct bytes cannot overlap)
        assert escape is not None
        hits.extend(match.start() + shift for match in _search_of(escape).finditer(data, begin, end))
    found = set(listed or ())
    for hit in hits:
        position = bisect_right(offsets, hit) - 1
        if position >= 0 and hit < offsets[position] + lengths[position]:
            found.add(position)
    return sorted(found)
