"""``omp-session show``: a transcript in the terminal, rendered from :mod:`omp_session.tools.transcript`.

The transcript is written line by line through :class:`omp_session.cli._lines.LineWriter` (our own
wrapping, rich's styles), not as one rich renderable per block: a 50,000-entry session printed
through rich spent 9.9× the library's time laying text out (issue 12 #6). Only the rare panels
(compaction and branch summaries) and centred rules are drawn by rich.

Internal module (a command of ``omp-session``, which is the interface); not part of the public API.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import click
from rich.panel import Panel
from rich.rule import Rule
from rich.text import Text

from omp_session.cli._common import (
    console,
    emit_json,
    is_terminal,
    json_option,
    leaf_option,
    session_argument,
    state,
)
from omp_session.cli._common import human_size as _human_size
from omp_session.cli._lines import LineWriter, Piece
from omp_session.tools.content import Execution, Part, ToolCall
from omp_session.tools.entry_kinds import EntryKind
from omp_session.tools.reading import read_session, session_short_ids
from omp_session.tools.resolve import SHORT_ID
from omp_session.tools.summary import display_time, usage_text
from omp_session.tools.tool_display import ToolCallDisplay, is_one_line_call, readable_output
from omp_session.tools.transcript import (
    Branch,
    BranchStream,
    Transcript,
    TranscriptItem,
    load_transcript,
    streamed_transcript,
)

__all__ = ["ARGUMENT_CHARS", "PREVIEW_LINES", "render_transcript", "show"]

#: Lines of tool output, command output and file content shown before folding (``--full`` shows all).
PREVIEW_LINES = 8
#: Characters of tool-call arguments shown on one line before cutting.
ARGUMENT_CHARS = 160
#: Lines of an edit's diff shown before folding (``--full`` shows all).
DIFF_LINES = 40

#: ``json.dumps(value, ensure_ascii=False)``, without building an encoder for every call.
_ONE_LINE_JSON = json.JSONEncoder(ensure_ascii=False)
#: A string as JSON (``ensure_ascii=False``), as that encoder quotes every key and string value.
_quote = json.encoder.encode_basestring
_ROLE_STYLES = {"user": "bold green", "assistant": "bold blue", "developer": "bold yellow"}
_ITEM_NAMES = {"tool_result": "tool result", "file_mention": "files", "other": "message"}
#: Items whose header names their title (an assistant's model, a custom message's type, a tool).
_TITLED_KINDS = frozenset({"assistant", "custom", "tool_result"})
#: Items shown as one line without a header, and items shown as a panel.
_ONE_LINE_KINDS = frozenset({"event", "reset", "title", "model_usage"})
_PANEL_KINDS = frozenset({EntryKind.COMPACTION.value, EntryKind.BRANCH_SUMMARY.value})


def _one_line_json(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)``; an object of strings (most calls' arguments)
    quoted key by key, without setting up an encoder for each call."""
    if type(value) is dict:
        members = []
        for key, text in value.items():
            if type(key) is not str or type(text) is not str:
                break
            members.append(f"{_quote(key)}: {_quote(text)}")
        else:
            return "{" + ", ".join(members) + "}"
    return _ONE_LINE_JSON.encode(value)


@dataclass
class _Options:
    thinking: bool
    full: bool
    events: bool


