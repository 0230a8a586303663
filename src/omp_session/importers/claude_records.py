"""One Claude Code record → omp messages, exactly as omp 18.2.3 converts it (spec importers §1.2).

Pure functions: no I/O. ``tool_names`` (tool_use id → name) is the only state carried between
records; it is filled by assistant records and read by later tool results.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import orjson

from omp_session.format.ids import is_time_value, iso_to_ms
from omp_session.format.javascript import holds_float
from omp_session.importers.base import js_string
from omp_session.importers.timestamps import canonical_iso_ms

Message = dict[str, Any]


#: One omp message made from a record and the suffix of its entry id (``message``, ``user-N``,
#: ``tool-N``). A plain tuple: one is built per converted record (the import's hot path).
Converted = tuple[Message, str]


def claude_timestamp_ms(value: object, fallback: int | float) -> int | float:
    """A number is epoch ms as is; a string goes through ``Date.parse``; else the fallback.

    A number outside JavaScript's time range (±8.64e15 ms) also takes the fallback: omp's
    ``toISOString`` throws there and the whole import fails (docs/importers.md, deviations)."""
    if isinstance(value, str) and (fast := canonical_iso_ms(value)) is not None:
        return fast
    if isinstance(value, bool):
        return fallback
    if isinstance(value, int | float):
        return value if is_time_value(value) else fallback  # (NaN compares false: the fallback)
    parsed = iso_to_ms(value)
    return fallback if parsed is None else parsed


def zero_usage() -> dict[str, Any]:
    return {
        "input": 0,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 0,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def _finite(value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return value if value == value and abs(value) != float("inf") else 0


def claude_usage(value: Any) -> dict[str, Any]:
    """omp's usage of a Claude ``message.usage`` (a token count that is no finite number is 0).

    Hot path (one call per assistant record): plain integers, the usual case, skip ``_finite``.
    """
    if type(value) is not dict:
        return zero_usage()
    get = value.get
    tokens_in, tokens_out = get("input_tokens", 0), get("output_tokens", 0)
    read, write = get("cache_read_input_tokens", 0), get("cache_creation_input_tokens", 0)
    if type(tokens_in) is not int:
        tokens_in = _finite(tokens_in)
    if type(tokens_out) is not int:
        tokens_out = _finite(tokens_out)
    if type(read) is not int:
        read = _finite(read)
    if type(write) is not int:
        write = _finite(write)
    return {
        "input": tokens_in,
        "output": tokens_out,
        "cacheRead": read,
        "cacheWrite": write,
        "totalTokens": tokens_in + tokens_out + read + write,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def stop_reason(value: Any) -> str:
    if value == "tool_use":
        return "toolUse"
    if value == "max_tokens":
        return "length"
    if value in ("end_turn", "stop_sequence", "pause_turn") or value is None:
        return "stop"
    return "error"


def _image(block: Any) -> Message | None:
    if (
        not isinstance(block, dict)
        or block.get("type") != "image"
        or not isinstance(block.get("source"), dict)
    ):
        return None
    data = js_string(block["source"].get("data"))
    mime = js_string(block["source"].get("media_type"))
    return {"type": "image", "data": data, "mimeType": mime} if data and mime else None


def _user_part(block: Any) -> Message | None:
    if not isinstance(block, dict):
        return None
    if block.get("type") == "text" and isinstance(block.get("text"), str):
        return {"type": "text", "text": block["text"]}
    return _image(block)


def _tool_result_content(value: Any) -> list[Message]:
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    if not isinstance(value, list):
        return []
    content: list[Message] = []
    for block in value:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            content.append({"type": "text", "text": block["text"]})
        elif (image := _image(block)) is not None:
            content.append(image)
    return content


def _assistant_content(value: Any, tool_names: MutableMapping[str, str]) -> list[Message]:
    if type(value) is not list:
        return []
    content: list[Message] = []
    for block in value:
        if type(block) is not dict:
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if type(text) is str:
                content.append({"type": "text", "text": text})
        elif kind == "thinking":
            thinking = block.get("thinking")
            if type(thinking) is str:
                signature = block.get("signature")
                if type(signature) is str:
                    content.append({"type": "thinking", "thinking": thinking, "thinkingSignature": signature})
                else:
                    content.append({"type": "thinking", "thinking": thinking})
        elif kind == "tool_use":
            call_id, name = block.get("id"), block.get("name")
            if type(call_id) is not str or not call_id or type(name) is not str or not name:
                continue
            arguments = block.get("input")
            if type(arguments) is not dict:
                arguments = {}
            content.append({"type": "toolCall", "id": call_id, "name": name, "arguments": arguments})
            tool_names[call_id] = name
    return content


def _assistant(
    record: dict[str, Any], message: dict[str, Any], ts: int | float, tool_names: MutableMapping[str, str]
) -> list[Converted]:
    content = _assistant_content(message.get("content"), tool_names)
    error_message = record.get("error")
    if type(error_message) is not str:
        error_message = None
    if not content and not error_message:
        return []
    model = message.get("model")
    out: Message = {
        "role": "assistant",
        "content": content,
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": model if type(model) is str and model else "unknown",
        "usage": claude_usage(message.get("usage")),
        # An API-error record still carries a normal stop_reason; only the flag says it failed.
        "stopReason": "error"
        if record.get("isApiErrorMessage") is True
        else stop_reason(message.get("stop_reason")),
        "timestamp": ts,
    }
    response_id = message.get("id")
    if type(response_id) is str and response_id:
        out["responseId"] = response_id
    if error_message:
        out["errorMessage"] = error_message
    status = record.get("apiErrorStatus")
    if (
        status is not None
        and type(status) is not bool
        and isinstance(status, int | float)
        and _finite(status) == status
    ):
        out["errorStatus"] = status
    return [(out, "message")]


def _user_blocks(blocks: list[Any], ts: int | float, tool_names: MutableMapping[str, str]) -> list[Converted]:
    results: list[Converted] = []
    pending: list[Message] = []
    start = 0
    for index, block in enumerate(blocks):
        if type(block) is not dict:
            continue
        kind = block.get("type")
        if kind == "tool_result":
            call_id = block.get("tool_use_id")
            if type(call_id) is not str or not call_id:
                continue
            if pending:
                results.append(({"role": "user", "content": pending, "timestamp": ts}, f"user-{start}"))
                pending = []
            result: Message = {
                "role": "toolResult",
                "toolCallId": call_id,
                "toolName": tool_names.get(call_id, "unknown"),
                "content": _tool_result_content(block.get("content")),
                "isError": block.get("is_error") is True,
                "timestamp": ts,
            }
            results.append((result, f"tool-{index}"))
            continue
        part = _user_part(block)
        if part is not None:
            if not pending:
                start = index
            pending.append(part)
    if pending:
        results.append(({"role": "user", "content": pending, "timestamp": ts}, f"user-{start}"))
    return results


def convert_record(
    record: dict[str, Any], ts: int | float, tool_names: MutableMapping[str, str]
) -> list[Converted]:
    """omp's ``convertRecord``: the messages of one record, or ``[]`` when omp drops it."""
    kind = record.get("type")
    if kind not in ("user", "assistant") or record.get("isSidechain") is True or record.get("isMeta") is True:
        return []
    message = record.get("message")
    if type(message) is not dict:
        return []
    return convert_message(kind, record, message, ts, tool_names)


