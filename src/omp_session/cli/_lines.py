"""Fast line output for commands that print tens of thousands of lines (``show``, ``tree``).

rich lays every ``Text`` out through a general engine (spans, segments, a wrapping pass per
line, a cropping pass per print): ``show`` of a 50,000-entry session spent 9.9× the library's own
time there (issue 12 #6). Those commands hand this module plain strings with a style name instead;
it wraps them itself and writes them in large chunks:

* on a pipe (no colour system) the text is written as is, with no styling work at all;
* on a terminal each piece is wrapped in the ANSI codes rich itself chose for that style on this
  console (colour system, ``NO_COLOR``), worked out once per style name.

The wrapping (:mod:`omp_session.cli._wrap`) follows rich's own rules (word wrap, long words
folded, control codes stripped, tabs to 8 columns, wide characters measured in cells), so a line
prints exactly as rich would print the same ``Text``; tests compare the two. The few complex
renderables (panels, centred rules) still go through rich (:meth:`LineWriter.renderable`).
Session text is never parsed as rich markup here: nothing is parsed at all.

Internal module (part of the ``omp-session`` command); not part of the public API.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import IO

from rich.console import Console, RenderableType
from rich.text import Text

from omp_session.cli._cells import cells, clean, expand_tabs, is_narrow, split_at_others, tab_widths
from omp_session.cli._wrap import (
    cut_line,
    spaced_lines,
    wrap_line,
    wrap_narrow,
    wrapped_lines,
    wrapped_wide_lines,
)

__all__ = ["LineWriter", "Piece"]

#: A piece of a line: its text and a rich style name (``""``: unstyled).
Piece = tuple[str, str]

#: Strings (lines, mostly) collected before one write to the file.
_CHUNK_PIECES = 4096


def _lines_of(pieces: Iterable[Piece]) -> list[list[Piece]]:
    """``pieces`` split at their newlines, control codes stripped and tabs expanded per line."""
    lines: list[list[Piece]] = [[]]
    for text, style in pieces:
        first, *rest = clean(text).split("\n")
        lines[-1].append((first, style))
        lines.extend([(part, style)] for part in rest)
    for number, line in enumerate(lines):
        if any("\t" in text for text, _ in line):  # tabs measured on the whole line, then spread
            spaces = iter(" " * width for width in tab_widths("".join(text for text, _ in line)))
            lines[number] = [("".join(_interleave(text.split("\t"), spaces)), style) for text, style in line]
    return lines


def _interleave(parts: list[str], separators: Iterable[str]) -> Iterable[str]:
    """``parts`` with the next separator between each two."""
    separator = iter(separators)
    for position, part in enumerate(parts):
        if position:
            yield next(separator)
        yield part


def _slice_pieces(pieces: Sequence[Piece], start: int, end: int, tail: str) -> list[Piece]:
    """The parts of ``pieces`` (one line) between characters ``start`` and ``end``, then ``tail``.

    Each character of the tail takes the style of the character that was at its index before the
    cut (rich keeps a text's spans by index when it crops it); past the end, none."""
    out: list[Piece] = []
    position = 0
    for text, style in pieces:
        following = position + len(text)
        if following > start and position < end:
            out.append((text[max(start - position, 0) : end - position], style))
        position = following
    for index, char in enumerate(tail, end):
        style = _style_at(pieces, index)
        if out and out[-1][1] == style:  # the span that was cut runs on over the tail
            out[-1] = (out[-1][0] + char, style)
        else:
            out.append((char, style))
    return out


def _style_at(pieces: Sequence[Piece], index: int) -> str:
    position = 0
    for text, style in pieces:
        position += len(text)
        if index < position:
            return style
    return ""


class LineWriter:
    """Lines written to ``file`` in chunks, styled as ``console`` would style them."""

    def __init__(self, console: Console, file: IO[str]) -> None:
        self.console = console
        self.file = file
        self.width = console.width
        self.styled = console.color_system is not None
        self._dashes = "─" * self.width
        self._codes: dict[str, tuple[str, str]] = {"": ("", "")}  # no style: no codes
        self._lines_codes: dict[str, tuple[str, str, str]] = {}
        self._chunk: list[str] = []

    def _style_codes(self, style: str) -> tuple[str, str]:
        """The ANSI codes before and after text in ``style``, as rich renders them here."""
        codes = self._codes.get(style)
        if codes is None:
            with self.console.capture() as captured:
                self.console.print(Text("X", style=style), end="", soft_wrap=True)
            before, _, after = captured.get().partition("X")
            codes = self._codes[style] = (before, after)
        return codes

    def _write(self, text: str) -> None:
        self._chunk.append(text)
        if len(self._chunk) >= _CHUNK_PIECES:
            self.flush()

    def flush(self) -> None:
        """Write what is collected to the file."""
        if self._chunk:
            self.file.write("".join(self._chunk))
            self._chunk.clear()

    def _styled(self, text: str, style: str) -> str:
        if not (style and text and self.styled):
            return text
        before, after = self._style_codes(style)
        return before + text + after

    def _emit(self, pieces: Iterable[Piece]) -> None:
        if self.styled:
            codes = self._codes
            line: list[str] = []
            for text, style in pieces:
                if style and text:
                    before, after = codes.get(style) or self._style_codes(style)
                    line += (before, text, after)
                else:
                    line.append(text)
            line.append("\n")
            self._write("".join(line))
        else:
            self._write("".join([text for text, _ in pieces]) + "\n")

    def _line_codes(self, style: str) -> tuple[str, str, str] | None:
        """The codes that style whole lines in ``style``: before the first, after the last (with
        its newline) and between two; ``None`` when nothing is styled."""
        if not (style and self.styled):
            return None
        codes = self._lines_codes.get(style)
        if codes is None:
            before, after = self._style_codes(style)
            codes = self._lines_codes[style] = (before, after + "\n", after + "\n" + before)
        return codes

    def _add_lines(self, lines: list[str], codes: tuple[str, str, str] | None) -> None:
        """Wrapped lines, each in the codes of its style: one string for them all."""
        if codes is None or not lines[0]:  # an empty line (never more than one) is left unstyled
            self._chunk.append("\n".join(lines) + "\n")
        else:
            before, after, between = codes
            self._chunk.append(before + between.join(lines) + after)

    def text(self, text: str, style: str = "", *, cut: bool = False) -> None:
        """``text`` in one style: each of its lines word-wrapped to the width (``cut``: cut at the
        edge with ``…`` instead), as rich prints ``Text(text, style=style)``."""
        width = self.width
        chunk = self._chunk
        codes = (self._lines_codes.get(style) or self._line_codes(style)) if style and self.styled else None
        if len(text) > width and cut:
            if "\n" in text or not is_narrow(text[: width + 1]):
                self._other_text(text, style, codes, cut)
            else:  # rich's "ellipsis" overflow; what follows the head is never measured
                text = text[: width - 1] + "…" if width > 1 else "…"
                chunk.append(text + "\n" if codes is None else codes[0] + text + codes[1])
        # Nearly every text is one line of one-cell characters (so no newline, tab or control
        # code in it either): characters are cells, nothing needs measuring or cleaning. (``parts``
        # is bound below whenever the ASCII test fails.)
        elif (text.isascii() and text.isprintable()) or len(parts := split_at_others(text)) == 1:
            if len(text) <= width:
                chunk.append(text + "\n" if codes is None or not text else codes[0] + text + codes[1])
            else:
                lines = spaced_lines(text, width) if "\xa0" not in text else None
                if lines is None:  # a word wider than a line, or a no-break space
                    lines = [text[s:e] for s, e, _tail in wrap_narrow(text, width)]
                self._add_lines(lines, codes)
        else:  # the scan above found the characters that are not one cell: wrapped from its parts
            lines = None if cut else wrapped_wide_lines(text, parts, width)
            if lines is None:  # several lines, tabs, control codes, words wider than a line, …
                self._other_text(text, style, codes, cut)
            else:
                self._add_lines(lines, codes)
        if len(chunk) >= _CHUNK_PIECES:
            self.flush()

    def _other_text(self, text: str, style: str, codes: tuple[str, str, str] | None, cut: bool) -> None:
        """:meth:`text` for a text that holds more than one line or characters not one cell wide."""
        width = self.width
        chunk = self._chunk
        for line in clean(text).split("\n"):
            if "\t" in line:
                line = expand_tabs(line)
            if not cut:
                lines = wrapped_lines(line, width)
                if lines is not None:
                    self._add_lines(lines, codes)
                    continue
            if len(line) <= width and is_narrow(line):
                slices = [(0, len(line), "")]
            elif cut:
                slices = [cut_line(line, width)]
            else:
                slices = wrap_line(line, width)
            if codes is None:
                chunk.extend([line[s:e] + tail + "\n" for s, e, tail in slices])
            elif all(e + len(tail) <= len(line) for _s, e, tail in slices):
                # One style over the whole line: each cut line is simply wrapped in its codes.
                chunk.extend([self._styled(line[s:e] + tail, style) + "\n" for s, e, tail in slices])
            else:  # a tail past the line's end is unstyled in rich: the general way
                self.pieces([(line, style)], cut=cut)

    def pieces(self, pieces: Sequence[Piece], *, cut: bool = False, narrow: bool = False) -> None:
        """Pieces in their styles, together one text (it may hold newlines), wrapped or cut as by
        :meth:`text`. ``narrow``: the caller knows them to be one line of one-cell characters."""
        width = self.width
        plain = "".join([text for text, _ in pieces])
        if not self.styled:
            if narrow and len(plain) <= width:
                self._write(plain + "\n")
            else:
                self.text(plain, cut=cut)
            return
        if len(plain) <= width and (narrow or is_narrow(plain)):  # one line that fits, nothing to clean
            self._emit(pieces)
            return
        for line in _lines_of(pieces):
            plain = "".join(text for text, _ in line)
            if len(plain) <= width and is_narrow(plain):
                self._emit(line)
            elif cut:
                self._emit(_slice_pieces(line, *cut_line(plain, width)))
            else:
                for start, end, tail in wrap_line(plain, width):
                    self._emit(_slice_pieces(line, start, end, tail))

    def blank(self) -> None:
        """An empty line (``text("")``)."""
        self._chunk.append("\n")

    def line(self, pieces: Iterable[Piece]) -> None:
        """One line as it is: no wrapping, cutting or cleaning (the caller fitted it)."""
        self._emit(pieces)

    def unwrapped(self, text: str, style: str = "") -> None:
        """``text`` with no wrapping or cutting (a long path stays whole; the terminal wraps it)."""
        for line in clean(text).split("\n"):
            self._write(self._styled(expand_tabs(line), style) + "\n")

    def rule(self, title: Piece, style: str, *, narrow: bool = False) -> None:
        """A left-aligned rule across the width: the title, then ``─`` in ``style`` (rich's
        ``Rule(title, align="left")``; a title too long is cut with ``…``). ``narrow``: the
        caller knows the title to be one-cell characters."""
        text, title_style = title
        room = self.width - 2
        if 0 < len(text) <= room and (narrow or is_narrow(text)):  # the usual header: no measuring
            dashes = self._dashes[: room + 1 - len(text)]
            if self.styled:  # neither the title nor the dashes is empty
                codes = self._codes
                title_before, title_after = codes.get(title_style) or self._style_codes(title_style)
                before, after = codes.get(style) or self._style_codes(style)
                self._write(f"{title_before}{text}{title_after} {before}{dashes}{after}\n")
            else:
                self._write(f"{text} {dashes}\n")
            return
        text = clean(text)
        if room <= 0 or not text:
            self._emit([("─" * self.width, style)])
            return
        text = expand_tabs(text.replace("\n", " "))
        start, end, tail = cut_line(text, room)
        text = text[start:end] + tail
        self._emit([(text, title_style), (" ", ""), ("─" * (self.width - cells(text) - 1), style)])

    def renderable(self, renderable: RenderableType) -> None:
        """Anything else, printed by rich itself (rare: panels, centred rules)."""
        with self.console.capture() as captured:
            self.console.print(renderable)
        self._write(captured.get())
