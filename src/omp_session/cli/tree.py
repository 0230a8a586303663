"""``omp-session tree``: every entry of a session as a tree, one line each.

Internal module (a command of ``omp-session``, which is the interface); not part of the public API.
"""

from __future__ import annotations

import click

from omp_session.cli._cells import cells, clean, is_narrow
from omp_session.cli._common import CliError, console, emit_json, json_option, session_argument, state
from omp_session.cli._lines import LineWriter, Piece
from omp_session.cli._wrap import cut_line
from omp_session.tools.entry_kinds import EntryKind
from omp_session.tools.reading import read_session, resolve_entry, session_short_ids
from omp_session.tools.summary import TREE_KINDS
from omp_session.tools.tree_view import TreeLine, fold_text, render_tree_line, tree_lines

__all__ = ["tree"]

_KIND_STYLES = {
    "user": "green",
    "assistant": "blue",
    TREE_KINDS[EntryKind.COMPACTION]: "yellow",
    TREE_KINDS[EntryKind.BRANCH_SUMMARY]: "magenta",
    "event": "dim",
}


def _fit(line: TreeLine, width: int | None) -> TreeLine:
    """``line`` cut to ``width`` cells by shortening its text (and, if that is not enough, the prefix
    from the left), never the id, the ``[label]`` or the ``◀ leaf`` marker (issue 13 #3). Cells,
    not characters: a line of wide characters (CJK) fits the terminal too. Fold lines fit too
    (issue 30 #1: they were never cut).

    The rules are :func:`_fit_reference`'s; a line whose characters are one cell each (nearly
    every line; only the head of a long text is looked at, as ``cut_line`` looks) is fitted by
    ``len`` and slicing instead of measuring it, with the same result: a property test
    (``tests/cli/test_tree_width.py``) holds the two to each other on generated lines."""
    if width is None:
        return line
    if line.kind == "fold":
        rendered = render_tree_line(line)
        if not is_narrow(rendered):
            return _fit_reference(line, width)
        return line if len(rendered) <= width else _cut_prefix(line, line.text, len(rendered) - width)
    text = line.text
    if not text:
        return _fit_reference(line, width)
    others = render_tree_line(line, "")
    room = max(width - len(others), 1)
    if not (is_narrow(others) and is_narrow(text[: 2 * room + 2])):
        return _fit_reference(line, width)
    if len(text) <= room:
        return line
    text = text[: room - 1].rstrip() + "…"
    return _cut_prefix(line, text, len(others) + len(text) - width)


def _fit_reference(line: TreeLine, width: int) -> TreeLine:
    """:func:`_fit` for any line, measuring cells as rich does (the reference of its fast way)."""
    text = line.text
    if text and line.kind != "fold":
        others = cells(render_tree_line(line, ""))  # all but the text, which gives way first
        _start, end, tail = cut_line(text, max(width - others, 1))  # at least the "…"
        if not tail:
            return line
        text = text[:end].rstrip() + "…"
        excess = others + cells(text) - width
    else:
        excess = cells(render_tree_line(line)) - width
        if excess <= 0:
            return line
    return _cut_prefix(line, text, excess)


def _cut_prefix(line: TreeLine, text: str, excess: int) -> TreeLine:
    """``line`` with ``text`` and, when it is still ``excess`` cells too wide, its prefix cut from
    the left (box-drawing characters and spaces, one cell each) behind a ``…``."""
    prefix = line.prefix
    if excess > 0 and len(prefix) > 2:
        prefix = "…" + prefix[min(excess + 1, len(prefix) - 1) :]
    return _changed(line, prefix=prefix, text=text)


def _changed(line: TreeLine, **fields: object) -> TreeLine:
    """A copy of ``line`` with other values of some ``fields``, built without the frozen
    dataclass's ``__init__`` (which sets each field through ``object.__setattr__``: it cost more
    than fitting the line, twice per line of a 21,000-line tree)."""
    copy = object.__new__(TreeLine)
    copy.__dict__.update(line.__dict__, **fields)
    return copy


