"""Message content as display parts: text, thinking, images, tool calls and their results.

Shared by :mod:`omp_session.tools.transcript` (and through it by ``show`` and the exporters). Parsing
never fails: missing or mistyped fields become empty values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from omp_session.format.blob_refs import parse_blob_ref
from omp_session.model.llm import format_output_meta
from omp_session.model.message_text import message_text
from omp_session.tools.tool_display import ToolCallDisplay, readable_output, tool_call_display

__all__ = [
    "Execution",
    "MentionedFile",
    "Part",
    "ToolCall",
    "ToolResult",
    "content_parts",
    "content_text",
    "execution_of",
    "files_of",
    "message_text",
    "tool_result_of",
]


@dataclass
class ToolResult:
    """What a tool returned (a ``toolResult`` message)."""

    entry_id: str | None
    tool_call_id: str
    tool_name: str
    parts: list[Part]
    is_error: bool
    #: The output was pruned from the context later (``prunedAt``), though the text is still here.
    pruned: bool = False
    #: The tool's structured ``details`` (an edit's diff, a sub-agent's usage, …), as stored.
    details: Any = None

    @property
    def text(self) -> str:
        return "\n".join(part.text for part in self.parts if part.kind == "text")

    @property
    def readable_text(self) -> str:
        """The text as the views show it: each text part written as a JSON string decoded
        (Codex's ``{"output": …, "metadata": …}``; :func:`readable_output`)."""
        return "\n".join(readable_output(part.text) for part in self.parts if part.kind == "text")


@dataclass
class ToolCall:
    """An assistant's ``toolCall`` block and, when found on the same stretch, its result."""

    id: str
    name: str
    arguments: Any
    intent: str | None = None
    result: ToolResult | None = None

    def display(self) -> ToolCallDisplay:
        """How to show this call: an edit as a diff (numbered from its result when it has one), a
        write as the file, a command as a command, other arguments with their line breaks."""
        return tool_call_display(self.name, self.arguments, self.result.details if self.result else None)


@dataclass
class Part:
    """One block of a message: text, thinking, redacted thinking, an image or a tool call."""

    kind: str
    text: str = ""
    mime_type: str | None = None
    #: ``blob:sha256:…`` digest of an externalised image (``None`` for inline data).
    blob: str | None = None
    #: Approximate decoded size in bytes of an inline image.
    size: int | None = None
    tool_call: ToolCall | None = None


@dataclass
class Execution:
    """A ``bashExecution`` or ``pythonExecution`` message."""

    language: str
    code: str
    output: str
    exit_code: int | None
    cancelled: bool
    truncated: bool
    #: omp's output-meta notice (``[Showing lines …]``), empty when there is none.
    notice: str = ""
    excluded_from_context: bool = False


@dataclass
class MentionedFile:
    """One file of a ``fileMention`` message."""

    path: str
    content: str
    line_count: int | None = None
    skipped_reason: str | None = None


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _image_part(block: Mapping[str, Any]) -> Part:
    data = block.get("data")
    digest = parse_blob_ref(data)
    size = len(data) * 3 // 4 if isinstance(data, str) and digest is None else None
    mime = block.get("mimeType")
    return Part("image", mime_type=mime if isinstance(mime, str) else None, blob=digest, size=size)


def content_parts(content: Any) -> list[Part]:
    """Text, thinking, image and tool-call parts of a message ``content`` (a string or blocks)."""
    if isinstance(content, str):
        return [Part("text", content)]
    parts: list[Part] = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(Part("text", _str(block.get("text"))))
        elif kind == "thinking":
            parts.append(Part("thinking", _str(block.get("thinking"))))
        elif kind == "redactedThinking":
            parts.append(Part("redacted_thinking"))
        elif kind == "image":
            parts.append(_image_part(block))
        elif kind == "toolCall":
            intent = block.get("intent")
            call = ToolCall(
                _str(block.get("id")),
                _str(block.get("name")),
                block.get("arguments"),
                intent if isinstance(intent, str) else None,
            )
            parts.append(Part("tool_call", tool_call=call))
    return parts


def content_text(content: Any) -> str:
    """The text of a content value: the string, or its text blocks joined by newlines."""
    return "\n".join(part.text for part in content_parts(content) if part.kind == "text")


def _int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def execution_of(message: Mapping[str, Any], language: str) -> Execution:
    meta = message.get("meta")
    return Execution(
        language=language,
        code=_str(message.get("command" if language == "bash" else "code")),
        output=_str(message.get("output")),
        exit_code=_int_or_none(message.get("exitCode")),
        cancelled=bool(message.get("cancelled")),
        truncated=bool(message.get("truncated")),
        notice=format_output_meta(meta if isinstance(meta, Mapping) else None).strip(),
        excluded_from_context=bool(message.get("excludeFromContext")),
    )


def files_of(message: Mapping[str, Any]) -> list[MentionedFile]:
    files = message.get("files")
    out: list[MentionedFile] = []
    for item in files if isinstance(files, list) else ():
        if isinstance(item, dict):
            reason = item.get("skippedReason")
            out.append(
                MentionedFile(
                    path=_str(item.get("path")),
                    content=_str(item.get("content")),
                    line_count=_int_or_none(item.get("lineCount")),
                    skipped_reason=reason if isinstance(reason, str) else None,
                )
            )
    return out


def tool_result_of(entry_id: str | None, message: Mapping[str, Any]) -> ToolResult:
    return ToolResult(
        entry_id=entry_id,
        tool_call_id=_str(message.get("toolCallId")),
        tool_name=_str(message.get("toolName")),
        parts=content_parts(message.get("content")),
        is_error=bool(message.get("isError")),
        pruned=message.get("prunedAt") is not None,
        details=message.get("details"),
    )
