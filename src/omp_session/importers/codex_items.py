"""One Codex rollout record → queued items, exactly as omp 18.2.3 converts it (spec importers §2.2).

Pure functions: no I/O. An :class:`Item` is what omp queues: a message (and possibly a following
tool result), a model change, a compaction, a title or a rollback.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from omp_session.format.codec import encode_json
from omp_session.format.ids import is_time_value, iso_to_ms

Message = dict[str, Any]

_DATA_URL = re.compile(r"^data:([^;,]+);base64,(.+)$", re.DOTALL)
_DETAILS = ("auto", "low", "high", "original")
_TEXT_PARTS = ("input_text", "output_text", "text")


@dataclass(eq=False)
class Item:
    message: Message | None = None
    following: Message | None = None
    model: str | None = None
    rollback_turns: float | None = None
    title: str | None = None
    is_title: bool = False
    timestamp: float | None = None
    compaction: dict[str, Any] | None = None
    #: A reasoning effort as omp's thinking level (lossless extra: takes no ``codex-N`` ordinal).
    thinking_level: str | None = None
    #: Physical line of the record (lossless output only).
    line: int = 0
    record: dict[str, Any] | None = field(default=None, repr=False)


@dataclass
class Canonical:
    """Texts and call ids present as ``response_item``s: events repeating them are not imported."""

    users: set[str] = field(default_factory=set)
    assistants: set[str] = field(default_factory=set)
    tool_calls: set[str] = field(default_factory=set)

    def add(self, payload: dict[str, Any]) -> None:
        kind = payload.get("type")
        call_id = _str(payload.get("call_id"))
        if call_id is None:
            call_id = _str(payload.get("id"))
        if call_id and isinstance(kind, str) and "call" in kind:
            self.tool_calls.add(call_id)
        if kind == "message":
            text = "".join(p["text"] for p in response_content(payload.get("content")) if p["type"] == "text")
            if not text:
                return
            if payload.get("role") == "user":
                self.users.add(text)
            elif payload.get("role") == "assistant":
                self.assistants.add(text)
        elif kind == "reasoning":
            self.assistants.update(part["thinking"] for part in reasoning_content(payload))


def _str(value: Any) -> str | None:
    """A string, ``""`` included (the Codex store's ``stringField``)."""
    return value if isinstance(value, str) else None


def timestamp_ms(value: Any, fallback: float) -> float:
    """Numbers below 1e10 are epoch seconds; strings go through ``Date.parse``. A number outside
    JavaScript's time range takes the fallback (omp's ``toISOString`` throws there)."""
    if not isinstance(value, bool) and isinstance(value, int | float):
        if value != value or abs(value) == float("inf"):
            return fallback
        ms = value * 1000 if value < 10_000_000_000 else value
        return ms if is_time_value(ms) else fallback
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


def _image(url: Any, detail: Any) -> Message | None:
    if not isinstance(url, str):
        return None
    match = _DATA_URL.match(url)
    if match is None:
        return None
    image: Message = {"type": "image", "mimeType": match.group(1), "data": match.group(2)}
    if detail in _DETAILS:
        image["detail"] = detail
    return image


def response_content(value: Any) -> list[Message]:
    if not isinstance(value, list):
        return []
    content: list[Message] = []
    for item in value:
        if not isinstance(item, dict):
            continue
        kind, text = _str(item.get("type")), _str(item.get("text"))
        if kind in _TEXT_PARTS and text is not None:
            content.append({"type": "text", "text": text})
        elif (
            kind == "input_image" and (image := _image(item.get("image_url"), item.get("detail"))) is not None
        ):
            content.append(image)
    return content


def tool_arguments(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    if not isinstance(value, str):
        return {}
    try:
        parsed = orjson.loads(value)
    except orjson.JSONDecodeError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {"input": value}


#: A missing key: JS passes ``undefined``, which gives no content (``null`` gives the text "null").
ABSENT: Any = object()


def tool_output_content(value: Any) -> list[Message]:
    """Content items as blocks, a string as one text block, anything else as its JSON text."""
    if value is ABSENT:
        return []
    structured = response_content(value)
    if structured:
        return structured
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    return [{"type": "text", "text": encode_json(value).decode()}]


def reasoning_content(payload: dict[str, Any]) -> list[Message]:
    parts: list[Message] = []
    for key in ("summary", "content"):
        value = payload.get(key)
        if not isinstance(value, list):
            continue
        for item in value:
            if isinstance(item, dict) and isinstance(item.get("text"), str) and item["text"]:
                parts.append({"type": "thinking", "thinking": item["text"]})
    return parts


def assistant(content: list[Message], ts: float, model: str, stop: str) -> Message:
    return {
        "role": "assistant",
        "content": content,
        "api": "openai-codex-responses",
        "provider": "openai-codex",
        "model": model,
        "usage": zero_usage(),
        "stopReason": stop,
        "timestamp": ts,
    }


def _tool_result(call_id: str, name: str, content: list[Message], is_error: bool, ts: float) -> Message:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": content,
        "isError": is_error,
        "timestamp": ts,
    }


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> Message:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}


