"""Content blocks of a message turned into display blocks: text, thinking, tool calls, images, output.

A :class:`Block` holds escaped or sanitised HTML (``Markup``) and plain strings that the templates
escape; nothing here trusts the session's content.

Internal module (part of the viewer, whose API is :mod:`omp_session.web`); not part of the public API.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup, escape

from omp_session.rendering.images import ImageSource
from omp_session.rendering.markdown import (
    highlight_code,
    highlight_json,
    highlight_lines,
    lexer_for_path,
    render_markdown,
)
from omp_session.tools.tool_display import FileChange, readable_output, tool_call_display

__all__ = ["Block", "assistant_blocks", "content_blocks", "json_block", "output_block", "summarize_args"]

#: Outputs longer than this many lines (or characters) start collapsed, showing a preview.
LONG_LINES = 14
LONG_CHARS = 2_000
PREVIEW_LINES = 4
_SUMMARY_KEYS = ("command", "path", "file_path", "pattern", "query", "url", "description", "prompt", "code")


@dataclass
class Block:
    """One displayable piece of an entry; ``kind`` selects the template macro."""

    kind: str
    html: Markup = field(default_factory=Markup)
    title: str = ""
    detail: str = ""
    src: str | None = None
    lines: int = 0
    preview: str = ""
    collapsed: bool = False
    children: list[Block] = field(default_factory=list)
    #: Diff rows: (``add``/``del``/``ctx``/``hunk``, old line number, new line number, line HTML).
    rows: list[tuple[str, str, str, Markup]] = field(default_factory=list)


def markdown_block(text: str) -> Block:
    return Block("markdown", render_markdown(text))


def output_block(text: str, title: str = "output", language: str | None = None) -> Block:
    """Preformatted text (highlighted when ``language`` is known); long text starts collapsed."""
    lines = text.count("\n") + 1 if text else 0
    long = lines > LONG_LINES or len(text) > LONG_CHARS
    preview = "\n".join(text.split("\n", PREVIEW_LINES)[:PREVIEW_LINES])[:600] if long else ""
    return Block(
        "output", highlight_code(text, language), title=title, lines=lines, preview=preview, collapsed=long
    )


def json_block(value: Any, title: str, collapsed: bool = True) -> Block:
    """``value`` as indented, highlighted JSON in a collapsible block."""
    return Block("json", highlight_json(value), title=title, collapsed=collapsed)


def image_block(block: dict[str, Any], images: ImageSource) -> Block:
    src, note = images(block)
    mime = block.get("mimeType")
    return Block("image", src=src, title=mime if isinstance(mime, str) else "image", detail=note)


def content_blocks(content: Any, images: ImageSource) -> list[Block]:
    """User-style content (a string or text/image blocks) as Markdown and image blocks."""
    if isinstance(content, str):
        return [markdown_block(content)] if content else []
    if not isinstance(content, list):
        return [] if content is None else [json_block(content, "content")]
    blocks: list[Block] = []
    for item in content:
        if not isinstance(item, dict):
            blocks.append(json_block(item, "content block"))
        elif item.get("type") == "text" and isinstance(item.get("text"), str):
            blocks.append(markdown_block(item["text"]))
        elif item.get("type") == "image":
            blocks.append(image_block(item, images))
        else:
            blocks.append(json_block(item, f"{item.get('type', 'unknown')} block"))
    return blocks


def result_blocks(content: Any, images: ImageSource, language: str | None) -> list[Block]:
    """Tool-result content: text as (possibly long) preformatted output (a result written as a
    JSON string decoded, as every view shows it), images as images."""
    if isinstance(content, str):
        return [output_block(readable_output(content), language=language)]
    blocks: list[Block] = []
    for item in content if isinstance(content, list) else []:
        if isinstance(item, dict) and item.get("type") == "text" and isinstance(item.get("text"), str):
            blocks.append(output_block(readable_output(item["text"]), language=language))
        elif isinstance(item, dict) and item.get("type") == "image":
            blocks.append(image_block(item, images))
        else:
            blocks.append(json_block(item, "content block"))
    return blocks


def summarize_args(arguments: Any, limit: int = 110) -> str:
    """A one-line hint of what a tool call does: its command, path or first string argument."""
    if not isinstance(arguments, dict):
        return ""
    if any(isinstance(v, str) and "*** Begin Patch" in v for v in arguments.values()):
        patched = tool_call_display("apply_patch", arguments).where  # the files, not the patch text
        if patched:
            return patched
    value = next((arguments[k] for k in _SUMMARY_KEYS if isinstance(arguments.get(k), str)), None)
    if value is None:
        value = next((v for v in arguments.values() if isinstance(v, str)), "")
    line = " ".join(str(value).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


_ROW_CLASSES = {"+": "add", "-": "del", " ": "ctx", "@": "hunk"}


def _diff_html(change: FileChange, lexer: str | None) -> list[Markup]:
    """Each line of ``change`` highlighted as part of its side's whole text: the old side (context
    and removed lines) and the new side (context and added lines) are each highlighted once, so a
    comment or string spanning lines keeps its colour on every line."""
    old_side = [i for i, line in enumerate(change.lines) if line.sign in (" ", "-")]
    new_side = [i for i, line in enumerate(change.lines) if line.sign in (" ", "+")]
    html: dict[int, Markup] = {}
    for side in (old_side, new_side):  # context lines: the new side's colours win
        html.update(zip(side, highlight_lines([change.lines[i].text for i in side], lexer), strict=True))
    return [html[i] if i in html else escape(line.text) for i, line in enumerate(change.lines)]


def diff_block(change: FileChange) -> Block:
    """One file's change as a diff table: line numbers (the file's when the tool's result or the
    whole written file gave them), sign, and the line highlighted in the language of the file."""
    path = change.moved_to or change.path
    lexer = lexer_for_path(path) if path else None
    rows = []
    for line, html in zip(change.lines, _diff_html(change, lexer), strict=True):
        old = str(line.old_line) if line.old_line is not None and line.sign != "@" else ""
        new = str(line.new_line) if line.new_line is not None and line.sign != "@" else ""
        rows.append((_ROW_CLASSES.get(line.sign, "ctx"), old, new, html))
    return Block("diff", title=change.heading if change.path else "diff", detail=change.numbering, rows=rows)


def tool_call_block(block: dict[str, Any], result_details: Any = None) -> Block:
    """A tool call as a person reads it (issue 13 #1): an edit as a diff, a write as the file, a
    command as a command block, multi-line arguments with their line breaks; then the remaining
    arguments as JSON."""
    name = block.get("name") if isinstance(block.get("name"), str) else "tool"
    arguments = block.get("arguments")
    display = tool_call_display(str(name), arguments, result_details)
    children: list[Block] = []
    if display.kind in ("edit", "write"):
        children.extend(diff_block(change) for change in display.files)
    elif display.kind == "command":
        title = "command" if display.language == "bash" else "code"
        children.append(Block("code", highlight_code(display.code or "", display.language), title=title))
    if isinstance(arguments, dict):
        for key in arguments:
            if key in display.shown and display.kind == "generic":
                children.append(Block("code", escape(arguments[key]), title=key))
        rest = {key: value for key, value in arguments.items() if key not in display.shown}
        if rest or not display.shown:
            children.append(json_block(rest, "arguments" if not display.shown else "other arguments", False))
    elif arguments is not None:
        children.append(json_block(arguments, "arguments", collapsed=False))
    intent = block.get("intent")
    hint = display.where or summarize_args(arguments)
    return Block(
        "toolcall",
        title=str(name),
        detail=intent if isinstance(intent, str) and intent else hint,
        collapsed=True,
        children=children,
    )


def thinking_block(text: str) -> Block:
    words = len(text.split())
    preview = " ".join(text.split())[:140]
    return Block("thinking", render_markdown(text), title=f"{words} words", preview=preview, collapsed=True)


def assistant_blocks(
    content: Any, images: ImageSource, results: Mapping[str, Any] | None = None
) -> list[Block]:
    """Assistant content: text, thinking, redacted thinking and tool calls, in order. ``results``
    holds the ``details`` of tool results by call id (an edit's diff with the file's line numbers)."""
    if isinstance(content, str):
        return [markdown_block(content)]
    blocks: list[Block] = []
    for item in content if isinstance(content, list) else []:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "text" and isinstance(item.get("text"), str):
            blocks.append(markdown_block(item["text"]))
        elif kind == "thinking" and isinstance(item.get("thinking"), str):
            if item["thinking"].strip():
                blocks.append(thinking_block(item["thinking"]))
        elif kind == "redactedThinking":
            blocks.append(Block("note", title="redacted thinking (encrypted by the provider)"))
        elif kind == "toolCall":
            call_id = item.get("id")
            details = results.get(call_id) if results is not None and isinstance(call_id, str) else None
            blocks.append(tool_call_block(item, details))
        elif kind == "image":
            blocks.append(image_block(item, images))
        else:
            blocks.append(json_block(item, f"{kind or 'unknown'} block"))
    return blocks


def language_for_call(call: dict[str, Any] | None) -> str | None:
    """A highlighting language for a tool result, from the path its call read (``read`` tools)."""
    if not call:
        return None
    arguments = call.get("arguments")
    path = arguments.get("path") or arguments.get("file_path") if isinstance(arguments, dict) else None
    if isinstance(path, str) and str(call.get("name", "")).lower() in ("read", "read_file", "view", "cat"):
        return lexer_for_path(path)
    return None
