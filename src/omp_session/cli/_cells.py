"""Terminal cells of text, as rich measures them, without rich's ``Text`` objects.

For :mod:`omp_session.cli._wrap` and :mod:`omp_session.cli._lines`: which characters are one cell
(known without rich's width table), the cells of a text, the control codes rich strips, tabs as
rich expands them, and a line "expanded" so that an index is a cell (a NUL after each two-cell
character), which lets CJK text wrap by string methods.

Internal module (part of the ``omp-session`` command); not part of the public API.
"""

from __future__ import annotations

import re

from rich.cells import cell_len, get_character_cell_size
from rich.control import STRIP_CONTROL_CODES, strip_control_codes

__all__ = [
    "CHAR_WIDTHS",
    "GRAPHEME_MARKS",
    "OTHER_THAN_SINGLE_CELL",
    "SINGLE_CELL",
    "SPLIT_AT_OTHERS",
    "TAB_SIZE",
    "cell_expanded",
    "cells",
    "clean",
    "expand_tabs",
    "is_narrow",
    "split_at_others",
    "tab_widths",
]

#: rich's tab size (``Console.tab_size``).
TAB_SIZE = 8

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
OTHER_THAN_SINGLE_CELL = re.compile(
    "[^"
    + "".join(f"{re.escape(chr(first))}-{re.escape(chr(last))}" for first, last in _SINGLE_CELL_RANGES)
    + re.escape(_SINGLE_CELL_EXTRA)
    + "]"
)
_find_other = OTHER_THAN_SINGLE_CELL.search
SPLIT_AT_OTHERS = re.compile(f"({OTHER_THAN_SINGLE_CELL.pattern})").split


def is_narrow(text: str) -> bool:
    """True when every character is one cell wide: then cells == ``len``."""
    return (text.isascii() and text.isprintable()) or _find_other(text) is None


class _CharWidths(dict[str, int]):
    """Cells of each character seen (rich's ``get_character_cell_size``), looked up once each."""

    def __missing__(self, char: str) -> int:
        width = self[char] = get_character_cell_size(char)
        return width


CHAR_WIDTHS = _CharWidths()
#: Characters that join or widen graphemes: text holding them is measured by rich itself.
GRAPHEME_MARKS = re.compile("[\u200d\ufe0f]")
#: The control codes rich strips from text (``rich.control.strip_control_codes``).
_CONTROL_CODES = tuple(chr(code) for code in STRIP_CONTROL_CODES)


def cells(text: str) -> int:
    """Terminal cells ``text`` takes, as rich measures them (``len`` for printable ASCII)."""
    if text.isascii() and text.isprintable():
        return len(text)
    if GRAPHEME_MARKS.search(text):
        return cell_len(text)
    # Only the characters that are not one cell wide change the count.
    return len(text) + sum([CHAR_WIDTHS[char] - 1 for char in OTHER_THAN_SINGLE_CELL.findall(text)])


class _Expansions(dict[str, str]):
    """What a character that is not one known cell becomes in an expanded line (see
    :func:`cell_expanded`): itself and a NUL when two cells wide, itself when one, ``""`` (no fast
    way) for zero-width characters, joiners, control codes and spaces."""

    def __missing__(self, char: str) -> str:
        width = CHAR_WIDTHS[char]
        expansion = self[char] = "" if char.isspace() or width == 0 else char + "\0" * (width - 1)
        return expansion


_EXPANSIONS = _Expansions()


def split_at_others(text: str) -> list[str]:
    """``text`` split around each character not in :data:`SINGLE_CELL` (those at the odd
    indexes): one scan, one part for a text of one-cell characters."""
    return SPLIT_AT_OTHERS(text)


def cell_expanded(line: str, parts: list[str] | None = None) -> str | None:
    """``line`` with a NUL after each two-cell character, so that an index is a cell (the NULs
    mark the second halves), or ``None`` when the line holds anything but one- and two-cell
    characters and plain spaces. Wrapping the expanded line as one of one-cell characters gives
    rich's breaks, for a line of CJK text, without measuring it character by character.
    ``parts``: the line's :func:`split_at_others` when the caller has it (it is reused)."""
    if "\xa0" in line:
        return None
    if parts is None:
        parts = SPLIT_AT_OTHERS(line)  # one scan: the runs of one-cell characters and those between
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
