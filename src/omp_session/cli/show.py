"""``omp-session show``: a transcript in the terminal, rendered from :mod:`omp_session.tools.transcript`.

Internal module (a command of ``omp-session``, which is the interface); not part of the public API.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import click
from rich.console import Console, RenderableType
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
from omp_session.tools.content import Execution, Part, ToolCall
from omp_session.tools.entry_kinds import EntryKind
from omp_session.tools.summary import display_time, usage_text
from omp_session.tools.tool_display import ToolCallDisplay
from omp_session.tools.transcript import Branch, Transcript, TranscriptItem, load_transcript

__all__ = ["ARGUMENT_CHARS", "PREVIEW_LINES", "render_transcript", "show"]

#: Lines of tool output, command output and file content shown before folding (``--full`` shows all).
PREVIEW_LINES = 8
#: Renderables printed with one ``Console.print``.
PRINT_BATCH = 500
#: Characters of tool-call arguments shown on one line before cutting.
ARGUMENT_CHARS = 160
#: Lines of an edit's diff shown before folding (``--full`` shows all).
DIFF_LINES = 40

_ROLE_STYLES = {"user": "bold green", "assistant": "bold blue", "developer": "bold yellow"}


class _Unwrapped(Text):
    """Text printed without rich's wrapping: a long path stays whole (the terminal wraps it)."""


@dataclass
class _Options:
    thinking: bool
    full: bool
    events: bool


def _lines_preview(text: str, full: bool, indent: str = "  ") -> Text:
    lines = text.rstrip("\n").split("\n") if text else []
    shown = lines if full or len(lines) <= PREVIEW_LINES else lines[:PREVIEW_LINES]
    # Previews are cut at the terminal edge instead of wrapping back to column 0.
    out = Text("\n".join(indent + line for line in shown), style="dim", no_wrap=not full, overflow="ellipsis")
    if len(shown) < len(lines):
        out.append(f"\n{indent}… {len(lines) - len(shown)} more lines (--full shows all)", style="italic dim")
    return out


def _header(item: TranscriptItem, name: str, style: str, date: list[str]) -> Rule:
    facts = [name]
    if item.title and item.kind in ("assistant", "custom", "tool_result"):
        facts.append(item.title)
    if item.timestamp:
        when = display_time(item.timestamp)
        day = when[:10]
        facts.append(when[11:19] if date and date[0] == day else when.removesuffix(" UTC"))
        date[:] = [day]
    if item.entry_id:
        facts.append(item.entry_id)
    if item.label:
        facts.append(f"[{item.label}]")
    return Rule(Text(" · ".join(facts), style=style), align="left", style="dim")


def _image(part: Part) -> Text:
    facts = [part.mime_type or "image"]
    if part.blob:
        facts.append(f"blob {part.blob[:12]}…")
    elif part.size:
        facts.append(_human_size(part.size))
    return Text(f"[image: {', '.join(facts)}]", style="magenta")


def _thinking(part: Part, options: _Options) -> Text:
    lines = part.text.strip().split("\n")
    if options.thinking:
        return Text("▾ thinking\n" + "\n".join("  " + line for line in lines), style="italic dim")
    first = lines[0][:100] + ("…" if len(lines[0]) > 100 or len(lines) > 1 else "")
    return Text(f"▸ thinking ({len(lines)} lines, --thinking expands): {first}", style="italic dim")


def _diff(display: ToolCallDisplay, options: _Options) -> Iterator[Text]:
    lines = display.diff if options.full else display.diff[:DIFF_LINES]
    width = max((len(str(n)) for d in lines for n in (d.old_line, d.new_line) if n is not None), default=1)
    for line in lines:
        if line.sign == "@":
            yield Text(f"  {line.text}", style="cyan dim")
            continue
        number = line.new_line if line.sign == "+" else line.old_line
        gutter = f"{number:>{width}}" if number is not None else " " * width
        style = {"+": "green", "-": "red"}.get(line.sign, "dim")
        yield Text(f"  {gutter} {line.sign} ", style="dim").append(line.text, style=style)
    if len(lines) < len(display.diff):
        yield Text(
            f"  … {len(display.diff) - len(lines)} more diff lines (--full shows all)", style="italic dim"
        )


def _arguments_block(arguments: list[tuple[str, str]]) -> Iterator[Text]:
    for name, text in arguments:
        if "\n" in text:
            yield Text(f"  {name}:", style="dim").append(
                "\n" + "\n".join("    " + line for line in text.split("\n"))
            )
        else:
            yield Text(f"  {name}: ", style="dim").append(text)