class _Renderer:
    """Writes one transcript: the options, the writer and the date of the last header shown."""

    def __init__(self, out: LineWriter, options: _Options) -> None:
        self.out = out
        self.options = options
        self.full = options.full
        self.day = ""

    def preview(self, text: str, indent: str = "  ") -> None:
        """The first lines of an output or file, each cut at the terminal's edge (``--full``: all
        of it, wrapped)."""
        lines = text.rstrip("\n").split("\n") if text else []
        shown = lines if self.full or len(lines) <= PREVIEW_LINES else lines[:PREVIEW_LINES]
        self.out.text(indent + f"\n{indent}".join(shown) if shown else "", "dim", cut=not self.full)
        if len(shown) < len(lines):
            self.out.text(f"{indent}… {len(lines) - len(shown)} more lines (--full shows all)", "dim italic")

    def header(self, item: TranscriptItem, kind: str) -> None:
        """The rule above an item: what it is, when, its id and label."""
        facts = [_ITEM_NAMES.get(kind, kind)]
        if item.title and kind in _TITLED_KINDS:
            facts.append(item.title)
        if item.timestamp:
            when = display_time(item.timestamp)
            day = when[:10]
            facts.append(when[11:19] if self.day == day else when.removesuffix(" UTC"))
            self.day = day
        if item.entry_id:
            facts.append(item.entry_id)
        if item.label:
            facts.append(f"[{item.label}]")
        # Facts of printable ASCII (nearly all) need no measuring: the separators are one cell.
        letters = "".join(facts)
        narrow = letters.isascii() and letters.isprintable()
        self.out.rule((" · ".join(facts), _ROLE_STYLES.get(kind, "bold")), "dim", narrow=narrow)

    def image(self, part: Part) -> None:
        facts = [part.mime_type or "image"]
        if part.blob:
            facts.append(f"blob {part.blob[:12]}…")
        elif part.size:
            facts.append(_human_size(part.size))
        self.out.text(f"[image: {', '.join(facts)}]", "magenta")

    def thinking(self, part: Part) -> None:
        lines = part.text.strip().split("\n")
        if self.options.thinking:
            self.out.text("▾ thinking\n" + "\n".join("  " + line for line in lines), "italic dim")
            return
        first = lines[0][:100] + ("…" if len(lines[0]) > 100 or len(lines) > 1 else "")
        self.out.text(f"▸ thinking ({len(lines)} lines, --thinking expands): {first}", "italic dim")

    def diff(self, display: ToolCallDisplay) -> None:
        """Each file's diff: its line numbers (the new file's for added and context lines, the old
        one's for removed lines), the sign, the text; a file's name above its lines when the call
        changed several files, or added, deleted or moved one."""
        budget = None if self.full else DIFF_LINES
        named = len(display.files) > 1
        for change in display.files:
            if named or change.named_apart:
                self.out.text(f"  {change.heading}", "cyan")
            lines = change.lines if budget is None else change.lines[:budget]
            width = max(
                (len(str(n)) for d in lines for n in (d.old_line, d.new_line) if n is not None), default=0
            )
            for line in lines:
                if line.sign == "@":
                    self.out.text(f"  {line.text}", "cyan dim")
                    continue
                number = line.new_line if line.sign == "+" else line.old_line
                gutter = (f"{number:>{width}} " if number is not None else " " * (width + 1)) if width else ""
                style = {"+": "dim green", "-": "dim red"}.get(line.sign, "dim")
                self.out.pieces([(f"  {gutter}{line.sign} ", "dim"), (line.text, style)])
            if budget is not None:
                budget -= len(lines)
                if len(lines) < len(change.lines):
                    more = sum(len(c.lines) for c in display.files) - DIFF_LINES
                    self.out.text(f"  … {more} more diff lines (--full shows all)", "italic dim")
                    return

    def arguments(self, arguments: list[tuple[str, str]]) -> None:
        for name, text in arguments:
            if "\n" in text:
                self.out.text(f"  {name}:\n" + "\n".join("    " + line for line in text.split("\n")), "dim")
            else:
                self.out.text(f"  {name}: {text}", "dim")

    def call_line(self, line: list[Piece]) -> None:
        """The line naming a call: after the arrow, names and JSON of printable ASCII (nearly
        all) need no measuring."""
        letters = "".join([text for text, _ in line[1:]])
        self.out.pieces(line, narrow=letters.isascii() and letters.isprintable())

    def call_body(self, call: ToolCall) -> None:
        """The readable form of a call (issue 13 #1): a diff, the written file, the command, or the
        arguments with real line breaks; a call whose arguments are all one-liners (a one-line
        command included) stays one JSON line."""
        line: list[Piece] = [("→ ", "cyan"), (call.name, "bold cyan")]
        display = None if is_one_line_call(call.arguments) else call.display()
        if display is not None and display.where:
            line.append((f" {display.where}", "cyan bold"))
        if call.intent:
            line.append((f" ({call.intent})", "cyan italic"))
        # Short calls read best as they are: one JSON line.
        if display is None or (
            not display.multiline
            and (
                display.kind == "generic" or (display.kind == "command" and "\n" not in (display.code or ""))
            )
        ):
            arguments = _one_line_json(call.arguments) if call.arguments not in (None, {}) else ""
            if not self.full and len(arguments) > ARGUMENT_CHARS:
                arguments = arguments[: ARGUMENT_CHARS - 1] + "…"
            if arguments:
                line.append((f" {arguments}", "cyan"))
            self.call_line(line)
            return
        self.call_line(line)
        if display.kind in ("edit", "write"):
            self.diff(display)
        elif display.kind == "command":
            prompt = "$ " if display.language == "bash" else ">>> "
            code = (display.code or "").replace("\n", "\n  " + " " * len(prompt))
            self.out.text("  " + prompt + code, "bold")
        self.arguments(display.arguments)

    def tool_call(self, call: ToolCall) -> None:
        self.call_body(call)
        result = call.result
        if result is None:
            self.out.text("  (no result on this branch)", "italic dim")
            return
        mark: list[Piece] = [("  ✗ error", "red") if result.is_error else ("  ⎿ result", "dim")]
        if result.pruned:
            mark.append((" (pruned from the context later)", f"{mark[0][1]} italic dim"))
        self.out.pieces(mark)
        self.preview(result.readable_text or "(no text output)", indent="    ")
        for part in result.parts:
            if part.kind == "image":
                self.image(part)

    def parts(self, parts: list[Part]) -> None:
        for part in parts:
            if part.kind == "text":
                text = part.text.strip()
                if text:
                    self.out.text(text)
            elif part.kind == "thinking" and part.text.strip():
                self.thinking(part)
            elif part.kind == "redacted_thinking":
                self.out.text("▸ thinking (redacted)", "italic dim")
            elif part.kind == "image":
                self.image(part)
            elif part.kind == "tool_call" and part.tool_call is not None:
                self.tool_call(part.tool_call)

    def execution(self, run: Execution) -> None:
        prompt = "$ " if run.language == "bash" else ">>> "
        self.out.text(prompt + run.code.replace("\n", "\n" + " " * len(prompt)), "bold")
        self.preview(run.output or "(no output)")
        facts = [f"exit {run.exit_code}"] if run.exit_code is not None else []
        facts += [n for n, flag in (("cancelled", run.cancelled), ("truncated", run.truncated)) if flag]
        if run.excluded_from_context:
            facts.append("not sent to the model")
        if facts:
            self.out.text(f"  [{', '.join(facts)}]", "red" if run.exit_code not in (0, None) else "dim")
        if run.notice:
            self.out.text("  " + run.notice, "italic dim")

    def summary_panel(self, item: TranscriptItem) -> None:
        if item.kind == EntryKind.COMPACTION:
            tokens = item.meta.get("tokensBefore")
            title = "compaction summary" + (f" · {tokens} tokens before" if tokens is not None else "")
            style = "yellow"
        else:
            where = item.meta.get("fromId")
            title = "branch summary" + (f" · from {where}" if where else "")
            style = "magenta"
        facts = " · ".join(str(x) for x in (item.entry_id, item.label and f"[{item.label}]") if x)
        panel = Panel(
            Text((item.summary or "").strip()),
            title=Text(f"{title} · {facts}" if facts else title),
            title_align="left",
            border_style=style,
        )
        self.out.renderable(panel)

    def one_line_item(self, item: TranscriptItem, kind: str) -> None:
        """An item shown as one line, with no header: a state change, a /clear, a rename, a spend."""
        out = self.out
        if kind == "event":
            if self.options.events:
                out.text(f"· {item.title} ({item.entry_id})", "dim")
        elif kind == "reset":  # omp 18's /clear: everything above is out of the model's context
            out.blank()
            out.renderable(Rule(Text(f"{item.title} · {item.entry_id}", style="yellow"), style="yellow"))
        elif kind == "title":
            source = item.meta.get("source")
            out.text(f"✎ {item.title}" + (f" ({source})" if source else "") + f" ({item.entry_id})", "cyan")
        else:
            cost = usage_text(item.meta.get("usage"))
            out.text(f"$ model usage · {item.title}" + (f" · {cost}" if cost else ""), "dim")

    def item(self, item: TranscriptItem) -> None:
        kind = item.kind
        if kind in _ONE_LINE_KINDS:
            self.one_line_item(item, kind)
            return
        out = self.out
        out.blank()
        if kind in _PANEL_KINDS:
            self.summary_panel(item)
            return
        self.header(item, kind)
        if item.execution is not None:
            self.execution(item.execution)
        for mentioned in item.files:
            detail = f"skipped: {mentioned.skipped_reason}" if mentioned.skipped_reason else ""
            out.text(f"@ {mentioned.path}" + (f" ({detail})" if detail else ""), "bold")
            if mentioned.content:
                self.preview(mentioned.content)
        if kind == "custom" and item.meta.get("display") is False:
            out.text("(not displayed to the user)", "italic dim")
        if kind == "tool_result":
            self.preview(readable_output(item.text) or "(no text output)")
        else:
            self.parts(item.parts)
        if item.meta.get("errorMessage"):
            out.text(f"error: {item.meta['errorMessage']}", "red")

    def branch_rule(self, branch: Branch) -> None:
        text = f"branch to {branch.leaf_id}" + (" (current)" if branch.is_current else "")
        text += f", continuing after {branch.joins_at}" if branch.joins_at else ", from the root"
        self.out.renderable(Rule(Text(text, style="bold"), style="bold"))


