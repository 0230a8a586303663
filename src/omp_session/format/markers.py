"""The one list of markers: the bytes whose presence in a line means a transform may change its entry.

Most lines need no transform, so every path that could run one first looks for these bytes and
skips the lines (or files) that hold none:

- the persistence transform (``prepare_for_disk``: an image to the blob store, an ``image_url``,
  the streaming scratch keys a dialect drops);
- a whole-file rewrite, which copies an unchanged entry's stored line unless a transform may make
  its line differ from it (``store/_indexed/rewrite.py``: the persistence markers, the OpenAI
  replay dropped in memory on load, omp 18.3's spilled MCP ``structuredContent``, a CR, since
  rewrites write LF);
- the load transforms: ``parse_session``'s whole-file tests (a blob reference is resolved, in an
  ``image_url`` too when the file has one; OpenAI replay history is sanitised), and the offset
  index's lines to transform (``store/_indexed/markers.py``, ``lines.py``), where a ``\\u`` escape
  can spell a marker and a file naming ``github-copilot`` may need a full load under omp 18.

Every reader asks :func:`current` when it runs, so the list is read in one place: a test removes
one entry from ``MARKERS`` and every path sees the change (tests/store/test_markers_once.py).

Internal module (the transforms and the file store); not part of the public API.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, NamedTuple

from omp_session.format.blob_refs import BLOB_PREFIX

__all__ = ["COPILOT_PROVIDER", "MARKERS", "Find", "Marker", "MarkerSets", "current"]

#: The provider whose OpenAI replay omp 18 still drops on load: it rejects replayed assistant-side
#: history on a resumed session (HTTP 401). A file that names it may need a full load under omp 18.
COPILOT_PROVIDER = "github-copilot"

#: A search as ``bytes.find(data, needle, start, end)`` does it.
Find = Callable[[bytes, bytes, int, int], int]

#: What a marker found by a load-side test tells (``MarkerSets.load``).
Load = Literal["blob", "image_url", "openai", "copilot", "escape"]


class Marker(NamedTuple):
    """One marker and the transforms whose search it is part of."""

    text: bytes
    #: ``prepare_for_disk`` transforms a line that holds it (one search of the encoded line).
    persist: bool = False
    #: A whole-file rewrite encodes a line that holds it again instead of copying it.
    rewrite: bool = False
    #: The load-side test it is (``None``: none).
    load: Load | None = None


MARKERS: tuple[Marker, ...] = (
    Marker(b'"image"', persist=True, rewrite=True),  # an image block ("type":"image")
    Marker(b'"image_url"', persist=True, rewrite=True),
    Marker(b'"partialJson"', persist=True, rewrite=True),  # streaming scratch keys
    Marker(b'"jsonlEvents"', persist=True, rewrite=True),
    Marker(b"openaiResponsesHistory", rewrite=True, load="openai"),
    Marker(b'"structuredContent"', rewrite=True),  # omp 18.3 drops it from a spilled MCP result
    Marker(b"\r", rewrite=True),
    Marker(BLOB_PREFIX.encode("ascii"), load="blob"),
    Marker(b"image_url", load="image_url"),  # blob references in image_url fields are resolved too
    Marker(COPILOT_PROVIDER.encode("ascii"), load="copilot"),
    Marker(b"\\u", load="escape"),
)


@dataclass(frozen=True)
class MarkerSets:
    """The list as each reader searches it (built once per list)."""

    persist: tuple[bytes, ...]
    #: ``persist`` as one search (one per append that is not plain); never matches when empty.
    persist_search: re.Pattern[bytes]
    rewrite: tuple[bytes, ...]
    #: The load-side markers by what they tell (a test whose marker is gone finds nothing).
    load: dict[str, bytes]

    def finds(
        self, test: Load, data: bytes, start: int = 0, end: int | None = None, find: Find = bytes.find
    ) -> bool:
        """Whether ``data[start:end]`` holds the load-side marker ``test``; ``find`` searches
        as ``bytes.find`` does (the store passes its scanner's faster one)."""
        marker = self.load.get(test)
        return marker is not None and find(data, marker, start, len(data) if end is None else end) >= 0

    def in_line(self, test: Load, line: bytes) -> bool:
        """Whether ``line`` holds the load-side marker ``test``, or a ``\\u`` escape that could
        spell it."""
        marker, escape = self.load.get(test), self.load.get("escape")
        return (marker is not None and marker in line) or (escape is not None and escape in line)


def _sets(markers: tuple[Marker, ...]) -> MarkerSets:
    persist = tuple(marker.text for marker in markers if marker.persist)
    search = b"|".join(re.escape(text) for text in persist) if persist else rb"(?!)"
    return MarkerSets(
        persist,
        re.compile(search),
        tuple(marker.text for marker in markers if marker.rewrite),
        {marker.load: marker.text for marker in markers if marker.load is not None},
    )


_built: tuple[tuple[Marker, ...], MarkerSets] = (MARKERS, _sets(MARKERS))


def current() -> MarkerSets:
    """The sets of ``MARKERS`` as it is now (built again only when the list was replaced)."""
    global _built
    markers, sets = _built
    if markers is not MARKERS:
        _built = markers_and_sets = (MARKERS, _sets(MARKERS))
        sets = markers_and_sets[1]
    return sets