def _call_body(call: ToolCall, options: _Options) -> Iterator[RenderableType]:
    """The readable form of a call (issue 13 #1): a diff, the written file, the command, or the
    arguments with real line breaks; a call whose arguments are all one-liners (a one-line
    command included) stays one JSON line."""
    display = call.display()
    line = Text("→ ", style="cyan").append(call.name, style="bold cyan")
    if display.kind in ("edit", "write") and display.path:
        line.append(f" {display.path}", style="bold")
    if call.intent:
        line.append(f" ({call.intent})", style="italic")
    one_line = display.kind == "generic" or (display.kind == "command" and "\n" not in (display.code or ""))
    if one_line and not display.multiline:  # short calls read best as they are: one JSON line
        arguments = json.dumps(call.arguments, ensure_ascii=False) if call.arguments not in (None, {}) else ""
        if not options.full and len(arguments) > ARGUMENT_CHARS:
            arguments = arguments[: ARGUMENT_CHARS - 1] + "…"
        yield line.append(f" {arguments}" if arguments else "")
        return
    yield line
    if display.kind == "edit":
        yield from _diff(display, options)
    elif display.kind == "write":
        yield _lines_preview(display.code or "", options.full)
    elif display.kind == "command":
        prompt = "$ " if display.language == "bash" else ">>> "
        code = (display.code or "").replace("\n", "\n  " + " " * len(prompt))
        yield Text("  " + prompt + code, style="bold")
    yield from _arguments_block(display.arguments)


def _tool_call(call: ToolCall, options: _Options) -> Iterator[RenderableType]:
    yield from _call_body(call, options)
    result = call.result
    if result is None:
        yield Text("  (no result on this branch)", style="italic dim")
        return
    mark = Text("  ✗ error" if result.is_error else "  ⎿ result", style="red" if result.is_error else "dim")
    if result.pruned:
        mark.append(" (pruned from the context later)", style="italic dim")
    yield mark
    yield _lines_preview(result.text or "(no text output)", options.full, indent="    ")
    yield from (_image(p) for p in result.parts if p.kind == "image")


def _parts(parts: list[Part], options: _Options) -> Iterator[RenderableType]:
    for part in parts:
        if part.kind == "text" and part.text.strip():
            yield Text(part.text.strip())
        elif part.kind == "thinking" and part.text.strip():
            yield _thinking(part, options)
        elif part.kind == "redacted_thinking":
            yield Text("▸ thinking (redacted)", style="italic dim")
        elif part.kind == "image":
            yield _image(part)
        elif part.kind == "tool_call" and part.tool_call is not None:
            yield from _tool_call(part.tool_call, options)


def _execution(run: Execution, options: _Options) -> Iterator[RenderableType]:
    prompt = "$ " if run.language == "bash" else ">>> "
    yield Text(prompt + run.code.replace("\n", "\n" + " " * len(prompt)), style="bold")
    yield _lines_preview(run.output or "(no output)", options.full)
    facts = [f"exit {run.exit_code}"] if run.exit_code is not None else []
    facts += [n for n, flag in (("cancelled", run.cancelled), ("truncated", run.truncated)) if flag]
    if run.excluded_from_context:
        facts.append("not sent to the model")
    if facts:
        yield Text(f"  [{', '.join(facts)}]", style="red" if run.exit_code not in (0, None) else "dim")
    if run.notice:
        yield Text("  " + run.notice, style="italic dim")


def _summary_panel(item: TranscriptItem) -> Panel:
    if item.kind == EntryKind.COMPACTION:
        tokens = item.meta.get("tokensBefore")
        title = "compaction summary" + (f" · {tokens} tokens before" if tokens is not None else "")
        style = "yellow"
    else:
        where = item.meta.get("fromId")
        title = "branch summary" + (f" · from {where}" if where else "")
        style = "magenta"
    facts = " · ".join(str(x) for x in (item.entry_id, item.label and f"[{item.label}]") if x)
    return Panel(
        Text((item.summary or "").strip()),
        title=Text(f"{title} · {facts}" if facts else title),
        title_align="left",
        border_style=style,
    )