def response_item(payload: dict[str, Any], ts: float, model: str, names: dict[str, str]) -> Item | None:
    kind = _str(payload.get("type"))
    if kind == "message":
        content = response_content(payload.get("content"))
        if not content:
            return None
        role = payload.get("role")
        if role == "user":
            return Item(message={"role": "user", "content": content, "timestamp": ts})
        if role == "assistant":
            return Item(message=assistant(content, ts, model, "stop"))
        return None
    if kind == "reasoning":
        thinking = reasoning_content(payload)
        return Item(message=assistant(thinking, ts, model, "stop")) if thinking else None
    if kind in ("function_call", "custom_tool_call"):
        call_id = _str(payload.get("call_id"))
        call_id = _str(payload.get("id")) if call_id is None else call_id
        name = _str(payload.get("name"))
        if not call_id or not name:
            return None
        names[call_id] = name
        custom = kind == "custom_tool_call"
        call = _call(
            call_id, name, tool_arguments(payload.get("input") if custom else payload.get("arguments"))
        )
        if custom:
            call["customWireName"] = name
        return Item(message=assistant([call], ts, model, "toolUse"))
    if kind in ("function_call_output", "custom_tool_call_output"):
        call_id = _str(payload.get("call_id"))
        if not call_id:
            return None
        content = tool_output_content(payload.get("output", ABSENT))
        return Item(message=_tool_result(call_id, names.get(call_id, "unknown"), content, False, ts))
    if kind in ("web_search_call", "tool_search_call"):
        call_id = _str(payload.get("call_id"))
        call_id = _str(payload.get("id")) if call_id is None else call_id
        if not call_id:
            return None
        name = "web_search" if kind == "web_search_call" else "tool_search"
        names[call_id] = name
        raw = payload.get("action") if kind == "web_search_call" else payload.get("arguments")
        return Item(message=assistant([_call(call_id, name, tool_arguments(raw))], ts, model, "toolUse"))
    if kind == "tool_search_output":
        call_id = _str(payload.get("call_id"))
        if not call_id:
            return None
        content = tool_output_content(payload.get("tools", ABSENT))
        failed = payload.get("status") == "failed"
        return Item(message=_tool_result(call_id, names.get(call_id, "tool_search"), content, failed, ts))
    return None


def _event_result(payload: dict[str, Any], call_id: str, name: str, ts: float) -> Message:
    error = _str(payload.get("error"))
    content = (
        [{"type": "text", "text": error}]
        if error is not None
        else tool_output_content(payload.get("content_items", ABSENT))
    )
    return _tool_result(call_id, name, content, error is not None or payload.get("success") is False, ts)