def render_transcript(
    transcript: Transcript,
    out: LineWriter,
    options: _Options,
    streams: Sequence[BranchStream] | None = None,
    shown_ids: Callable[[str], Mapping[str, str]] | None = None,
) -> None:
    """Write ``transcript`` to ``out``, in order: its ``branches``, or the ``streams`` (items built
    while they are written, each item's lines flushed before the next is built, so the first
    lines of a 50,000-entry branch come at once). ``shown_ids()`` gives the short forms of long
    entry ids (given the first such id); it is asked when a long id is first to be printed (most
    sessions have none)."""
    out.text(f"Session {transcript.session_id}: {transcript.title or '(untitled)'}", "bold")
    facts = [transcript.path]
    if transcript.cwd:
        facts.append(f"cwd {transcript.cwd}")
    if transcript.created:
        facts.append(f"created {display_time(transcript.created)}")
    out.unwrapped("\n".join(facts), "dim")
    out.flush()
    renderer = _Renderer(out, options)
    known: list[Mapping[str, str]] = []

    def short(entry_id: str | None) -> str | None:
        if entry_id is None or len(entry_id) <= SHORT_ID or shown_ids is None:
            return entry_id
        if not known:
            known.append(shown_ids(entry_id))
        return known[0].get(entry_id, entry_id)

    branches = (
        [(b.leaf_id, b.is_current, b.joins_at, iter(b.items)) for b in transcript.branches]
        if streams is None
        else [(b.leaf_id, b.is_current, b.joins_at, b.items()) for b in streams]
    )
    any_items = False
    for leaf, current, joins_at, items in branches:
        if len(branches) > 1:
            renderer.branch_rule(Branch(short(leaf), current, short(joins_at), []))
        for item in items:
            any_items = True
            item.entry_id = short(item.entry_id)
            renderer.item(item)
            out.flush()
    if not any_items:
        out.text("(no entries)", "italic")
    out.flush()


