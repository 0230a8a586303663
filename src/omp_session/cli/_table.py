"""Tables of reports that never cut a number (issue 27 #5).

rich's ``Table`` gives way on a narrow terminal by cutting cells, numbers included (``$9`` for
$90.70). Here the layout is ours: numbers always keep their full width; text columns narrow to
their ``min_width`` (with an ellipsis), then the droppable ones are dropped (highest ``drop``
first); and when the numbers still do not fit, the table turns into a stacked layout, one record
per block of lines (``name  value``), which fits any width a number fits in.

Internal module (part of the ``omp-session`` command); not part of the public API.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from rich.text import Text

from omp_session.cli._cells import cells
from omp_session.cli._common import console

__all__ = ["Column", "Row", "layout", "money", "print_table", "render"]

_GAP = 2  # spaces between two columns


@dataclass(frozen=True)
class Column:
    """One column: text (left-aligned, may narrow or drop) or numeric (right-aligned, never cut)."""

    name: str
    numeric: bool = False
    #: The narrowest a text column becomes before it is dropped (0: its heading's width).
    min_width: int = 0
    #: Text columns with ``drop > 0`` may be left out, the highest first; 0: always shown.
    drop: int = 0
    #: A text column that is never narrowed (an id, a date: cut, it would name something else).
    keep: bool = False
    style: str | None = None


@dataclass
class Row:
    cells: Sequence[str]
    style: str | None = None
    #: Cell styles by column position (a text cell's own style, e.g. a bold title).
    cell_styles: dict[int, str] = field(default_factory=dict)


def _fit(text: str, width: int) -> Text:
    """``text`` in exactly ``width`` cells, cut with an ellipsis when longer."""
    line = Text(text, no_wrap=True, overflow="ellipsis", end="")
    line.truncate(width, overflow="ellipsis", pad=True)
    return line


@dataclass(frozen=True)
class Layout:
    """Which columns are shown, at which widths; ``None`` widths: the stacked layout."""

    shown: list[int]
    widths: list[int] | None


def layout(columns: Sequence[Column], rows: Sequence[Row], width: int) -> Layout:
    """The widths that fit ``width`` cells (see the module's docstring for the order of giving way)."""
    natural = [
        max([cells(column.name), *(cells(row.cells[index]) for row in rows)])
        for index, column in enumerate(columns)
    ]
    shown = list(range(len(columns)))
    droppable = sorted(
        (index for index, column in enumerate(columns) if not column.numeric and column.drop > 0),
        key=lambda index: (-columns[index].drop, -index),
    )
    while True:
        widths = _narrowed(columns, natural, shown, width)
        if widths is not None:
            return Layout(shown, widths)
        if not droppable:
            return Layout(list(range(len(columns))), None)
        shown.remove(droppable.pop(0))


def _narrowed(
    columns: Sequence[Column], natural: list[int], shown: list[int], width: int
) -> list[int] | None:
    """Widths of the ``shown`` columns within ``width``, text narrowed as needed; ``None`` when
    even the narrowest text leaves no room for the numbers."""
    fixed = sum(natural[i] for i in shown if columns[i].numeric) + _gaps(columns, shown)
    texts = [i for i in shown if not columns[i].numeric]
    room = width - fixed
    lowest = {
        i: natural[i]
        if columns[i].keep
        else min(natural[i], max(columns[i].min_width, cells(columns[i].name)))
        for i in texts
    }
    if sum(lowest.values()) > room:
        return None
    widths = {i: natural[i] for i in shown}
    excess = sum(natural[i] for i in texts) - room
    # Narrow the widest text column first, one cell at a time, until the table fits.
    while excess > 0:
        widest = max((i for i in texts if widths[i] > lowest[i]), key=lambda i: widths[i] - lowest[i])
        widths[widest] -= 1
        excess -= 1
    return [widths[i] for i in shown]


def _gap(columns: Sequence[Column], before: int, after: int) -> int:
    """Spaces between two shown columns: one between two numbers (right-aligned, they stay
    apart by their commas), two next to text."""
    return 1 if columns[before].numeric and columns[after].numeric else _GAP


def _gaps(columns: Sequence[Column], shown: list[int]) -> int:
    return sum(_gap(columns, a, b) for a, b in pairwise(shown))


def render(columns: Sequence[Column], rows: Sequence[Row], width: int) -> list[Text]:
    """The lines of the table: a header and one line per row, or the stacked layout."""
    found = layout(columns, rows, width)
    if found.widths is None:
        return _stacked(columns, rows, width)
    lines = []
    heading = Text(end="", style="bold")
    for position, (index, column_width) in enumerate(zip(found.shown, found.widths, strict=True)):
        if position:
            heading.append(" " * _gap(columns, found.shown[position - 1], index))
        name = columns[index].name
        heading.append(name.rjust(column_width) if columns[index].numeric else _fit(name, column_width))
    lines.append(heading)
    for row in rows:
        line = Text(end="", style=row.style or "")
        for position, (index, column_width) in enumerate(zip(found.shown, found.widths, strict=True)):
            if position:
                line.append(" " * _gap(columns, found.shown[position - 1], index))
            cell = row.cells[index]
            column = columns[index]
            if column.numeric:
                line.append(" " * (column_width - cells(cell)) + cell, style=column.style or "")
            else:
                part = _fit(cell, column_width)
                part.stylize(row.cell_styles.get(index) or column.style or "")
                line.append(part)
        line.rstrip()
        lines.append(line)
    return lines


def _stacked(columns: Sequence[Column], rows: Sequence[Row], width: int) -> list[Text]:
    """One block per row: its text cells on one line, then each number as ``name  value``."""
    numeric = [i for i, column in enumerate(columns) if column.numeric]
    texts = [i for i, column in enumerate(columns) if not column.numeric]
    name_width = max((cells(columns[i].name) for i in numeric), default=0)
    value_width = max((cells(row.cells[i]) for row in rows for i in numeric), default=0)
    lines: list[Text] = []
    for number, row in enumerate(rows):
        if number:
            lines.append(Text(end=""))
        title = "  ".join(cell for cell in (row.cells[i] for i in texts) if cell)
        heading = _fit(title, max(width, 1))
        heading.rstrip()
        heading.stylize("bold")
        lines.append(heading)
        for i in numeric:
            value = row.cells[i]
            name = columns[i].name
            lines.append(
                Text(f"  {name.ljust(name_width)}  {' ' * (value_width - cells(value))}{value}", end="")
            )
    return lines


def print_table(columns: Sequence[Column], rows: Sequence[Row], width: int | None = None) -> None:
    """Print the table to stdout at the console's width (``COLUMNS`` when not a terminal)."""
    out = console()
    for line in render(columns, rows, width if width is not None else out.width):
        # soft_wrap: printed as it is, never wrapped or cropped by the console.
        out.print(line, soft_wrap=True)


def money(cost: float, *, estimated: bool = False) -> str:
    """A cost in dollars, always to the cent (``$1,234.57``); ``<$0.01`` for less than half a cent
    that is not zero; ``~`` in front when (some of) it is estimated."""
    mark = "~" if estimated else ""
    if cost != cost:  # NaN
        return "$?"
    if cost in (float("inf"), float("-inf")):
        return f"{mark}$∞" if cost > 0 else f"{mark}-$∞"
    if 0 < cost < 0.005:
        return f"{mark}<$0.01"
    return f"{mark}-${-cost:,.2f}" if cost < 0 else f"{mark}${cost:,.2f}"
