"""``omp-session tree``: every entry of a session as a tree, one line each.

Internal module (a command of ``omp-session``, which is the interface); not part of the public API.
"""

from __future__ import annotations

from dataclasses import replace

import click
from rich.text import Text

from omp_session.cli._common import console, emit_json, json_option, session_argument, state
from omp_session.tools.entry_kinds import EntryKind
from omp_session.tools.reading import read_session
from omp_session.tools.summary import TREE_KINDS
from omp_session.tools.tree_view import TreeLine, render_tree_line, tree_lines

__all__ = ["tree"]

#: Lines printed with one ``Console.print``.
PRINT_BATCH = 1000

_KIND_STYLES = {
    "user": "green",
    "assistant": "blue",
    TREE_KINDS[EntryKind.COMPACTION]: "yellow",
    TREE_KINDS[EntryKind.BRANCH_SUMMARY]: "magenta",
    "event": "dim",
}


def _fit(line: TreeLine, width: int | None) -> TreeLine:
    """``line`` cut to ``width`` columns by shortening its text (and, on deep branches, the prefix
    from the left), never the id, the ``[label]`` or the ``◀ leaf`` marker (issue 13 #3)."""
    if width is None or line.kind == "fold":
        return line
    rendered = len(render_tree_line(line))
    if rendered <= width:
        return line
    excess = rendered - width
    text = line.text
    if text:
        keep = max(len(text) - excess - 1, 0)  # one column for the ellipsis
        excess -= len(text) - keep - 1
        text = text[:keep].rstrip() + "…"
    prefix = line.prefix
    if excess > 0 and len(prefix) > 2:
        prefix = "…" + prefix[min(excess + 1, len(prefix) - 1) :]
    return replace(line, prefix=prefix, text=text)


def _styled(line: TreeLine) -> Text:
    text = Text(line.prefix, style="dim")
    if line.kind == "fold":
        return text.append(f"… {line.hidden} entries folded", style="italic dim")
    if line.kind == "repeat":
        return text.append(f"{line.entry_id} {line.text}", style="dim")
    text.append(line.entry_id or "?", style="bold cyan" if line.on_current_branch else "cyan")
    text.append(" ")
    style = _KIND_STYLES.get(line.kind, "")
    if line.kind != "event":
        text.append(f"{line.kind}: ", style=style or "bold")
    text.append(line.text, style="dim" if line.kind == "event" else "")
    if line.label:
        text.append(f" [{line.label}]", style="bold yellow")
    if line.is_leaf:
        text.append("  ◀ leaf", style="bold red")
    return text


@click.command(
    epilog="\b\nExamples:\n  omp-session tree 15d0c6a0\n  omp-session tree 15d0 --full --json",
)
@session_argument()
@click.option("--full", is_flag=True, help="Do not fold long linear runs.")
@click.option(
    "--width",
    type=click.IntRange(min=20),
    help="Cut lines to this many columns (default: the terminal's); ids, labels and the leaf marker stay.",
)
@json_option
@click.pass_context
def tree(ctx: click.Context, session: str, full: bool, width: int | None, as_json: bool) -> None:
    """Show the tree of SESSION: one line per entry, branches drawn with lines.

    Labels are shown in brackets, the leaf (where omp resumes) is marked, and long runs without
    user messages, labels or summaries are folded unless --full is given.
    """
    with read_session(state(ctx).resolve(session)) as opened:
        lines = tree_lines(opened, full=full)
    if as_json:
        emit_json([line.to_dict() for line in lines])
        return
    out = console()
    columns = width if width is not None else out.width
    if not lines:
        out.print(Text("(no entries)", style="italic"))
    # In batches of lines: one ``print`` per line costs rich its console setup every time.
    for start in range(0, len(lines), PRINT_BATCH):
        styled = [_styled(_fit(line, columns)) for line in lines[start : start + PRINT_BATCH]]
        out.print(*styled, sep="\n", no_wrap=True, overflow="ignore", crop=False)
