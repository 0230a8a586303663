"""Text measured and wrapped exactly as rich does it, a line at a time.

For :mod:`omp_session.cli._lines`: rich's rules (word wrap with long words folded, trailing spaces
kept up to the edge, control codes stripped, tabs to 8 columns, wide characters measured in
cells, cuts ending in ``…``) reimplemented on plain strings, without rich's ``Text`` objects.
Lines of one-cell characters (nearly all) are handled by string methods; other lines by prefix
sums of their cells; the rare text holding joined graphemes by rich's own measure. Property tests
(``tests/cli/test_lines.py``) compare every result with rich's.

Internal module (part of the ``omp-session`` command); not part of the public API.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from itertools import accumulate, pairwise

from rich.cells import cell_len, chop_cells, set_cell_size

from omp_session.cli._cells import (
    CHAR_WIDTHS,
    GRAPHEME_MARKS,
    OTHER_THAN_SINGLE_CELL,
    SPLIT_AT_OTHERS,
    cell_expanded,
    is_narrow,
)

__all__ = [
    "Slice",
    "cut_line",
    "spaced_lines",
    "wrap_line",
    "wrap_narrow",
    "wrapped_lines",
    "wrapped_wide_lines",
]

#: A wrapped line as a slice of its source line plus a tail: ``line[start:end] + tail``; the tail
#: is ``"…"`` where a line was cut, or a space where a wide character straddled the edge.
Slice = tuple[int, int, str]

_WORD = re.compile(r"\s*\S+\s*")  # a word and the whitespace around it, as rich's wrapper splits
_TRAILING_SPACE = re.compile(r"\s+$")
_SPACE = re.compile(r"\s")
_NON_SPACE = re.compile(r"\S")
_UP_TO_LAST_SPACE = re.compile(r"(?s:.*)\s")


def _breaks_by_word(line: str, width: int) -> list[int]:
    """Where rich's word wrap (``rich._wrap.divide_line`` with folding) starts each new line,
    word by word with rich's own measure: for the rare text holding joined graphemes."""
    breaks: list[int] = []
    offset = 0
    for match in _WORD.finditer(line):
        start, word = match.start(), match.group()
        word_length = cell_len(word.rstrip())
        if width - offset >= word_length:
            offset += cell_len(word)
        elif word_length > width:  # longer than a whole line: folded across lines
            folded = chop_cells(word, width)
            for piece in folded[:-1]:
                if start:
                    breaks.append(start)
                start += len(piece)
            if start:
                breaks.append(start)
            offset = cell_len(folded[-1])
        elif offset and start:  # fits on the next line
            breaks.append(start)
            offset = cell_len(word)
    return breaks


def _breaks(line: str, width: int, prefix: Sequence[int]) -> list[int]:
    """Where rich's word wrap starts each new line, found a line at a time instead of a word at a
    time (``prefix[i]``: cells of ``line[:i]``).

    rich's rule (``rich._wrap.divide_line``): a word is its non-space run with the whitespace after
    it (the first one also takes the line's leading whitespace); a word goes on the current line
    when the line's cells up to the word's last non-space fit the width, else a new line starts at
    it; a word wider than a whole line is folded into pieces of the width. So from a line start
    ``s`` the words that fit are those whose non-space run ends at or before ``k``, the last
    position still within the width; the first word that does not fit is the run covering ``k``,
    or the one after the whitespace at ``k``."""
    narrow = isinstance(prefix, range)
    # One-cell characters hold no whitespace but " " and the no-break space.
    ascii_only = narrow and "\xa0" not in line
    content_end = len(line.rstrip())
    lead = len(line) - len(line.lstrip())
    breaks: list[int] = []
    start = 0
    while prefix[content_end] - prefix[start] > width:
        k = start + width if narrow else bisect_right(prefix, prefix[start] + width) - 1
        if line[k].isspace():
            word = _NON_SPACE.search(line, k).start()  # type: ignore[union-attr]  # before content_end
        elif ascii_only:  # printable ASCII: the only whitespace is " "
            word = max(line.rfind(" ", start, k) + 1, start)
        else:
            spaces = _UP_TO_LAST_SPACE.match(line, start, k)
            word = spaces.end() if spaces is not None else start
        if word <= lead:
            word = 0  # the line's leading whitespace belongs to its first word
        if ascii_only:
            space = line.find(" ", max(word, lead), content_end)
        else:
            found = _SPACE.search(line, max(word, lead), content_end)
            space = found.start() if found is not None else -1
        word_end = space if space >= 0 else content_end  # the word's last non-space + 1
        if prefix[word_end] - prefix[word] <= width:
            breaks.append(word)
            start = word
            continue
        # Too wide for any line: folded, trailing whitespace included, into pieces of the width.
        after = _NON_SPACE.search(line, word_end)
        folded_end = after.start() if after is not None else len(line)
        if narrow:
            pieces = list(range(word, folded_end, width))
        else:
            pieces = list(
                accumulate((len(p) for p in chop_cells(line[word:folded_end], width)), initial=word)
            )[:-1]
        breaks.extend(piece for piece in pieces if piece)
        start = pieces[-1]
    return breaks


