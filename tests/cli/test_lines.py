"""``cli._lines``: our own line wrapping prints exactly what rich prints for the same ``Text``.

``show`` and ``tree`` no longer lay text out through rich (issue 12 #6), so these properties pin
the promise that they look the same: every generated text, at every width, wrapped, cut or ruled,
plain or coloured, is compared with rich's own output for it.
"""

from __future__ import annotations

import io
import re

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import get_character_cell_size
from rich.console import Console
from rich.rule import Rule
from rich.text import Text

from omp_session.cli._cells import SINGLE_CELL
from omp_session.cli._lines import LineWriter
from omp_session.cli._wrap import wrap_line, wrapped_lines

# Narrow, accented, wide (CJK, emoji), zero-width, joining and space-like characters, tabs,
# control codes rich strips and one it keeps (ESC), newlines.
ALPHABET = "aaaabbbc  é·…数ファ😀\u3000\xa0\u0301\u200d\ufe0f\t\x07\r\x1b\n-"
texts = st.text(alphabet=ALPHABET, max_size=120)
# Without ESC, so that the escape codes of styled output can be told from the text; without
# grapheme joiners, which rich measures per styled run when it crops (a joiner at a style boundary
# is measured apart from what it joins): plain text covers them.
styled_texts = st.text(alphabet=ALPHABET.translate(str.maketrans("", "", "\x1b\u200d\ufe0f")), max_size=120)
words = st.lists(st.text(alphabet="abcdefghij", min_size=1, max_size=14), max_size=30).map(" ".join)
widths = st.integers(min_value=2, max_value=40)
# Prose as sessions hold it: words of one-cell characters (ASCII, accented, our own marks) and
# two-cell ones (CJK, emoji) between plain spaces, lines longer than the width. Such lines take
# the fast ways (one-cell lines as they are, two-cell ones expanded to a cell per index), which
# these texts exercise at every width (random texts of ALPHABET mostly hold a character that
# sends them the exact way).
prose = st.lists(
    st.text(alphabet="abcdefghé·…→─数ファ😀", min_size=1, max_size=12) | st.sampled_from(["", " "]),
    max_size=40,
).map(" ".join)
STYLES = ["", "bold", "dim", "red", "bold green", "italic dim"]


def _console(width: int, *, colour: bool, no_color: bool = False) -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width,
        force_terminal=colour,
        color_system="256" if colour else None,
        no_color=no_color,
        highlight=False,
        markup=False,
        emoji=False,
    )
    return console, buffer


_RESTYLED = re.compile(r"(\x1b\[([0-9;]+)m)([^\x1b]*)\x1b\[0m\x1b\[\2m")


def _same_look(text: str) -> str:
    """Adjacent runs in one style joined: rich splits a run where its spans were split (at a tab),
    which looks the same."""
    while True:
        joined = _RESTYLED.sub(r"\1\3", text)
        if joined == text:
            return text
        text = joined


def _ours(
    width: int, colour: bool, write: str, *args: object, no_color: bool = False, **kwargs: object
) -> str:
    console, _ = _console(width, colour=colour, no_color=no_color)
    output = io.StringIO()
    writer = LineWriter(console, output)
    getattr(writer, write)(*args, **kwargs)
    writer.flush()
    return output.getvalue()


def _rich(width: int, colour: bool, renderable: object, *, cut: bool = False, no_color: bool = False) -> str:
    console, buffer = _console(width, colour=colour, no_color=no_color)
    if cut:  # print's own options: a Text's no_wrap and overflow are lost when print joins texts
        console.print(renderable, no_wrap=True, overflow="ellipsis")
    else:
        console.print(renderable)
    return buffer.getvalue()


@settings(max_examples=400, deadline=None)
@given(text=texts | words, width=widths)
def test_wrapped_text_matches_rich(text: str, width: int) -> None:
    assert _ours(width, False, "text", text) == _rich(width, False, Text(text))


