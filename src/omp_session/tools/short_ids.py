"""Session ids as the shortest prefix that tells them apart, as git shows commits.

omp 18's ids are UUIDv7: they begin with a timestamp, so sessions made the same day share their
first 8 characters (13 real sessions all ``01a22ce1``). A listing shows each id as long as it must
be to be unique among the sessions listed (at least ``min_length``), so that pasting it back into
any command resolves it (:func:`omp_session.tools.resolve.resolve_session`, which matches prefixes
case-insensitively).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["unique_prefixes"]


def _common(a: str, b: str) -> int:
    length = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        length += 1
    return length


def unique_prefixes(ids: Iterable[str], min_length: int = 8) -> dict[str, str]:
    """Each id → its shortest prefix (case-insensitively) shared with no other id given, at least
    ``min_length`` characters; a whole id when another id starts with it (or equals it)."""
    unique = sorted(set(ids), key=str.lower)
    folded = [name.lower() for name in unique]
    out: dict[str, str] = {}
    for position, name in enumerate(unique):
        needed = 0
        if position:
            needed = _common(folded[position - 1], folded[position]) + 1
        if position + 1 < len(unique):
            needed = max(needed, _common(folded[position], folded[position + 1]) + 1)
        length = max(min_length, needed)
        if length < len(name) and name[length - 1] == "-":
            length += 1  # never end on a UUID's hyphen
        out[name] = name[:length]
    return out