def _item(item: TranscriptItem, options: _Options, date: list[str]) -> Iterator[RenderableType]:
    if item.kind == "event":
        if options.events:
            yield Text(f"· {item.title} ({item.entry_id})", style="dim")
        return
    if item.kind == "reset":  # omp 18's /clear: everything above is out of the model's context
        yield Text("")
        yield Rule(Text(f"{item.title} · {item.entry_id}", style="yellow"), style="yellow")
        return
    if item.kind == "title":
        source = item.meta.get("source")
        yield Text(
            f"✎ {item.title}" + (f" ({source})" if source else "") + f" ({item.entry_id})", style="cyan"
        )
        return
    if item.kind == "model_usage":
        cost = usage_text(item.meta.get("usage"))
        yield Text(f"$ model usage · {item.title}" + (f" · {cost}" if cost else ""), style="dim")
        return
    yield Text("")
    if item.kind in (EntryKind.COMPACTION, EntryKind.BRANCH_SUMMARY):
        yield _summary_panel(item)
        return
    name = {"tool_result": "tool result", "file_mention": "files", "other": "message"}.get(
        item.kind, item.kind
    )
    yield _header(item, name, _ROLE_STYLES.get(item.kind, "bold"), date)
    if item.execution is not None:
        yield from _execution(item.execution, options)
    for mentioned in item.files:
        detail = f"skipped: {mentioned.skipped_reason}" if mentioned.skipped_reason else ""
        yield Text(f"@ {mentioned.path}" + (f" ({detail})" if detail else ""), style="bold")
        if mentioned.content:
            yield _lines_preview(mentioned.content, options.full)
    if item.kind == "custom" and item.meta.get("display") is False:
        yield Text("(not displayed to the user)", style="italic dim")
    if item.kind == "tool_result":
        yield _lines_preview(item.text or "(no text output)", options.full)
    else:
        yield from _parts(item.parts, options)
    if item.meta.get("errorMessage"):
        yield Text(f"error: {item.meta['errorMessage']}", style="red")


def _branch_rule(branch: Branch) -> Rule:
    text = f"branch to {branch.leaf_id}" + (" (current)" if branch.is_current else "")
    text += f", continuing after {branch.joins_at}" if branch.joins_at else ", from the root"
    return Rule(Text(text, style="bold"), style="bold")


def render_transcript(transcript: Transcript, options: _Options) -> Iterator[RenderableType]:
    """Renderables for ``transcript``, in order."""
    title = transcript.title or "(untitled)"
    yield Text(f"Session {transcript.session_id}: {title}", style="bold")
    facts = [transcript.path]
    if transcript.cwd:
        facts.append(f"cwd {transcript.cwd}")
    if transcript.created:
        facts.append(f"created {display_time(transcript.created)}")
    yield _Unwrapped("\n".join(facts), style="dim")
    date: list[str] = []
    for branch in transcript.branches:
        if len(transcript.branches) > 1:
            yield _branch_rule(branch)
        for item in branch.items:
            yield from _item(item, options, date)
    if not any(branch.items for branch in transcript.branches):
        yield Text("(no entries)", style="italic")


def _print(out: Console, transcript: Transcript, options: _Options) -> None:
    # In batches: one ``print`` per renderable costs rich its console setup every time (54 s for
    # 48,000 entries). Consecutive renderables printed alike go out together, joined by newlines
    # as separate prints would be.
    batch: list[RenderableType] = []
    unwrapped = False
    for renderable in render_transcript(transcript, options):
        if batch and (isinstance(renderable, _Unwrapped) != unwrapped or len(batch) >= PRINT_BATCH):
            out.print(*batch, sep="\n", soft_wrap=unwrapped)
            batch = []
        unwrapped = isinstance(renderable, _Unwrapped)
        batch.append(renderable)
    if batch:
        out.print(*batch, sep="\n", soft_wrap=unwrapped)


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
    pager: bool,
    as_json: bool,
) -> None:
    """Show the transcript of the current branch of SESSION.

    User and assistant messages, thinking (folded), tool calls with their results, bash and
    python runs, file mentions, compaction and branch summaries.
    """
    if leaf_id is not None and all_branches:
        raise click.UsageError("give --leaf or --all-branches, not both")
    transcript = load_transcript(state(ctx).resolve(session), leaf_id=leaf_id, all_branches=all_branches)
    if as_json:
        emit_json(transcript.to_dict())
        return
    options = _Options(thinking=thinking, full=full, events=events)
    out = console()
    if pager and is_terminal():
        with out.capture() as captured:
            _print(out, transcript, options)
        click.echo_via_pager(captured.get(), color=True)
    else:
        _print(out, transcript, options)
