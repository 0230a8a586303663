"""OpenAI Chat Completions request bodies (pi-ai ``openai-completions.ts`` ``convertMessages``).

Modelled for a generic OpenAI-compatible endpoint (the compat of ``groq`` in omp's catalog): no
reasoning-content replay, no Mistral id rules, one system message per prompt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from omp_session.format.bun_hash import bun_hash_base36
from omp_session.integrations.providers._common import (
    DEMOTED,
    NON_VISION_IMAGE_PLACEHOLDER,
    js_trim,
    normalize_system_prompts,
    sanitize_tool_call_id,
    well_formed,
)
from omp_session.integrations.providers._openai_responses import js_stringify
from omp_session.integrations.providers._target import ModelTarget
from omp_session.integrations.providers._tools import openai_chat_tools
from omp_session.integrations.providers._transform import transform_messages

__all__ = ["openai_chat_body"]

Message = dict[str, Any]


def _serialize_arguments(value: Any) -> str:
    if isinstance(value, Mapping):
        return js_stringify(value)
    if isinstance(value, str):
        trimmed = js_trim(value)
        return trimmed if trimmed else "{}"
    return "{}"


def chat_messages(
    messages: list[Message], model: ModelTarget, system_prompt: str | Sequence[str] | None
) -> list[Any]:
    def normalize(identifier: str, source: Mapping[str, Any] | None) -> str:
        same = (
            source is not None
            and source.get("provider") == model.provider
            and source.get("api") == model.api
            and source.get("model") == model.id
        )
        if not same and "|" in identifier:
            return sanitize_tool_call_id(identifier.split("|")[0], 40)
        return identifier

    transformed = transform_messages(messages, model, normalize)
    remapped: dict[str, list[str]] = {}
    generated = 0

    def ensure_id(raw: str, seed: str, source: Mapping[str, Any] | None = None) -> str:
        nonlocal generated
        normalized = normalize(raw, source)
        if js_trim(normalized):
            return normalized
        generated += 1
        return f"call_{bun_hash_base36(f'{model.provider}:{model.id}:{seed}:{generated}')}"

    params: list[Any] = []
    role = "developer" if model.reasoning and model.supports_developer_role else "system"
    for prompt in normalize_system_prompts(system_prompt):
        params.append({"role": role, "content": prompt})

    index = 0
    while index < len(transformed):
        message = transformed[index]
        kind = message.get("role")
        if kind in ("user", "developer"):
            wire_role = "developer" if model.supports_developer_role and kind == "developer" else "user"
            content = message.get("content")
            if isinstance(content, str):
                text = well_formed(content)
                if js_trim(text):
                    params.append({"role": wire_role, "content": text})
            else:
                parts: list[dict[str, Any]] = []
                omitted = False
                for item in content if isinstance(content, list) else []:
                    if not isinstance(item, Mapping):
                        continue
                    if item.get("type") == "text":
                        text = well_formed(str(item.get("text", "")))
                        if js_trim(text):
                            parts.append({"type": "text", "text": text})
                    elif model.images:
                        image_url: dict[str, Any] = {
                            "url": item.get("url") or f"data:{item.get('mimeType')};base64,{item.get('data')}"
                        }
                        if item.get("detail") and item.get("detail") != "original":
                            image_url["detail"] = item["detail"]
                        parts.append({"type": "image_url", "image_url": image_url})
                    else:
                        omitted = True
                if omitted:
                    parts.append({"type": "text", "text": NON_VISION_IMAGE_PLACEHOLDER})
                if parts:
                    params.append({"role": "user", "content": parts})
        elif kind == "assistant":
            blocks = [b for b in message.get("content") or [] if isinstance(b, Mapping)]
            wire: dict[str, Any] = {"role": "assistant", "content": None}
            texts = [
                b for b in blocks if b.get("type") == "text" and b.get("text") and js_trim(str(b["text"]))
            ]
            if texts:
                wire["content"] = "".join(
                    well_formed(str(b["text"]))
                    + ("\n" if b.get(DEMOTED) and position < len(texts) - 1 else "")
                    for position, b in enumerate(texts)
                )
            calls = [b for b in blocks if b.get("type") == "toolCall"]
            if calls:
                tool_calls = []
                for position, call in enumerate(calls):
                    call_id = ensure_id(
                        str(call.get("id", "")), f"{index}:{position}:{call.get('name')}", message
                    )
                    remapped.setdefault(str(call.get("id", "")), []).append(call_id)
                    tool_calls.append(
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {
                                "name": call.get("name"),
                                "arguments": _serialize_arguments(call.get("arguments")),
                            },
                        }
                    )
                wire["tool_calls"] = tool_calls
            if wire["content"] is None and "tool_calls" in wire:
                wire["content"] = ""
            if not wire["content"] and "tool_calls" not in wire:
                index += 1
                continue
            params.append(wire)
        elif kind == "toolResult":
            while index < len(transformed) and transformed[index].get("role") == "toolResult":
                result = transformed[index]
                blocks = [b for b in result.get("content") or [] if isinstance(b, Mapping)]
                text = "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
                has_images = any(b.get("type") == "image" for b in blocks)
                original_id = str(result.get("toolCallId", ""))
                queue = remapped.get(original_id)
                resolved = (
                    queue.pop(0)
                    if queue
                    else ensure_id(original_id, f"{index}:{result.get('toolName') or 'tool'}")
                )
                if queue is not None and not queue:
                    remapped.pop(original_id, None)
                if has_images and not model.images:
                    body = f"{text}\n{NON_VISION_IMAGE_PLACEHOLDER}" if text else NON_VISION_IMAGE_PLACEHOLDER
                else:
                    body = text if text else "(see attached image)" if has_images else ""
                params.append({"role": "tool", "content": well_formed(body), "tool_call_id": resolved})
                index += 1
            continue
        index += 1
    return params


def openai_chat_body(
    messages: list[Message],
    model: ModelTarget,
    system_prompt: str | Sequence[str] | None,
    tools: Sequence[Mapping[str, Any]] | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model.id,
        "messages": chat_messages(messages, model, system_prompt),
        "stream": True,
    }
    if model.supports_usage_in_streaming:
        body["stream_options"] = {"include_usage": True}
    if model.supports_store:
        body["store"] = False
    if tools:
        body["tools"] = openai_chat_tools(tools, model.strict_tools)
    elif tools is None and _has_tool_history(messages):
        # Proxies in front of Anthropic want ``tools`` whenever the history holds tool traffic; pi-ai
        # sends an empty list when the caller gave no tools at all (an explicit ``[]`` sends none).
        body["tools"] = []
    return body


def _has_tool_history(messages: list[Message]) -> bool:
    for message in messages:
        if message.get("role") == "toolResult":
            return True
        if message.get("role") == "assistant" and any(
            isinstance(b, Mapping) and b.get("type") == "toolCall" for b in message.get("content") or []
        ):
            return True
    return False
