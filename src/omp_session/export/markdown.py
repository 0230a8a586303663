"""Markdown of one branch of a session (the current one by default), for sharing and archiving.

User and assistant text is written as it is (it usually is Markdown already); everything else —
tool arguments and output, commands, files, summaries — goes into fenced blocks whose fence is
longer than any backtick run inside, so no content can break the document's structure. Thinking
and tool output are folded into ``<details>`` blocks, which GitHub and most viewers render.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from omp_session.store import SessionStorage
from omp_session.tools.content import Execution, Part, ToolCall
from omp_session.tools.entry_kinds import EntryKind
from omp_session.tools.reading import read_session
from omp_session.tools.summary import display_time, usage_text
from omp_session.tools.tool_display import diff_text, readable_output
from omp_session.tools.transcript import Transcript, TranscriptItem, streamed_transcript

__all__ = ["export_markdown", "fence", "render_markdown"]

_HEADINGS = {
    "user": "User",
    "developer": "Developer",
    "assistant": "Assistant",
    "tool_result": "Tool result",
    "bash": "Bash",
    "python": "Python",
    "file_mention": "Files",
    "custom": "Custom message",
    EntryKind.COMPACTION: "Compaction summary",
    EntryKind.BRANCH_SUMMARY: "Branch summary",
    "other": "Message",
}


def fence(text: str, language: str = "") -> str:
    """``text`` in a fenced code block that nothing inside can close."""
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=2)
    marker = "`" * (longest + 1)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{marker}{language}\n{body}{marker}"


def _details(summary: str, body: str) -> str:
    return f"<details><summary>{summary}</summary>\n\n{body}\n\n</details>"


def _arguments(arguments: Any) -> str:
    return json.dumps(arguments, indent=2, ensure_ascii=False) if arguments is not None else ""


def _image(part: Part) -> str:
    facts = [part.mime_type] if part.mime_type else []
    if part.blob:
        facts.append(f"blob {part.blob[:12]}…")
    elif part.size:
        facts.append(f"{part.size} bytes")
    return "*[image" + (f": {', '.join(facts)}" if facts else "") + "]*"


def _call_body(call: ToolCall) -> list[str]:
    """The readable form of a call (issue 13 #1): an edit as a ```diff block, a write as the file
    in its language, a command as a shell block, other arguments with their real line breaks."""
    display = call.display()
    if display.kind == "generic" and not display.multiline:
        return [fence(_arguments(call.arguments), "json")] if call.arguments not in (None, {}) else []
    out = []
    if display.kind == "write" and all(change.action == "write" for change in display.files):
        # A new file reads best as itself, in its language (a reader copies it from here).
        out.append(fence(display.code or "", display.language or ""))
    elif display.kind in ("edit", "write"):
        for change in display.files:
            if len(display.files) > 1 or change.named_apart:
                out.append(f"`{change.heading}`")
            if change.lines:
                out.append(fence(diff_text(change.lines), "diff"))
    elif display.kind == "command":
        out.append(fence(display.code or "", "sh" if display.language == "bash" else display.language or ""))
    for name, text in display.arguments:
        out.append(f"`{name}`: {text}" if "\n" not in text else f"`{name}`:\n\n" + fence(text))
    return out


def _tool_call(call: ToolCall) -> str:
    display = call.display()
    where = f" `{display.where}`" if display.where else ""
    out = [f"**Tool call** `{call.name}`{where}" + (f" — {call.intent}" if call.intent else "")]
    out.extend(_call_body(call))
    result = call.result
    if result is not None:
        status = "error" if result.is_error else "ok"
        text = result.readable_text or "(no text output)"
        images = sum(1 for part in result.parts if part.kind == "image")
        extra = f", {images} image{'s' if images > 1 else ''}" if images else ""
        out.append(_details(f"Result ({status}{extra})", fence(text)))
    return "\n\n".join(out)


def _parts(parts: list[Part]) -> Iterator[str]:
    for part in parts:
        if part.kind == "text" and part.text.strip():
            yield part.text.strip()
        elif part.kind == "thinking" and part.text.strip():
            yield _details("Thinking", part.text.strip())
        elif part.kind == "redacted_thinking":
            yield "*[redacted thinking]*"
        elif part.kind == "image":
            yield _image(part)
        elif part.kind == "tool_call" and part.tool_call is not None:
            yield _tool_call(part.tool_call)


def _execution(run: Execution) -> Iterator[str]:
    yield fence(run.code, "python" if run.language == "python" else "sh")
    facts = []
    if run.exit_code is not None:
        facts.append(f"exit code {run.exit_code}")
    facts += [name for name, flag in (("cancelled", run.cancelled), ("truncated", run.truncated)) if flag]
    if run.excluded_from_context:
        facts.append("not sent to the model")
    if run.output:
        yield _details("Output" + (f" ({', '.join(facts)})" if facts else ""), fence(run.output))
    else:
        yield "*(no output" + (f"; {', '.join(facts)}" if facts else "") + ")*"
    if run.notice:
        yield f"*{run.notice}*"


def _body(item: TranscriptItem) -> Iterator[str]:
    if item.summary is not None:
        yield "\n".join("> " + line if line else ">" for line in item.summary.strip().splitlines())
    if item.execution is not None:
        yield from _execution(item.execution)
    for mentioned in item.files:
        if mentioned.skipped_reason:
            yield f"`{mentioned.path}` — skipped ({mentioned.skipped_reason})"
        else:
            yield f"`{mentioned.path}`\n\n" + fence(mentioned.content)
    if item.kind == "tool_result":
        yield fence(readable_output(item.text) or "(no text output)")
    else:
        yield from _parts(item.parts)
    if item.meta.get("errorMessage"):
        yield f"*Error: {item.meta['errorMessage']}*"


def _heading(item: TranscriptItem) -> str:
    name = _HEADINGS.get(item.kind, item.kind)
    if item.kind in ("custom", "tool_result", "assistant") and item.title:
        name = f"{name}: {item.title}"
    facts = [display_time(item.timestamp)] if item.timestamp else []
    if item.entry_id:
        facts.append(f"`{item.entry_id}`")
    if item.label:
        facts.append(f"label **{item.label}**")
    if item.kind == EntryKind.COMPACTION and "tokensBefore" in item.meta:
        facts.append(f"{item.meta['tokensBefore']} tokens before")
    if item.kind == "custom" and item.meta.get("display") is False:
        facts.append("not displayed to the user")
    return f"### {name}" + (f" · {' · '.join(facts)}" if facts else "")


def _event(item: TranscriptItem) -> str:
    facts = [display_time(item.timestamp)] if item.timestamp else []
    if item.entry_id:
        facts.append(f"`{item.entry_id}`")
    return f"*{item.title}*" + (f" · {' · '.join(facts)}" if facts else "")


def _preamble(transcript: Transcript) -> list[str]:
    title = transcript.title or f"Session {transcript.session_id}"
    lines = [f"# {title}", "", f"- **Session:** `{transcript.session_id}`"]
    if transcript.cwd:
        lines.append(f"- **Directory:** `{transcript.cwd}`")
    if transcript.created:
        lines.append(f"- **Created:** {display_time(transcript.created)}")
    lines.append(
        f"- **Branch:** leaf `{transcript.leaf_id}`" if transcript.leaf_id else "- **Branch:** (empty)"
    )
    return lines


def _reset(item: TranscriptItem) -> str:
    return f"---\n\n*{item.title}* · `{item.entry_id}`\n\n---"


def _title(item: TranscriptItem) -> str:
    source = item.meta.get("source")
    return _event(item) + (f" · {source}" if source else "")


def _model_usage(item: TranscriptItem) -> str:
    cost = usage_text(item.meta.get("usage"))
    return f"*model usage: {item.title}*" + (f" · {cost}" if cost else "")


#: omp 18 entries shown as one line (a /clear as a horizontal rule).
_ONE_LINERS = {"reset": _reset, "title": _title, "model_usage": _model_usage}


def render_markdown(transcript: Transcript, *, events: bool = False) -> str:
    """The Markdown document of ``transcript`` (state-change events only with ``events``)."""
    branches = [(b.leaf_id, b.is_current, b.joins_at, b.items) for b in transcript.branches]
    return _document(transcript, branches, events)


#: A branch to write: its leaf, whether it is the current one, where it joins, its items.
_Branch = tuple[str | None, bool, str | None, Iterable[TranscriptItem]]


def _document(transcript: Transcript, branches: Sequence[_Branch], events: bool) -> str:
    blocks = ["\n".join(_preamble(transcript))]
    for leaf_id, is_current, joins_at, items in branches:
        if len(branches) > 1:
            where = f", continuing after `{joins_at}`" if joins_at else ""
            current = " (current)" if is_current else ""
            blocks.append(f"## Branch to `{leaf_id}`{current}{where}")
        for item in items:
            if item.kind == "event":
                if events:
                    blocks.append(_event(item))
                continue
            if item.kind in _ONE_LINERS:
                blocks.append(_ONE_LINERS[item.kind](item))
                continue
            blocks.append("\n\n".join([_heading(item), *_body(item)]).rstrip())
    return "\n\n".join(blocks).rstrip() + "\n"


def export_markdown(
    path: Path | str,
    leaf_id: str | None = None,
    *,
    all_branches: bool = False,
    events: bool = False,
    progress: Callable[[int, int], None] | None = None,
    storage: SessionStorage | None = None,
) -> str:
    """Markdown of the current branch of the session at ``path`` (a file, else a row of
    ``storage``; or of the branch to ``leaf_id``).

    The file is only read. ``leaf_id`` may be a unique id prefix. ``progress(done, total)`` hears
    of the branch's entries written so far.
    """
    with read_session(path, storage=storage) as session:
        transcript, streams = streamed_transcript(session, leaf_id=leaf_id, all_branches=all_branches)
        transcript.path = os.fspath(path)
        total = sum(len(stream.entries) for stream in streams)
        branches: list[_Branch] = []
        before = 0
        for stream in streams:

            def walked(done: int, before: int = before) -> None:
                if progress is not None:
                    progress(before + done, total)

            branches.append((stream.leaf_id, stream.is_current, stream.joins_at, stream.items(walked)))
            before += len(stream.entries)
        return _document(transcript, branches, events)
