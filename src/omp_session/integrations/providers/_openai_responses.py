"""OpenAI Responses request bodies (pi-ai ``openai-responses.ts`` ``buildParams`` + ``buildResponsesInput``).

omp's replay encodings are decoded here: a tool-call id ``call_id|item_id``, the reasoning item as JSON
in ``thinkingSignature``, and the output message id (optionally ``{"v":1,"id","phase"}``) in
``textSignature``. A turn's native items (``providerPayload`` ``openaiResponsesHistory``) replace
its converted items, or, a snapshot without ``dt``, everything before them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from omp_session.format.bun_hash import bun_hash_base36
from omp_session.format.codec import encode_json
from omp_session.integrations.providers._common import (
    NON_VISION_IMAGE_PLACEHOLDER,
    js_length,
    js_slice,
    js_trim,
    normalize_system_prompts,
    well_formed,
)
from omp_session.integrations.providers._target import ModelTarget
from omp_session.integrations.providers._tools import openai_responses_tools
from omp_session.integrations.providers._transform import transform_messages

__all__ = ["openai_responses_body"]

Message = dict[str, Any]
_ORPHAN_CALL_OUTPUT = "[No tool output recorded: the tool call was interrupted before it produced a result.]"
_ORPHAN_OUTPUT_LIMIT = 16_000
_SAFE_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
_PREFIX = re.compile(r"^([a-zA-Z][a-zA-Z0-9]*)_")


def js_stringify(value: Any) -> str:
    """``JSON.stringify(value)`` for JSON-shaped data."""
    return encode_json(value).decode("utf-8")


def _separator(identifier: str) -> int:
    positions = [p for p in (identifier.find("\n"), identifier.find("|")) if p >= 0]
    return min(positions) if positions else -1


def _sanitize_codex_call_id(raw: str) -> str:
    if not raw:
        return f"call_{bun_hash_base36('empty')}"
    sep = _separator(raw)
    base = raw[:sep] if sep > 0 else raw[1:] if sep == 0 else raw
    sanitized = re.sub(r"_+$", "", re.sub(r"[^a-zA-Z0-9_-]", "_", base))
    if sanitized and js_length(sanitized) <= 64 and sanitized == base:
        return sanitized
    digest = bun_hash_base36(base or raw)
    effective = sanitized if sanitized else "call"
    return js_slice(f"{js_slice(effective, max(0, 63 - len(digest)))}_{digest}", 64)


def _item_id(item_id: str, fallback: str) -> str:
    match = _PREFIX.match(item_id)
    prefix = match.group(1) if match else None
    allowed = prefix is not None and (prefix == "ctc" if fallback == "ctc" else prefix in ("fc", "fcr"))
    if prefix is None or not allowed:
        return f"{fallback}_{bun_hash_base36(item_id)}"
    if js_length(item_id) <= 64:
        return item_id
    return f"{prefix}_{bun_hash_base36(item_id)}"


def normalize_responses_tool_call_id(identifier: str, prefix: str = "fc") -> tuple[str, str]:
    """pi-ai ``normalizeResponsesToolCallId``: ``(call_id, item_id)``."""
    sep = _separator(identifier)
    if sep > 0:
        return identifier[:sep], _item_id(identifier[sep + 1 :], prefix)
    return identifier, f"{prefix}_{bun_hash_base36(identifier)}"


def _normalize_for_transform(model: ModelTarget) -> Any:
    def normalize(identifier: str, source: Mapping[str, Any]) -> str:
        sep = _separator(identifier)
        if sep < 0 and js_length(identifier) <= 64 and _SAFE_ID.match(identifier):
            return identifier
        foreign = source.get("provider") != model.provider or source.get("api") != model.api
        if foreign or sep >= 0 or js_length(identifier) > 64:
            call_id, item_id = (identifier[:sep], identifier[sep + 1 :]) if sep > 0 else (identifier, None)
            normalized_call = _sanitize_codex_call_id(call_id)
            normalized_item = f"fc_{bun_hash_base36(item_id if item_id else identifier)}"
            return f"{normalized_call}|{js_slice(normalized_item, 64)}"
        call_id, item = normalize_responses_tool_call_id(identifier)
        return f"{call_id}|{item}"

    return normalize


def _parse_text_signature(signature: Any) -> tuple[str, str | None] | None:
    if not isinstance(signature, str) or not signature:
        return None
    if signature.startswith("{"):
        try:
            parsed = json.loads(signature)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and parsed.get("v") == 1 and isinstance(parsed.get("id"), str):
            phase = parsed.get("phase")
            return parsed["id"], phase if phase in ("commentary", "final_answer") else None
    return signature, None


def _reasoning_item(signature: Any) -> dict[str, Any] | None:
    if not isinstance(signature, str) or not signature:
        return None
    try:
        parsed = json.loads(signature)
    except ValueError:
        return None
    if isinstance(parsed, dict) and parsed.get("type") == "reasoning" and isinstance(parsed.get("id"), str):
        return parsed
    return None


def _input_image(image: Mapping[str, Any]) -> dict[str, Any]:
    detail = image.get("detail") or "auto"
    provider_file = image.get("providerFile")
    if (
        isinstance(provider_file, Mapping)
        and provider_file.get("provider") == "openai"
        and provider_file.get("id")
    ):
        return {"type": "input_image", "detail": detail, "file_id": provider_file["id"]}
    url = image.get("url") or f"data:{image.get('mimeType')};base64,{image.get('data')}"
    return {"type": "input_image", "detail": detail, "image_url": url}


def _input_content(content: Any, supports_images: bool) -> list[dict[str, Any]] | None:
    if isinstance(content, str):
        if js_trim(content) == "":
            return None
        return [{"type": "input_text", "text": well_formed(content)}]
    blocks = [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []
    texts = [b for b in blocks if b.get("type") == "text"]
    images = [b for b in blocks if b.get("type") == "image"]
    out: list[dict[str, Any]] = []
    for block in texts:
        text = well_formed(str(block.get("text", "")))
        if js_trim(text) == "":
            continue
        out.append({"type": "input_text", "text": text})
    if supports_images:
        out.extend(_input_image(image) for image in images)
    elif images:
        out.append({"type": "input_text", "text": NON_VISION_IMAGE_PLACEHOLDER})
    return out or None


def _assistant_items(
    message: Mapping[str, Any], model: ModelTarget, index: int, *, include_signatures: bool = True
) -> list[Any]:
    """pi-ai ``convertResponsesAssistantMessage``: the items of a turn rebuilt from its content.

    Without ``include_signatures`` (a hidden-empty native turn) no reasoning item is replayed, and so
    no output item keeps its id.
    """
    content = [b for b in message.get("content") or [] if isinstance(b, Mapping)]
    errored = message.get("stopReason") == "error"
    has_reasoning = (
        include_signatures
        and not errored
        and any(
            b.get("type") == "thinking" and _reasoning_item(b.get("thinkingSignature")) is not None
            for b in content
        )
    )
    different_model = (
        message.get("model") != model.id
        and message.get("provider") == model.provider
        and message.get("api") == model.api
    )
    unsigned = 0
    items: list[Any] = []
    for block in content:
        kind = block.get("type")
        if kind == "thinking" and not errored:
            reasoning = _reasoning_item(block.get("thinkingSignature")) if include_signatures else None
            if reasoning is not None:
                items.append(reasoning)
            continue
        if kind == "text":
            parsed = _parse_text_signature(block.get("textSignature"))
            message_id = parsed[0] if parsed else None
            if not message_id:
                if has_reasoning:
                    message_id = f"msg_{index}" if unsigned == 0 else f"msg_{index}_{unsigned}"
                    unsigned += 1
            elif not has_reasoning:
                message_id = None
            elif js_length(message_id) > 64:
                message_id = f"msg_{bun_hash_base36(message_id)}"
            item: dict[str, Any] = {
                "type": "message",
                "role": "assistant",
                "content": [
                    {
                        "type": "output_text",
                        "text": well_formed(str(block.get("text", ""))),
                        "annotations": [],
                    }
                ],
                "status": "completed",
            }
            if message_id:
                item["id"] = message_id
            if parsed and parsed[1]:
                item["phase"] = parsed[1]
            items.append(item)
            continue
        if kind != "toolCall":
            continue
        call_id, item_id = normalize_responses_tool_call_id(str(block.get("id", "")), "fc")
        keep_item: str | None = item_id
        if item_id.startswith(("fc_", "fcr_", "ctc_")) and (not has_reasoning or different_model):
            keep_item = None
        call: dict[str, Any] = {"type": "function_call"}
        if keep_item:
            call["id"] = keep_item
        call["call_id"] = call_id
        call["name"] = block.get("name")
        arguments = block.get("arguments")
        call["arguments"] = "null" if arguments is None else js_stringify(arguments)
        items.append(call)
    return items


def _tool_output(message: Mapping[str, Any], model: ModelTarget) -> str | list[dict[str, Any]]:
    blocks = [b for b in message.get("content") or [] if isinstance(b, Mapping)]
    text = "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    has_images = any(b.get("type") == "image" for b in blocks)
    if has_images and not model.images:
        raw = f"{text}\n{NON_VISION_IMAGE_PLACEHOLDER}" if text else NON_VISION_IMAGE_PLACEHOLDER
    else:
        raw = text if text else "(see attached image)" if has_images else ""
    if has_images and model.images:
        return [
            _input_image(b)
            if b.get("type") == "image"
            else {"type": "input_text", "text": well_formed(str(b.get("text", "")))}
            for b in blocks
        ]
    return well_formed(raw)


def _call_kind(item: Mapping[str, Any]) -> str | None:
    return {"function_call": "function", "custom_tool_call": "custom", "computer_call": "computer"}.get(
        str(item.get("type"))
    )


def _output_kind(item: Mapping[str, Any]) -> str | None:
    return {
        "function_call_output": "function",
        "custom_tool_call_output": "custom",
        "computer_call_output": "computer",
    }.get(str(item.get("type")))


def _repair_orphan_outputs(items: list[Any]) -> list[Any]:
    seen: set[str] = set()
    out: list[Any] = []
    for item in items:
        call_kind = _call_kind(item)
        call_id = item.get("call_id") if isinstance(item.get("call_id"), str) else None
        if call_kind and call_id:
            seen.add(f"{call_kind}\0{call_id}")
        output_kind = _output_kind(item)
        if not output_kind or not call_id or f"{output_kind}\0{call_id}" in seen:
            out.append(item)
            continue
        name = "computer" if output_kind == "computer" else "tool"
        raw = item.get("output")
        text = raw if isinstance(raw, str) else "" if raw is None else js_stringify(raw)
        if js_length(text) > _ORPHAN_OUTPUT_LIMIT:
            text = f"{js_slice(text, _ORPHAN_OUTPUT_LIMIT)}\n...[truncated]"
        out.append(
            {
                "type": "message",
                "role": "assistant",
                "content": f"[Orphan {name} result; call_id={call_id}]: {text}",
            }
        )
    return out


def _repair_orphan_calls(items: list[Any]) -> list[Any]:
    later: set[str] = set()
    orphans: set[int] = set()
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        call_id = item.get("call_id") if isinstance(item.get("call_id"), str) else None
        output_kind = _output_kind(item)
        if output_kind and call_id:
            later.add(f"{output_kind}\0{call_id}")
        call_kind = _call_kind(item)
        if call_kind and call_id and f"{call_kind}\0{call_id}" not in later:
            orphans.add(index)
    if not orphans:
        return items
    out: list[Any] = []
    for index, item in enumerate(items):
        out.append(item)
        if index in orphans:
            kind = _call_kind(item)
            out.append(
                {
                    "type": "custom_tool_call_output" if kind == "custom" else "function_call_output",
                    "call_id": item["call_id"],
                    "output": _ORPHAN_CALL_OUTPUT,
                }
            )
    return out


def _batch_kind(item: Mapping[str, Any]) -> str:
    if _call_kind(item):
        return "call"
    if _output_kind(item):
        return "output"
    if item.get("type") == "message" and item.get("role") == "assistant":
        return "assistant-message"
    return "other"


def _hoist_batch_messages(items: list[Any]) -> list[Any]:
    moved: set[int] = set()
    insert_before: dict[int, list[int]] = {}
    for index, item in enumerate(items):
        if _batch_kind(item) != "output" or (index > 0 and _batch_kind(items[index - 1]) == "output"):
            continue
        start = index
        saw_call = False
        message_indexes: list[int] = []
        while start > 0:
            kind = _batch_kind(items[start - 1])
            if kind == "call":
                saw_call = True
            elif kind == "assistant-message":
                message_indexes.append(start - 1)
            else:
                break
            start -= 1
        if not saw_call or not message_indexes:
            continue
        target = insert_before.setdefault(start, [])
        for message_index in reversed(message_indexes):
            moved.add(message_index)
            target.append(message_index)
    if not moved:
        return list(items)
    out: list[Any] = []
    for index, item in enumerate(items):
        for message_index in insert_before.get(index, []):
            out.append(items[message_index])
        if index not in moved:
            out.append(item)
    return out


def _history_payload(payload: Any, provider: str, fallback_provider: Any = None) -> Mapping[str, Any] | None:
    """pi-ai ``getOpenAIResponsesHistoryPayload``: an ``openaiResponsesHistory`` payload for this
    provider (one naming none belongs to ``fallback_provider``, else to the target's provider)."""
    if not isinstance(payload, Mapping) or payload.get("type") != "openaiResponsesHistory":
        return None
    if not isinstance(payload.get("items"), list):
        return None
    owner = payload.get("provider")
    if owner is None:
        owner = fallback_provider if fallback_provider is not None else provider
    return payload if owner == provider else None


def _js_truthy(value: Any) -> bool:
    if isinstance(value, (list, dict)):
        return True  # JavaScript objects and arrays are truthy even when empty
    return bool(value) and value == value  # NaN is falsy


def _replay_item(item: Mapping[str, Any]) -> dict[str, Any] | None:
    """pi-ai ``sanitizeOpenAIResponsesHistoryItemForReplay`` plus the output-only status strip.

    For the targets modelled here (no computer use, ``detail: "original"`` accepted) no reasoning
    item keeps its id and no image detail is clamped.
    """
    kind = item.get("type")
    if kind == "function_call":
        arguments = item.get("arguments")
        if not isinstance(arguments, str) or js_trim(arguments) == "":
            return None
        try:
            json.loads(arguments)
        except ValueError:
            return None
    if kind == "item_reference":
        return None
    if kind == "image_generation_call":
        identifier, image = item.get("id"), item.get("result")
        if not isinstance(identifier, str) or not isinstance(image, str) or not image:
            return None
        if js_length(identifier) > 64:
            identifier = f"ig_{bun_hash_base36(identifier)}"
        return {"id": identifier, "type": "image_generation_call", "status": "completed", "result": image}
    if kind == "reasoning":
        out: dict[str, Any] = {"type": "reasoning"}
        for key in ("summary", "content"):
            if isinstance(item.get(key), list):
                out[key] = item[key]
        if isinstance(item.get("encrypted_content"), str) or item.get("encrypted_content", 0) is None:
            out["encrypted_content"] = item["encrypted_content"]
        return out
    out = {key: value for key, value in item.items() if key != "id"}
    if kind == "computer_call" and isinstance(item.get("id"), str):
        out["id"] = item["id"]  # pairs the call with its output; re-added, so it comes last
    if kind in ("message", "function_call", "custom_tool_call", "compaction", "compaction_summary"):
        out.pop("status", None)  # output-only: the API rejects it on input
    return out


def _adapt_for_model(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """pi-ai ``adaptResponsesReplayItemsForModel`` for a target with freeform custom tools and no
    computer use (the gpt-5 family): computer calls and results become assistant notes."""
    out: list[dict[str, Any]] = []
    for item in items:
        kind = item.get("type")
        if kind in ("computer_call", "computer_call_output"):
            call_id = item.get("call_id") if isinstance(item.get("call_id"), str) else "unknown"
            what = "call" if kind == "computer_call" else "result"
            note = f"[Previous computer {what}; call_id={call_id}]: {js_stringify(item)}"
            out.append({"type": "message", "role": "assistant", "content": note})
        else:
            out.append(item)
    return out


def _replay_items(history: Sequence[Any]) -> list[dict[str, Any]]:
    """pi-ai ``sanitizeOpenAIResponsesHistoryItemsForReplay``: the items that can go back on the wire."""
    replayed = [_replay_item(item) for item in history if isinstance(item, Mapping)]
    return [item for item in replayed if item is not None]


def _has_text(value: Any) -> bool:
    """JavaScript's ``/\\S/.test(value)``; a value that is not a string is coerced to a word first."""
    return not isinstance(value, str) or js_trim(value) != ""


def _visible(message: Mapping[str, Any]) -> bool:
    """An assistant ``message`` item shows some non-whitespace text or refusal."""
    content = message.get("content")
    if isinstance(content, str):
        return _has_text(content)
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, Mapping):
            continue
        if part.get("type") == "output_text" and _has_text(part.get("text")):
            return True
        if part.get("type") == "refusal" and _has_text(part.get("refusal")):
            return True
    return False


def _is_assistant_message(item: Mapping[str, Any]) -> bool:
    return item.get("type") == "message" and item.get("role") == "assistant"


_CLIENT_INPUT_TYPES = frozenset(
    {
        "input_text",
        "input_image",
        "input_file",
        "input_audio",
        "function_call_output",
        "custom_tool_call_output",
        "computer_call_output",
        "local_shell_call_output",
        "shell_call_output",
        "apply_patch_call_output",
        "mcp_approval_response",
        "compaction",
        "compaction_summary",
        "compaction_trigger",
        "item_reference",
    }
)


def _client_input_boundary(item: Mapping[str, Any]) -> bool:
    """pi-ai ``isOpenAIResponsesClientInputBoundary``: an item the client, not the model, supplied."""
    kind = item.get("type")
    if kind == "message" or (kind is None and isinstance(item.get("role"), str)):
        return item.get("role") != "assistant"
    if kind == "additional_tools":
        return item.get("role") != "assistant"
    if kind == "tool_search_output":
        return item.get("execution") != "server"
    return kind in _CLIENT_INPUT_TYPES


def _assistant_replay(history: Sequence[Any]) -> list[dict[str, Any]] | None:
    """pi-ai ``sanitizeOpenAIResponsesAssistantHistoryItemsForReplay``.

    ``None`` for a hidden-empty turn (only reasoning and whitespace-only messages): the caller then
    rebuilds the visible transcript instead. Otherwise whitespace-only assistant messages are dropped,
    and with them any reasoning left with no output after it.
    """
    items = _replay_items(history)
    outputs = [item for item in items if item.get("type") != "reasoning"]
    empty = [item for item in outputs if _is_assistant_message(item) and not _visible(item)]
    if len(empty) == len(outputs):
        return None
    if not empty:
        return items
    kept: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    dropped_message = False
    for item in items:
        if _client_input_boundary(item):
            pending, dropped_message = [], False
            kept.append(item)
        elif item.get("type") == "reasoning":
            if dropped_message:
                pending = []  # the reasoning of a dropped message goes with it
            dropped_message = False
            pending.append(item)
        elif _is_assistant_message(item) and not _visible(item):
            dropped_message = True
        else:
            kept.extend(pending)
            pending, dropped_message = [], False
            kept.append(item)
    return kept


def _visible_fallback(items: list[Any]) -> list[Any]:
    """pi-ai ``sanitizeOpenAIResponsesAssistantFallbackItemsForReplay``: a hidden-empty turn rebuilt
    from its content keeps no reasoning and no assistant message without visible text."""
    return [
        item
        for item in items
        if item.get("type") != "reasoning" and (not _is_assistant_message(item) or _visible(item))
    ]


def _custom_call_ids(items: Sequence[Mapping[str, Any]]) -> set[str]:
    return {
        item["call_id"]
        for item in items
        if item.get("type") == "custom_tool_call" and isinstance(item.get("call_id"), str) and item["call_id"]
    }


def responses_input(messages: list[Message], model: ModelTarget) -> list[Any]:
    """pi-ai ``buildResponsesInput`` for a fresh request (no provider session state), where native
    history replay is on: native items stand in for the converted turns they come with."""
    items: list[Any] = []
    custom_calls: set[str] = set()  # call ids whose results go back as custom_tool_call_output
    transformed = transform_messages(messages, model, _normalize_for_transform(model))
    index = 0
    for message in transformed:
        role = message.get("role")
        if role in ("user", "developer"):
            payload = _history_payload(message.get("providerPayload"), model.provider)
            if payload is not None:
                # Items a client sent (the OpenAI Agents bridge) or OpenAI's own compaction.
                replayed = _adapt_for_model(_replay_items(payload["items"]))
                items.extend(replayed)
                custom_calls |= _custom_call_ids(replayed)
                index += 1
                continue
            content = _input_content(message.get("content"), model.images)
            if content is None:
                continue
            items.append({"role": "user", "content": content})
        elif role == "assistant":
            payload = None
            if message.get("api") == model.api and message.get("model") == model.id:
                payload = _history_payload(
                    message.get("providerPayload"), model.provider, message.get("provider")
                )
            hidden_empty = False
            if payload is not None:
                native = _assistant_replay(payload["items"])
                if native is not None:
                    replayed = _adapt_for_model(native)
                    if _js_truthy(payload.get("dt")):
                        items.extend(replayed)  # a delta: this turn's items only
                    else:
                        # A snapshot of the whole conversation so far: it replaces what was built.
                        items[:] = replayed
                        custom_calls.clear()
                    custom_calls |= _custom_call_ids(replayed)
                    index += 1
                    continue
                hidden_empty = True
            converted = _assistant_items(message, model, index, include_signatures=not hidden_empty)
            if hidden_empty:
                converted = _visible_fallback(converted)
            if not converted:
                continue
            items.extend(converted)
        elif role == "toolResult":
            call_id, _ = normalize_responses_tool_call_id(str(message.get("toolCallId", "")))
            kind = "custom_tool_call_output" if call_id in custom_calls else "function_call_output"
            items.append({"type": kind, "call_id": call_id, "output": _tool_output(message, model)})
        index += 1
    return _hoist_batch_messages(_repair_orphan_calls(_repair_orphan_outputs(items)))


def openai_responses_body(
    messages: list[Message],
    model: ModelTarget,
    system_prompt: str | Sequence[str] | None,
    tools: Sequence[Mapping[str, Any]] | None,
) -> dict[str, Any]:
    items = responses_input(messages, model)
    prompts = normalize_system_prompts(system_prompt)
    instructions: str | None = None
    if prompts:
        if model.reasoning:
            items[:0] = [{"role": "developer", "content": prompt} for prompt in prompts]
        else:
            instructions = "\n\n".join(prompts)
    body: dict[str, Any] = {"model": model.id, "input": items}
    if instructions is not None:
        body["instructions"] = instructions
    body["stream"] = True
    body["store"] = False
    body["stream_options"] = {"include_obfuscation": False}
    if tools is not None:
        body["tools"] = openai_responses_tools(tools, model.strict_tools)
    if model.reasoning:
        body["include"] = ["reasoning.encrypted_content"]
    return body