def _pieces(line: TreeLine) -> list[Piece]:
    """The line in its colours: the same text as :func:`render_tree_line`."""
    pieces: list[Piece] = [(line.prefix, "dim")]
    if line.kind == "fold":
        return [*pieces, (fold_text(line), "italic dim")]
    if line.kind == "repeat":
        return [*pieces, (f"{line.entry_id} {line.text}", "dim")]
    pieces += [(line.entry_id or "?", "bold cyan" if line.on_current_branch else "cyan"), (" ", "")]
    if line.kind != "event":
        pieces.append((f"{line.kind}: ", _KIND_STYLES.get(line.kind) or "bold"))
    pieces.append((line.text, "dim" if line.kind == "event" else ""))
    if line.label:
        pieces.append((f" [{line.label}]", "bold yellow"))
    if line.is_leaf:
        pieces.append(("  ◀ leaf", "bold red"))
    return pieces


@click.command(
    epilog="\b\nExamples:\n  omp-session tree 15d0c6a0\n  omp-session tree 15d0 --depth 0\n"
    "  omp-session tree 15d0 --around a0000003\n  omp-session tree 15d0 --full --json",
)
@session_argument()
@click.option("--full", is_flag=True, help="Do not fold long linear runs.")
@click.option(
    "--depth",
    type=click.IntRange(min=0),
    help="Fold side branches deeper than N levels into one line each (0: only the current branch).",
)
@click.option(
    "--around",
    metavar="ENTRY",
    help="Put the branch through ENTRY (id or unique prefix) in column 0 and show only the lines "
    "near it (see --lines).",
)
@click.option(
    "--lines",
    "context_lines",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    help="With --around: lines shown above and below ENTRY.",
)
@click.option(
    "--all-entries",
    is_flag=True,
    help="Also show import bookkeeping (the foreign_session_import leaf, kept Claude Code/Codex records).",
)
@click.option(
    "--width",
    type=click.IntRange(min=20),
    help="Cut lines to this many columns (default: the terminal's); ids, labels and the leaf marker stay.",
)
@json_option
@click.pass_context
def tree(
    ctx: click.Context,
    session: str,
    full: bool,
    depth: int | None,
    around: str | None,
    context_lines: int,
    all_entries: bool,
    width: int | None,
    as_json: bool,
) -> None:
    """Show the tree of SESSION: one line per entry, the current branch in column 0.

    Branches left behind hang under their fork point, indented (at most four levels; deeper ones
    show their level instead, as "6» "). Labels are shown in brackets, the leaf (where omp resumes)
    is marked, and long runs without user messages, labels or summaries are folded unless --full
    is given.
    """
    cli = state(ctx)
    with read_session(cli.resolve(session), storage=cli.storage) as opened:
        focus = resolve_entry(opened, around) if around is not None else None
        lines = tree_lines(opened, full=full, depth=depth, around=focus, all_entries=all_entries)
        shown_ids = {} if as_json else session_short_ids(opened, (line.entry_id for line in lines))
    above = below = 0
    if focus is not None:
        at = next(
            (i for i, line in enumerate(lines) if line.entry_id == focus and line.kind != "repeat"), None
        )
        if at is None:  # only import bookkeeping is left out of the lines
            raise CliError(f"{around}: an import's bookkeeping entry, hidden; add --all-entries to see it")
        above, below = max(at - context_lines, 0), max(len(lines) - at - context_lines - 1, 0)
        lines = lines[at - min(at, context_lines) : at + context_lines + 1]
    if as_json:
        emit_json([line.to_dict() for line in lines])
        return
    out = console()
    writer = LineWriter(out, out.file)
    columns = width if width is not None else writer.width
    if not lines:
        writer.text("(no entries)", "italic")
    if above:
        writer.line([(f"({above} lines above)", "dim")])
    # Each line is cut to fit above and written whole: no wrapping to undo (issue 12 #6).
    for line in lines:
        text = clean(line.text)  # no bell or backspace from a session reaches the terminal
        if text is not line.text or line.entry_id in shown_ids:
            line = _changed(line, entry_id=shown_ids.get(line.entry_id or "", line.entry_id), text=text)
        fitted = _fit(line, columns)
        if writer.styled:
            writer.line(_pieces(fitted))
        else:
            writer.line([(render_tree_line(fitted), "")])
    if below:
        writer.line([(f"({below} lines below)", "dim")])
    writer.flush()