def convert_message(
    kind: str,
    record: dict[str, Any],
    message: dict[str, Any],
    ts: int | float,
    tool_names: MutableMapping[str, str],
) -> list[Converted]:
    """:func:`convert_record` of a record already known to be one omp converts (a user or
    assistant record, not sidechain or meta, with a ``message`` object)."""
    if kind == "assistant":
        return _assistant(record, message, ts, tool_names)
    raw = message.get("content")
    if type(raw) is list:
        results = _user_blocks(raw, ts, tool_names)
        if results:
            return results
        parts = [part for block in raw if (part := _user_part(block)) is not None]
        return [({"role": "user", "content": parts, "timestamp": ts}, "message")] if parts else []
    if type(raw) is str and raw:
        return [({"role": "user", "content": raw, "timestamp": ts}, "message")]
    return []


def message_text(message: dict[str, Any]) -> str:
    """The text of a user message's content (a string, or its text blocks joined by newlines)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


#: Claude stop reasons omp's importer maps to a known omp stop reason (spec §1.2); any other
#: string becomes ``"error"``.
KNOWN_STOP_REASONS = frozenset({"tool_use", "max_tokens", "end_turn", "stop_sequence", "pause_turn"})


def stop_details(record: dict[str, Any], message: dict[str, Any]) -> dict[str, Any] | None:
    """omp's own ``stopDetails`` for a stop reason its importer collapses to ``"error"``.

    omp's Anthropic provider records an unknown stop reason as ``stopDetails`` (the API's
    ``stop_details``, else ``{type: <stop_reason>}``); its importer drops it. ``None`` when the
    stop reason is known, absent, or the record is an API error (whose stop reason is not why).
    """
    raw = message.get("stop_reason")
    known = raw is None or (isinstance(raw, str) and raw in KNOWN_STOP_REASONS)
    if known or record.get("isApiErrorMessage") is True:
        return None
    details = message.get("stop_details")
    return details if isinstance(details, dict) else {"type": raw}


def _omp_keeps_assistant_block(block: dict[str, Any]) -> bool:
    kind = block.get("type")
    if kind == "text":
        return isinstance(block.get("text"), str)
    if kind == "thinking":
        return isinstance(block.get("thinking"), str)
    return kind == "tool_use" and bool(js_string(block.get("id")) and js_string(block.get("name")))


def with_redacted_thinking(source: Any, converted: list[Message]) -> tuple[list[Message], int]:
    """``converted`` (omp's content of an assistant record) with the record's ``redacted_thinking``
    blocks back in their places as omp's own ``redactedThinking`` blocks; and how many were added.
    """
    if not isinstance(source, list):
        return converted, 0
    out: list[Message] = []
    kept = iter(converted)
    added = 0
    for block in source:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "redacted_thinking" and isinstance(block.get("data"), str):
            out.append({"type": "redactedThinking", "data": block["data"]})
            added += 1
        elif _omp_keeps_assistant_block(block) and (block := next(kept, None)) is not None:
            out.append(block)
    return (out, added) if added else (converted, 0)


def source_record(record: Any, line: int) -> dict[str, Any]:
    """What an entry keeps of a source record: the record verbatim with its physical line.

    ``record`` is the parsed record, or (a streaming import written straight to a file) an
    ``orjson.Fragment`` of the line's own bytes, which reads back as the same record.
    """
    return {"line": line, "record": record}


def float_free(
    converted: list[Converted],
    ts: int | float,
    lossless_record: dict[str, Any] | None,
    kept: Any,
    assistant: bool,
) -> bool:
    """Whether the message entries of a record certainly hold no float (then they are written
    without the float walk): the number fields come from the record, so only those are looked at.
    False whenever unsure (an error status or stop details, a record kept parsed, not as bytes)."""
    if type(ts) is not int:
        return False
    if lossless_record is not None:
        if type(kept) is not orjson.Fragment:
            return False
        if "toolUseResult" in lossless_record and holds_float(lossless_record["toolUseResult"]):
            return False
    if not assistant:
        return True  # user and tool result messages: strings, booleans and the timestamp
    message = converted[0][0]
    if (
        "errorStatus" in message
        or "stopDetails" in message
        or type(message["usage"]["totalTokens"]) is not int
    ):
        return False  # (a float token count makes the total a float)
    for block in message["content"]:
        if block["type"] == "toolCall" and holds_float(block["arguments"]):
            return False
    return True


__all__ = [
    "KNOWN_STOP_REASONS",
    "Converted",
    "claude_timestamp_ms",
    "claude_usage",
    "convert_message",
    "convert_record",
    "float_free",
    "message_text",
    "source_record",
    "stop_details",
    "stop_reason",
    "with_redacted_thinking",
    "zero_usage",
]
