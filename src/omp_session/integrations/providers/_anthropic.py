"""Anthropic Messages (pi-ai ``anthropic.ts``: ``buildParams``, ``convertAnthropicMessages``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from omp_session.integrations.providers._common import (
    NON_VISION_IMAGE_PLACEHOLDER,
    is_blank,
    js_trim,
    normalize_system_prompts,
    render_demoted_thinking,
    sanitize_tool_call_id,
    well_formed,
)
from omp_session.integrations.providers._target import ModelTarget
from omp_session.integrations.providers._tools import anthropic_tools
from omp_session.integrations.providers._transform import transform_messages

__all__ = ["anthropic_body"]

Message = dict[str, Any]
_EPHEMERAL = {"type": "ephemeral"}
_MAX_BREAKPOINTS = 4
_DECIMATION_INTERVAL = 15
_EMPTY_ERROR_TEXT = "Tool failed with no output."
# Marks a wire ``user`` that came from a conversational user turn (pi-ai's kConversationalUser symbol);
# removed before the body is returned.
_CONVERSATIONAL = "\x00conversational"


def _media_type(mime_type: Any) -> str | None:
    normalized = js_trim(str(mime_type)).lower() if isinstance(mime_type, str) else ""
    if normalized == "image/jpg":
        return "image/jpeg"
    return normalized if normalized in ("image/jpeg", "image/png", "image/gif", "image/webp") else None


def _content_blocks(content: Sequence[Any], supports_images: bool) -> str | list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    saw_text = saw_image = False
    for block in content:
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text":
            text = well_formed(str(block.get("text", "")))
            if js_trim(text) == "":
                continue
            saw_text = True
            blocks.append({"type": "text", "text": text})
            continue
        if not supports_images:
            blocks.append({"type": "text", "text": NON_VISION_IMAGE_PLACEHOLDER})
            continue
        provider_file = block.get("providerFile")
        source: dict[str, Any]
        if (
            isinstance(provider_file, Mapping)
            and provider_file.get("provider") == "anthropic"
            and provider_file.get("id")
        ):
            source = {"type": "file", "file_id": provider_file["id"]}
        elif block.get("url"):
            source = {"type": "url", "url": block["url"]}
        else:
            media_type = _media_type(block.get("mimeType"))
            if media_type is None:
                blocks.append({"type": "text", "text": f"[unsupported image: {block.get('mimeType')}]"})
                continue
            source = {"type": "base64", "media_type": media_type, "data": block.get("data")}
        saw_image = True
        blocks.append({"type": "image", "source": source})
    if not supports_images:
        return well_formed("\n".join(block["text"] for block in blocks if block.get("type") == "text"))
    if saw_image and not saw_text:
        blocks.insert(0, {"type": "text", "text": "(see attached image)"})
    return blocks


def _tool_result_block(
    model: ModelTarget, message: Mapping[str, Any], hoisted: list[dict[str, Any]]
) -> dict[str, Any]:
    raw = message.get("content")
    content: str | list[dict[str, Any]] = _content_blocks(raw if isinstance(raw, list) else [], model.images)
    is_error = message.get("isError")
    if is_error and not isinstance(content, str) and any(b.get("type") == "image" for b in content):
        hoisted.extend(b for b in content if b.get("type") == "image")
        content = [b for b in content if b.get("type") == "text"]
    if isinstance(content, list) and not content:
        content = ""
    if is_error and (js_trim(content) == "" if isinstance(content, str) else not content):
        content = (
            _EMPTY_ERROR_TEXT if isinstance(content, str) else [{"type": "text", "text": _EMPTY_ERROR_TEXT}]
        )
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": message.get("toolCallId"),
        "content": content,
    }
    if "isError" in message:
        block["is_error"] = is_error
    return block


def _well_formed_deep(value: Any) -> Any:
    if isinstance(value, str):
        return well_formed(value)
    if isinstance(value, list):
        return [_well_formed_deep(item) for item in value]
    if isinstance(value, Mapping):
        return {key: _well_formed_deep(item) for key, item in value.items()}
    return value


def _assistant_blocks(message: Mapping[str, Any], model: ModelTarget) -> list[dict[str, Any]]:
    content = [b for b in message.get("content") or [] if isinstance(b, Mapping)]
    has_signed = any(
        b.get("type") == "thinking"
        and isinstance(b.get("thinkingSignature"), str)
        and js_trim(b["thinkingSignature"])
        for b in content
    )
    blocks: list[dict[str, Any]] = []
    for block in content:
        kind = block.get("type")
        if kind == "text":
            text = str(block.get("text", ""))
            if js_trim(text) == "":
                continue
            blocks.append({"type": "text", "text": well_formed(text)})
        elif kind == "thinking":
            thinking = str(block.get("thinking") or "")
            signature = block.get("thinkingSignature")
            signed = isinstance(signature, str) and js_trim(signature) != ""
            if has_signed:
                if not signed:
                    if js_trim(thinking) == "":
                        continue
                    blocks.append({"type": "text", "text": render_demoted_thinking(model.id, thinking)})
                    continue
                blocks.append({"type": "thinking", "thinking": thinking, "signature": signature})
                continue
            if js_trim(thinking) == "":
                continue
            if model.replay_unsigned_thinking:
                blocks.append({"type": "thinking", "thinking": well_formed(thinking), "signature": ""})
            else:
                blocks.append({"type": "text", "text": render_demoted_thinking(model.id, thinking)})
        elif kind == "redactedThinking":
            data = block.get("data")
            if is_blank(data):
                continue
            blocks.append({"type": "redacted_thinking", "data": data})
        elif kind == "anthropicServerTool":
            inner = block.get("block")
            if isinstance(inner, Mapping):
                blocks.append(dict(inner))
        elif kind == "toolCall":
            arguments = block.get("arguments")
            blocks.append(
                {
                    "type": "tool_use",
                    "id": block.get("id"),
                    "name": block.get("name"),
                    "input": _well_formed_deep(arguments if arguments else {}),
                }
            )
        # "fallback" blocks replay only when the request opts into server-side fallback (never here).
    seen_tool_use = needs_partition = False
    for block in blocks:
        if block["type"] == "tool_use":
            seen_tool_use = True
        elif seen_tool_use and block["type"] not in ("thinking", "redacted_thinking"):
            needs_partition = True
            break
    if needs_partition:
        blocks = [b for b in blocks if b["type"] != "tool_use"] + [
            b for b in blocks if b["type"] == "tool_use"
        ]
    return blocks


def convert_anthropic_messages(messages: list[Message], model: ModelTarget) -> list[dict[str, Any]]:
    transformed = transform_messages(
        messages, model, lambda identifier, _source: sanitize_tool_call_id(identifier)
    )
    params: list[dict[str, Any]] = []
    index = 0
    while index < len(transformed):
        message = transformed[index]
        role = message.get("role")
        if role in ("user", "developer"):
            raw = message.get("content")
            content: str | list[dict[str, Any]]
            if isinstance(raw, str):
                if js_trim(raw) == "":
                    index += 1
                    continue
                content = well_formed(raw)
            else:
                content = _content_blocks(raw if isinstance(raw, list) else [], model.images)
                if (isinstance(content, str) and js_trim(content) == "") or (
                    isinstance(content, list) and not content
                ):
                    index += 1
                    continue
            param: dict[str, Any] = {"role": "user", "content": content}
            agent_authored = message.get("synthetic") is True or message.get("attribution") == "agent"
            synthetic_note = isinstance(raw, str) and raw.startswith("<stale-tool-result ")
            if role == "user" and not agent_authored and not synthetic_note:
                param[_CONVERSATIONAL] = True
            params.append(param)
        elif role == "assistant":
            blocks = _assistant_blocks(message, model)
            if blocks:
                params.append({"role": "assistant", "content": blocks})
        elif role == "toolResult":
            hoisted: list[dict[str, Any]] = []
            results = [_tool_result_block(model, message, hoisted)]
            while index + 1 < len(transformed) and transformed[index + 1].get("role") == "toolResult":
                index += 1
                results.append(_tool_result_block(model, transformed[index], hoisted))
            if hoisted:
                results.append({"type": "text", "text": "Attached image(s) from the tool result(s) above:"})
                results.extend(hoisted)
            params.append({"role": "user", "content": results})
        index += 1
    for position in range(len(params) - 1, 0, -1):
        if params[position]["role"] == "assistant" and params[position - 1]["role"] == "assistant":
            params.insert(position, {"role": "user", "content": "Continue."})
    if params and params[-1]["role"] == "assistant":
        params.append({"role": "user", "content": "Continue."})
    return params


def _cache_last_block(blocks: list[dict[str, Any]]) -> bool:
    for position in range(len(blocks) - 1, -1, -1):
        block = blocks[position]
        if block.get("type") in (
            "thinking",
            "redacted_thinking",
            "fallback",
            "tool_addition",
            "tool_removal",
        ):
            continue
        if block.get("cache_control") is not None:
            return False
        blocks[position] = {**block, "cache_control": dict(_EPHEMERAL)}
        return True
    return False


def _cache_message(message: dict[str, Any]) -> bool:
    content = message.get("content")
    if isinstance(content, str):
        message["content"] = [{"type": "text", "text": content, "cache_control": dict(_EPHEMERAL)}]
        return True
    if isinstance(content, list):
        return _cache_last_block(content)
    return False


def _apply_prompt_caching(params: dict[str, Any]) -> None:
    head = sum(1 for block in params.get("system") or [] if block.get("cache_control") is not None)
    head += sum(1 for tool in params.get("tools") or [] if tool.get("cache_control") is not None)
    budget = max(0, _MAX_BREAKPOINTS - head)
    messages: list[dict[str, Any]] = params["messages"]
    if budget <= 0 or not messages:
        return
    trailing = len(messages) - 1
    last = messages[trailing]
    padded = (
        last["role"] == "user"
        and last["content"] == "Continue."
        and not last.get(_CONVERSATIONAL)
        and trailing >= 1
        and messages[trailing - 1]["role"] == "assistant"
    )
    end = trailing - 1 if padded else trailing
    users = [i for i in range(end + 1) if messages[i].get(_CONVERSATIONAL)]
    decimation = [index for ordinal, index in enumerate(users) if (ordinal + 1) % _DECIMATION_INTERVAL == 0]
    trailing_candidates = [i for i in range(end, -1, -1)][:2]
    candidates: list[int] = trailing_candidates[:1]
    for index in reversed(decimation):
        if index not in candidates:
            candidates.append(index)
    for index in trailing_candidates:
        if index not in candidates:
            candidates.append(index)
    applied = 0
    for index in candidates:
        if applied >= budget:
            break
        if _cache_message(messages[index]):
            applied += 1


def anthropic_body(
    messages: list[Message],
    model: ModelTarget,
    system_prompt: str | Sequence[str] | None,
    tools: Sequence[Mapping[str, Any]] | None,
    max_tokens: int | None,
) -> dict[str, Any]:
    system: list[dict[str, Any]] | None = [
        {"type": "text", "text": prompt} for prompt in normalize_system_prompts(system_prompt)
    ] or None
    wire_tools = anthropic_tools(tools) if tools is not None else None
    wire_messages = convert_anthropic_messages(messages, model)
    if wire_tools:
        wire_tools[-1]["cache_control"] = dict(_EPHEMERAL)
    if system:
        system[-1]["cache_control"] = dict(_EPHEMERAL)
    model_max = model.max_tokens if model.max_tokens is not None else 64000
    body: dict[str, Any] = {"model": model.id, "messages": wire_messages}
    if system:
        body["system"] = system
    if wire_tools is not None:
        body["tools"] = wire_tools
    body["max_tokens"] = min(model_max, max_tokens if max_tokens is not None else model_max)
    body["stream"] = True
    _apply_prompt_caching(body)
    for message in wire_messages:
        message.pop(_CONVERSATIONAL, None)
    return body