def event(
    payload: dict[str, Any], ts: float, model: str, canonical: Canonical, names: dict[str, str]
) -> Item | None:
    """An ``event_msg``: only what no ``response_item`` already says (spec §2.2)."""
    kind = _str(payload.get("type"))
    if kind == "user_message":
        text = _str(payload.get("message"))
        if not text or text in canonical.users:
            return None
        return Item(message={"role": "user", "content": text, "timestamp": ts})
    if kind in ("agent_message", "agent_reasoning"):
        text = _str(payload.get("message" if kind == "agent_message" else "text"))
        if not text or text in canonical.assistants:
            return None
        block = (
            {"type": "text", "text": text}
            if kind == "agent_message"
            else {"type": "thinking", "thinking": text}
        )
        return Item(message=assistant([block], ts, model, "stop"))
    if kind == "dynamic_tool_call_request":
        call_id = _str(payload.get("callId"))
        call_id = _str(payload.get("call_id")) if call_id is None else call_id
        name = _str(payload.get("tool"))
        if not call_id or not name or call_id in canonical.tool_calls:
            return None
        names[call_id] = name
        call = _call(call_id, name, tool_arguments(payload.get("arguments")))
        return Item(message=assistant([call], ts, model, "toolUse"))
    if kind == "dynamic_tool_call_response":
        call_id = _str(payload.get("call_id"))
        call_id = _str(payload.get("callId")) if call_id is None else call_id
        if not call_id or call_id in canonical.tool_calls:
            return None
        tool = _str(payload.get("tool"))
        name = names.get(call_id) or (tool if tool is not None else "unknown")
        return Item(message=_event_result(payload, call_id, name, ts))
    if kind == "web_search_end":
        return _web_search_end(payload, ts, model, canonical, names)
    if kind == "mcp_tool_call_end":
        return _mcp_end(payload, ts, model, canonical, names)
    if kind == "thread_name_updated":
        return Item(title=_str(payload.get("thread_name")), is_title=True)
    if kind == "thread_rolled_back":
        turns = payload.get("num_turns")
        finite = not isinstance(turns, bool) and isinstance(turns, int | float) and turns == turns
        return Item(rollback_turns=turns if finite else 0)
    return None


def _web_search_end(
    payload: dict[str, Any], ts: float, model: str, canonical: Canonical, names: dict[str, str]
) -> Item | None:
    call_id = _str(payload.get("call_id"))
    if not call_id:
        return None
    name = names.get(call_id, "web_search")
    results = payload.get("results")
    content = tool_output_content(results if results is not None else payload.get("query", ABSENT))
    result = _tool_result(call_id, name, content, False, ts)
    if call_id in canonical.tool_calls or call_id in names:
        return Item(message=result)
    names[call_id] = name
    action = payload.get("action")
    call = _call(call_id, name, tool_arguments(action if action is not None else payload.get("query")))
    return Item(message=assistant([call], ts, model, "toolUse"), following=result)


def _mcp_end(
    payload: dict[str, Any], ts: float, model: str, canonical: Canonical, names: dict[str, str]
) -> Item | None:
    call_id = _str(payload.get("call_id"))
    invocation = payload.get("invocation")
    if not call_id or call_id in canonical.tool_calls or not isinstance(invocation, dict):
        return None
    server, tool = _str(invocation.get("server")), _str(invocation.get("tool"))
    if not server or not tool:
        return None
    name = f"{server}/{tool}"
    names[call_id] = name
    call = _call(call_id, name, tool_arguments(invocation.get("arguments")))
    raw = payload.get("result", ABSENT)
    ok = raw.get("Ok") if isinstance(raw, dict) and isinstance(raw.get("Ok"), dict) else raw
    error = raw["Err"] if isinstance(raw, dict) and isinstance(raw.get("Err"), str) else None
    if error is not None:
        content = [{"type": "text", "text": error}]
    else:
        content = tool_output_content(ok.get("content", ABSENT) if isinstance(ok, dict) else ok)
    is_error = error is not None or (isinstance(ok, dict) and ok.get("isError") is True)
    result = _tool_result(call_id, name, content, is_error, ts)
    return Item(message=assistant([call], ts, model, "toolUse"), following=result)


__all__ = [
    "ABSENT",
    "Canonical",
    "Item",
    "assistant",
    "event",
    "reasoning_content",
    "response_content",
    "response_item",
    "timestamp_ms",
    "tool_arguments",
    "tool_output_content",
    "zero_usage",
]