@click.command(
    epilog="\b\nExamples:\n  omp-session show 15d0c6a0\n  omp-session show 15d0 --leaf a0000002 --thinking\n"
    "  omp-session show ~/.omp/agent/sessions/-src-app/2025-06-02T14-05-00-000Z_15d0c6a0e2b44001.jsonl",
)
@session_argument()
@leaf_option
@click.option("--all-branches", is_flag=True, help="Show every branch, the current one first.")
@click.option("--thinking", is_flag=True, help="Expand thinking blocks (folded by default).")
@click.option("--full", is_flag=True, help="Show tool output, command output and files in full.")
@click.option("--events", is_flag=True, help="Also show model, thinking-level and other state changes.")
@click.option(
    "--all-entries",
    is_flag=True,
    help="Also show import bookkeeping (the foreign_session_import entry, kept Claude Code/Codex records).",
)
@click.option("--pager/--no-pager", default=True, help="Page the output on a terminal (default: yes).")
@json_option
@click.pass_context
def show(
    ctx: click.Context,
    session: str,
    leaf_id: str | None,
    all_branches: bool,
    thinking: bool,
    full: bool,
    events: bool,
    all_entries: bool,
    pager: bool,
    as_json: bool,
) -> None:
    """Show the transcript of the current branch of SESSION.

    User and assistant messages, thinking (folded), tool calls with their results, bash and
    python runs, file mentions, compaction and branch summaries.
    """
    if leaf_id is not None and all_branches:
        raise click.UsageError("give --leaf or --all-branches, not both")
    cli = state(ctx)
    path = cli.resolve(session)
    if as_json:
        transcript = load_transcript(
            path, leaf_id=leaf_id, all_branches=all_branches, all_entries=all_entries, storage=cli.storage
        )
        emit_json(transcript.to_dict())
        return
    options = _Options(thinking=thinking, full=full, events=events)
    out = console()
    with read_session(path, storage=cli.storage) as opened:
        facts, streams = streamed_transcript(
            opened, leaf_id=leaf_id, all_branches=all_branches, all_entries=all_entries
        )
        facts.path = os.fspath(path)  # as the caller named it, not made absolute

        def shown_ids(long_id: str) -> Mapping[str, str]:
            # Long ids (an import's ``claude-<uuid>-message-1``) as their unique tail, which
            # ``--leaf`` accepts back (issue 30 #5); ``--json`` keeps every id whole.
            return session_short_ids(opened, [long_id])

        if pager and is_terminal():
            paged = io.StringIO()
            render_transcript(facts, LineWriter(out, paged), options, streams, shown_ids)
            click.echo_via_pager(paged.getvalue(), color=True)
        else:
            render_transcript(facts, LineWriter(out, out.file), options, streams, shown_ids)