def _space_breaks(line: str, width: int) -> list[int] | None:
    """:func:`_breaks` for a line of one-cell characters whose only whitespace is " " (nearly
    every line of prose), by string searches alone; ``None`` when a word is wider than a line
    (folding is left to :func:`_breaks`)."""
    content_end = len(line.rstrip(" "))
    lead = len(line) - len(line.lstrip(" "))
    rfind, find = line.rfind, line.find
    breaks: list[int] = []
    start = 0
    while content_end - start > width:
        k = start + width
        if line[k] == " ":
            word = k + 1
            while line[word] == " ":  # stops before content_end
                word += 1
        else:
            word = rfind(" ", start, k) + 1
            if word <= start:  # no space since the line's start: a word wider than a line
                return None
        if word <= lead:  # the line's leading spaces belong to its first word
            return None
        word_end = find(" ", word, content_end)
        if (word_end if word_end >= 0 else content_end) - word > width:
            return None
        breaks.append(word)
        start = word
    return breaks


def _fit_slice(line: str, start: int, end: int, width: int, tail: str, prefix: Sequence[int] | None) -> Slice:
    """``line[start:end]`` cropped to ``width`` cells with ``tail`` (``""`` or ``"…"``) after it, as
    rich's ``set_cell_size`` crops: a wide character cut in half becomes a space. ``prefix``: the
    line's :func:`_prefix_cells`, or ``None`` for a line holding joined graphemes."""
    room = width - len(tail)
    if room <= 0:
        return start, start, tail
    if isinstance(prefix, range):
        return start, start + room, tail
    if prefix is None:  # rich's grapheme rules, matched back to a slice of the line
        piece = line[start:end]
        fitted = set_cell_size(piece, room)
        keep = len(fitted)
        while keep and not piece.startswith(fitted[:keep]):
            keep -= 1
        return start, start + keep, fitted[keep:] + tail
    limit = prefix[start] + room
    index = bisect_right(prefix, limit, start, end + 1) - 1  # the characters that fit, zero-width ones too
    return start, index, " " * (limit - prefix[index]) + tail


def _prefix_cells(line: str, narrow: bool) -> Sequence[int]:
    """``prefix[i]``: the cells of ``line[:i]`` (a ``range`` when every character is one cell)."""
    if narrow:
        return range(len(line) + 1)
    # Runs of one-cell characters are ranges; only the characters between them are looked up
    # (a line of prose holds a few wide characters, if any).
    prefix: list[int] = []
    extend = prefix.extend
    shift = at = 0
    for match in OTHER_THAN_SINGLE_CELL.finditer(line):
        index = match.start()
        extend(range(at + shift, index + 1 + shift))
        shift += CHAR_WIDTHS[match.group()] - 1
        at = index + 1
    extend(range(at + shift, len(line) + 1 + shift))
    return prefix


def wrap_line(line: str, width: int) -> list[Slice]:
    """One line (no newline, tabs expanded) word-wrapped to ``width`` cells the way rich wraps a
    ``Text`` with its default overflow ("fold"): trailing spaces stay on the line they follow
    unless they go past the edge."""
    narrow = is_narrow(line)
    if narrow:  # the common case, where characters are cells
        return wrap_narrow(line, width)
    expanded = cell_expanded(line)
    if expanded is not None:
        if len(expanded) <= width:
            return [(0, len(line), "")]
        # Unless a word is folded (a fold could cut a character in half: the exact way then).
        cell_breaks = _space_breaks(expanded, width)
        if cell_breaks is not None:
            count = expanded.count
            return [
                (start - count("\0", 0, start), end - count("\0", 0, end), "")
                for start, end, _tail in _narrow_slices(cell_breaks, len(expanded), width)
            ]
    # A line that fits is still trimmed of trailing whitespace beyond ``width`` characters.
    prefix: Sequence[int] | None
    if GRAPHEME_MARKS.search(line):
        prefix = None
        fits = cell_len(line) <= width
        breaks = [] if fits else _breaks_by_word(line, width)
    else:
        prefix = _prefix_cells(line, narrow)
        fits = prefix[-1] <= width
        breaks = [] if fits else _breaks(line, width, prefix)
    if fits and len(line) <= width:
        return [(0, len(line), "")]
    bounds = [0, *breaks, len(line)]
    out: list[Slice] = []
    for start, end in pairwise(bounds):
        if end - start > width:  # rich's rstrip_end (it counts characters here, not cells)
            spaces = _TRAILING_SPACE.search(line, start, end)
            if spaces is not None:
                end -= min(end - spaces.start(), end - start - width)
        size = prefix[end] - prefix[start] if prefix is not None else cell_len(line[start:end])
        out.append(_fit_slice(line, start, end, width, "", prefix) if size > width else (start, end, ""))
    return out


