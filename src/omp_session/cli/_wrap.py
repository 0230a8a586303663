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

from rich.cells import cell_len, chop_cells, get_character_cell_size, set_cell_size
from rich.control import STRIP_CONTROL_CODES, strip_control_codes

__all__ = [
    "SINGLE_CELL",
    "Slice",
    "cells",
    "clean",
    "cut_line",
    "expand_tabs",
    "is_narrow",
    "spaced_lines",
    "split_at_others",
    "tab_widths",
    "wrap_line",
    "wrap_narrow",
    "wrapped_lines",
    "wrapped_wide_lines",
]

#: A wrapped line as a slice of its source line plus a tail: ``line[start:end] + tail``; the tail
#: is ``"…"`` where a line was cut, or a space where a wide character straddled the edge.
Slice = tuple[int, int, str]

#: rich's tab size (``Console.tab_size``).
TAB_SIZE = 8

_WORD = re.compile(r"\s*\S+\s*")  # a word and the whitespace around it, as rich's wrapper splits
_TRAILING_SPACE = re.compile(r"\s+$")
_SPACE = re.compile(r"\s")
_NON_SPACE = re.compile(r"\S")
_UP_TO_LAST_SPACE = re.compile(r"(?s:.*)\s")


#: Characters one cell wide, known without rich's width table (loading it takes 70 ms): the ranges
#: rich itself treats so (``rich.cells._SINGLE_CELL_UNICODE_RANGES``), and punctuation and marks
#: common in sessions and in our own output. A test checks each against rich's table.
_SINGLE_CELL_RANGES = (
    (0x20, 0x7E),
    (0xA0, 0xAC),
    (0xAE, 0x2FF),
    (0x370, 0x482),
    (0x2500, 0x25FC),
    (0x2800, 0x28FF),
)
_SINGLE_CELL_EXTRA = "‘’“”–—•…→⎿✗✎"
SINGLE_CELL = frozenset(
    chr(code) for first, last in _SINGLE_CELL_RANGES for code in range(first, last + 1)
) | frozenset(_SINGLE_CELL_EXTRA)
#: Any character not in :data:`SINGLE_CELL` (control codes, tabs and newlines included): one C
#: scan tells a line of one-cell characters from the rest, and finds the few that are not.
_OTHER_THAN_SINGLE_CELL = re.compile(
    "[^"
    + "".join(f"{re.escape(chr(first))}-{re.escape(chr(last))}" for first, last in _SINGLE_CELL_RANGES)
    + re.escape(_SINGLE_CELL_EXTRA)
    + "]"
)
_find_other = _OTHER_THAN_SINGLE_CELL.search
_SPLIT_AT_OTHERS = re.compile(f"({_OTHER_THAN_SINGLE_CELL.pattern})").split


def is_narrow(text: str) -> bool:
    """True when every character is one cell wide: then cells == ``len``."""
    return (text.isascii() and text.isprintable()) or _find_other(text) is None


class _CharWidths(dict[str, int]):
    """Cells of each character seen (rich's ``get_character_cell_size``), looked up once each."""

    def __missing__(self, char: str) -> int:
        width = self[char] = get_character_cell_size(char)
        return width


_WIDTHS = _CharWidths()
#: Characters that join or widen graphemes: text holding them is measured by rich itself.
_GRAPHEME_MARKS = re.compile("[\u200d\ufe0f]")
#: The control codes rich strips from text (``rich.control.strip_control_codes``).
_CONTROL_CODES = tuple(chr(code) for code in STRIP_CONTROL_CODES)


def cells(text: str) -> int:
    """Terminal cells ``text`` takes, as rich measures them (``len`` for printable ASCII)."""
    if text.isascii() and text.isprintable():
        return len(text)
    if _GRAPHEME_MARKS.search(text):
        return cell_len(text)
    # Only the characters that are not one cell wide change the count.
    return len(text) + sum([_WIDTHS[char] - 1 for char in _OTHER_THAN_SINGLE_CELL.findall(text)])


class _Expansions(dict[str, str]):
    """What a character that is not one known cell becomes in an expanded line (see
    :func:`_expanded`): itself and a NUL when two cells wide, itself when one, ``""`` (no fast
    way) for zero-width characters, joiners, control codes and spaces."""

    def __missing__(self, char: str) -> str:
        width = _WIDTHS[char]
        expansion = self[char] = "" if char.isspace() or width == 0 else char + "\0" * (width - 1)
        return expansion