@settings(max_examples=300, deadline=None)
@given(text=texts | words | st.text(alphabet="a\u0301", max_size=200), width=widths)
def test_cut_text_matches_rich(text: str, width: int) -> None:
    expected = _rich(width, False, Text(text), cut=True)
    assert _ours(width, False, "text", text, cut=True) == expected


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(st.tuples(styled_texts | words, st.sampled_from(STYLES)), min_size=1, max_size=4),
    width=widths,
    cut=st.booleans(),
    no_color=st.booleans(),
)
def test_styled_pieces_match_rich(
    pieces: list[tuple[str, str]], width: int, cut: bool, no_color: bool
) -> None:
    """On a terminal, with colours or with ``NO_COLOR`` (bold, dim and italic stay)."""
    text = Text()
    for part, style in pieces:
        text.append(part, style=style or None)
    expected = _rich(width, True, text, cut=cut, no_color=no_color)
    ours = _ours(width, True, "pieces", pieces, cut=cut, no_color=no_color)
    assert _same_look(ours) == _same_look(expected)


@settings(max_examples=300, deadline=None)
@given(
    text=styled_texts | words,
    style=st.sampled_from(STYLES[1:]),
    width=widths,
    cut=st.booleans(),
)
def test_text_in_one_style_matches_rich(text: str, style: str, width: int, cut: bool) -> None:
    expected = _rich(width, True, Text(text, style=style), cut=cut)
    assert _same_look(_ours(width, True, "text", text, style, cut=cut)) == _same_look(expected)


@settings(max_examples=200, deadline=None)
@given(title=styled_texts | words, width=widths, colour=st.booleans())
def test_rule_matches_rich(title: str, width: int, colour: bool) -> None:
    expected = _rich(width, colour, Rule(Text(title, style="bold"), align="left", style="dim"))
    assert _same_look(_ours(width, colour, "rule", (title, "bold"), "dim")) == _same_look(expected)


def test_session_text_is_never_markup() -> None:
    """``[bold]x[/bold]`` in a message is text: printed as written, on a pipe and on a terminal."""
    assert _ours(80, False, "text", "[bold]x[/bold] :smile:") == "[bold]x[/bold] :smile:\n"
    coloured = _ours(80, True, "text", "[bold]x[/bold]", "green")
    assert "[bold]x[/bold]" in coloured and "\x1b[32m" in coloured and "\x1b[1m" not in coloured


def test_a_pipe_gets_no_escape_codes_and_a_terminal_gets_rich_codes() -> None:
    pieces = [("a", "bold red"), ("b", "dim")]
    assert _ours(40, False, "pieces", pieces) == "ab\n"
    assert _ours(40, True, "pieces", pieces) == "\x1b[1;31ma\x1b[0m\x1b[2mb\x1b[0m\n"
    assert _ours(40, True, "pieces", pieces, no_color=True) == "\x1b[1ma\x1b[0m\x1b[2mb\x1b[0m\n"


def test_characters_taken_as_one_cell_are_one_cell_for_rich() -> None:
    assert all(get_character_cell_size(char) == 1 for char in SINGLE_CELL)


@settings(max_examples=400, deadline=None)
@given(text=prose, width=widths, cut=st.booleans(), style=st.sampled_from(STYLES))
def test_prose_takes_the_fast_ways_and_matches_rich(text: str, width: int, cut: bool, style: str) -> None:
    """Wrapped and cut, plain and styled, the fast ways print what rich prints."""
    assert _ours(width, False, "text", text, cut=cut) == _rich(width, False, Text(text), cut=cut)
    expected = _rich(width, True, Text(text, style=style), cut=cut)
    assert _same_look(_ours(width, True, "text", text, style, cut=cut)) == _same_look(expected)


@settings(max_examples=400, deadline=None)
@given(text=prose | words | st.text(alphabet="ab数 \xa0", max_size=60), width=st.integers(1, 40))
def test_wrapped_lines_are_the_slices_of_wrap_line(text: str, width: int) -> None:
    """The one-scan wrap of prose gives the lines :func:`wrap_line` slices out (or declines)."""
    lines = wrapped_lines(text, width)
    if lines is not None:
        assert lines == [text[start:end] + tail for start, end, tail in wrap_line(text, width)]