def wrap_narrow(line: str, width: int) -> list[Slice]:
    """:func:`wrap_line` for a line known to be all one-cell characters (:func:`is_narrow`)."""
    if len(line) <= width:
        return [(0, len(line), "")]
    found = _space_breaks(line, width) if "\xa0" not in line else None
    breaks = found if found is not None else _breaks(line, width, range(len(line) + 1))
    return _narrow_slices(breaks, len(line), width)


def _narrow_slices(breaks: list[int], length: int, width: int) -> list[Slice]:
    """The lines between ``breaks`` of a line of one-cell characters ``length`` long. Each line's
    words fit, so cutting its trailing spaces at the width is rich's ``rstrip_end``."""
    slices: list[Slice] = []
    start = 0
    for end in breaks:
        slices.append((start, min(end, start + width), ""))
        start = end
    slices.append((start, min(length, start + width), ""))
    return slices


class _SpacedWordFinders(dict[int, Callable[[str], list[str]]]):
    """Per width, the ``findall`` that splits a line of one-cell characters whose only whitespace
    is " " into rich's wrapped lines in one C scan: from each line's start, the longest run of at
    most ``width`` characters that ends a word (a non-space before a space or the end), then the
    spaces after it (which rich keeps on the line, up to the edge)."""

    def __missing__(self, width: int) -> Callable[[str], list[str]]:
        finder = self[width] = re.compile(rf".{{0,{width - 1}}}[^ ](?= |\Z) *").findall
        return finder


_SPACED_WORDS = _SpacedWordFinders()


def spaced_lines(line: str, width: int) -> list[str] | None:
    """:func:`_space_breaks` and :func:`_narrow_slices` in one, for a line of one-cell
    characters whose only whitespace is " ": the wrapped lines themselves, or ``None`` when a word
    is wider than a line (the scan then skips part of the line: folding is left to
    :func:`_breaks`)."""
    pieces = _SPACED_WORDS[width](line)
    if sum(map(len, pieces)) != len(line):
        return None
    return [piece[:width] for piece in pieces]  # trailing spaces past the edge are cut (rstrip_end)


def wrapped_wide_lines(line: str, parts: list[str], width: int) -> list[str] | None:
    """:func:`wrapped_lines` for a line known to hold a character that is not one cell, split by
    :func:`split_at_others` already (``parts``, reused). Text with a newline, tab or control
    code gives ``None`` too (none of them expands)."""
    expanded = cell_expanded(line, parts)  # None for a line holding a no-break space
    if expanded is None:
        return None
    if len(expanded) <= width:
        return [line]
    lines = spaced_lines(expanded, width)
    if lines is None:
        return None
    return [wrapped.replace("\0", "") for wrapped in lines]  # the second halves of wide characters


def wrapped_lines(line: str, width: int) -> list[str] | None:
    """:func:`wrap_line` as the wrapped lines themselves, for the common shapes only: prose of
    one-cell characters, or of one- and two-cell ones, between plain spaces, no word wider than a
    line (no line then needs a tail). ``None`` for any other line: :func:`wrap_line` wraps it."""
    if is_narrow(line):
        if len(line) <= width:
            return [line]
        return spaced_lines(line, width) if "\xa0" not in line else None
    return wrapped_wide_lines(line, SPLIT_AT_OTHERS(line), width)


def cut_line(line: str, width: int) -> Slice:
    """One line cut at ``width`` cells, ending in ``…`` when cut (rich's "ellipsis" overflow)."""
    # Only the head is measured: 2 × width + 2 characters are wider than the width unless most of
    # them take no cell at all, and then the whole line is measured after all.
    head = line[: 2 * width + 2]
    if is_narrow(head):
        prefix: Sequence[int] | None = range(len(head) + 1)
    elif (expanded := cell_expanded(head)) is not None and not GRAPHEME_MARKS.search(line):
        if len(expanded) <= width and len(head) == len(line):
            return 0, len(line), ""
        room = width - 1
        if room <= 0:
            return 0, 0, "…"
        if expanded[room] == "\0":  # a two-cell character across the edge: a space instead
            return 0, room - 1 - expanded.count("\0", 0, room - 1), " …"
        return 0, room - expanded.count("\0", 0, room), "…"
    elif GRAPHEME_MARKS.search(line):
        head, prefix = line, None
    else:
        prefix = _prefix_cells(head, False)
        if prefix[-1] <= width and len(head) < len(line):
            head, prefix = line, _prefix_cells(line, is_narrow(line))
    if (prefix[-1] if prefix is not None else cell_len(line)) <= width and len(head) == len(line):
        return 0, len(line), ""
    return _fit_slice(head, 0, len(head), width, "…", prefix)