_EXPANSIONS = _Expansions()


def split_at_others(text: str) -> list[str]:
    """``text`` split around each character not in :data:`SINGLE_CELL` (those at the odd
    indexes): one scan, one part for a text of one-cell characters."""
    return _SPLIT_AT_OTHERS(text)


def _expanded(line: str, parts: list[str] | None = None) -> str | None:
    """``line`` with a NUL after each two-cell character, so that an index is a cell (the NULs
    mark the second halves), or ``None`` when the line holds anything but one- and two-cell
    characters and plain spaces. Wrapping the expanded line as one of one-cell characters gives
    rich's breaks, for a line of CJK text, without measuring it character by character.
    ``parts``: the line's :func:`split_at_others` when the caller has it (it is reused)."""
    if "\xa0" in line:
        return None
    if parts is None:
        parts = _SPLIT_AT_OTHERS(line)  # one scan: the runs of one-cell characters and those between
    expansions = [_EXPANSIONS[char] for char in parts[1::2]]
    if "" in expansions:
        return None
    parts[1::2] = expansions
    return "".join(parts)


def clean(text: str) -> str:
    """``text`` without the control codes rich strips (a search first: most text has none)."""
    # A substring test per code: each is a memchr-like scan, several times faster than one
    # regular-expression scan for any of them (which tests each character against a set).
    for code in _CONTROL_CODES:
        if code in text:
            return strip_control_codes(text)
    return text


def tab_widths(text: str, column: int = 0) -> list[int]:
    """The spaces each tab of ``text`` becomes, as rich expands tabs: the tab turns into one space,
    then spaces up to the next multiple of 8 (measured with that space, as rich does: a joiner
    before it swallows it)."""
    widths = []
    for part in text.split("\t")[:-1]:
        column += cells(part + " ")
        pad = -column % TAB_SIZE
        column += pad
        widths.append(1 + pad)
    return widths


def expand_tabs(text: str) -> str:
    """Tabs to spaces as rich does (see :func:`tab_widths`)."""
    if "\t" not in text:
        return text
    parts = text.split("\t")
    return (
        "".join(part + " " * width for part, width in zip(parts, tab_widths(text), strict=False)) + parts[-1]
    )


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
    for match in _OTHER_THAN_SINGLE_CELL.finditer(line):
        index = match.start()
        extend(range(at + shift, index + 1 + shift))
        shift += _WIDTHS[match.group()] - 1
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
    expanded = _expanded(line)
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
    if _GRAPHEME_MARKS.search(line):
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
    expanded = _expanded(line, parts)  # None for a line holding a no-break space
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
    return wrapped_wide_lines(line, _SPLIT_AT_OTHERS(line), width)


def cut_line(line: str, width: int) -> Slice:
    """One line cut at ``width`` cells, ending in ``…`` when cut (rich's "ellipsis" overflow)."""
    # Only the head is measured: 2 × width + 2 characters are wider than the width unless most of
    # them take no cell at all, and then the whole line is measured after all.
    head = line[: 2 * width + 2]
    if is_narrow(head):
        prefix: Sequence[int] | None = range(len(head) + 1)
    elif (expanded := _expanded(head)) is not None and not _GRAPHEME_MARKS.search(line):
        if len(expanded) <= width and len(head) == len(line):
            return 0, len(line), ""
        room = width - 1
        if room <= 0:
            return 0, 0, "…"
        if expanded[room] == "\0":  # a two-cell character across the edge: a space instead
            return 0, room - 1 - expanded.count("\0", 0, room - 1), " …"
        return 0, room - expanded.count("\0", 0, room), "…"
    elif _GRAPHEME_MARKS.search(line):
        head, prefix = line, None
    else:
        prefix = _prefix_cells(head, False)
        if prefix[-1] <= width and len(head) < len(line):
            head, prefix = line, _prefix_cells(line, is_narrow(line))
    if (prefix[-1] if prefix is not None else cell_len(line)) <= width and len(head) == len(line):
        return 0, len(line), ""
    return _fit_slice(head, 0, len(head), width, "…", prefix)
