"""``omp-session tree``: every entry of a session as a tree, one line each.

Internal module (a command of ``omp-session``, which is the interface); not part of the public API.
"""

from __future__ import annotations

import click
from rich.text import Text

from omp_session.cli._common import console, emit_json, json_option, session_argument, state
from omp_session.model.tree import SessionIndex
from omp_session.store.loading import load_session
from omp_session.tools.transcript import default_leaf
from omp_session.tools.tree_view import TreeLine, tree_lines

__all__ = ["tree"]

_KIND_STYLES = {
    "user": "green",
    "assistant": "blue",
    "compaction": "yellow",
    "branch summary": "magenta",
    "event": "dim",
}


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
@json_option
@click.pass_context
def tree(ctx: click.Context, session: str, full: bool, as_json: bool) -> None:
    """Show the tree of SESSION: one line per entry, branches drawn with lines.

    Labels are shown in brackets, the leaf (where omp resumes) is marked, and long runs without
    user messages, labels or summaries are folded unless --full is given.
    """
    loaded = load_session(state(ctx).resolve(session))
    index = SessionIndex(loaded.entries)
    lines = tree_lines(index, default_leaf(loaded.entries), full=full)
    if as_json:
        emit_json([line.to_dict() for line in lines])
        return
    out = console()
    if not lines:
        out.print(Text("(no entries)", style="italic"))
    for line in lines:
        out.print(_styled(line), no_wrap=True, overflow="ellipsis")
