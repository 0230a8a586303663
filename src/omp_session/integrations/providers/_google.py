"""Gemini ``generateContent`` request bodies (pi-ai ``google-shared.ts`` ``convertMessages``).

A ``thoughtSignature`` (on text, thinking or a function call) replays only for the same provider and
model, and only when it is valid base64; other thinking is demoted to text.
"""

from __future__ import annotations

import re
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
from omp_session.integrations.providers._tools import google_tools
from omp_session.integrations.providers._transform import transform_messages

__all__ = ["google_body"]

Message = dict[str, Any]
_BASE64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")


def _signature(same: bool, signature: Any) -> str | None:
    if not same or not isinstance(signature, str) or not signature:
        return None
    if len(signature) % 4 != 0 or not _BASE64.match(signature):
        return None
    return signature


def _image_part(image: Mapping[str, Any]) -> dict[str, Any]:
    provider_file = image.get("providerFile")
    if (
        isinstance(provider_file, Mapping)
        and provider_file.get("provider") == "google"
        and provider_file.get("uri")
    ):
        return {"fileData": {"fileUri": provider_file["uri"], "mimeType": image.get("mimeType")}}
    if image.get("url"):
        return {"fileData": {"fileUri": image["url"], "mimeType": image.get("mimeType")}}
    return {"inlineData": {"mimeType": image.get("mimeType"), "data": image.get("data")}}


def google_contents(messages: list[Message], model: ModelTarget) -> list[dict[str, Any]]:
    transformed = transform_messages(
        messages, model, lambda identifier, _source: sanitize_tool_call_id(identifier)
    )
    contents: list[dict[str, Any]] = []
    emitted_names: dict[str, Any] = {}
    pending_images: list[dict[str, Any]] = []

    def flush_images() -> None:
        nonlocal pending_images
        if pending_images:
            contents.append({"role": "user", "parts": pending_images})
            pending_images = []

    for message in transformed:
        role = message.get("role")
        if role != "toolResult":
            flush_images()
        if role in ("user", "developer"):
            content = message.get("content")
            if isinstance(content, str):
                if is_blank(content):
                    continue
                contents.append({"role": "user", "parts": [{"text": well_formed(content)}]})
                continue
            parts: list[dict[str, Any]] = []
            omitted = False
            for item in content if isinstance(content, list) else []:
                if not isinstance(item, Mapping):
                    continue
                if item.get("type") == "text":
                    text = well_formed(str(item.get("text", "")))
                    if js_trim(text):
                        parts.append({"text": text})
                elif model.images:
                    parts.append(_image_part(item))
                else:
                    omitted = True
            if omitted:
                parts.append({"text": NON_VISION_IMAGE_PLACEHOLDER})
            if parts:
                contents.append({"role": "user", "parts": parts})
        elif role == "assistant":
            same = message.get("provider") == model.provider and message.get("model") == model.id
            parts = []
            for block in message.get("content") or []:
                if not isinstance(block, Mapping):
                    continue
                kind = block.get("type")
                if kind == "text":
                    if is_blank(block.get("text")):
                        continue
                    part: dict[str, Any] = {"text": well_formed(str(block["text"]))}
                    signature = _signature(same, block.get("textSignature"))
                    if signature:
                        part["thoughtSignature"] = signature
                    parts.append(part)
                elif kind == "thinking":
                    if is_blank(block.get("thinking")):
                        continue
                    signature = _signature(same, block.get("thinkingSignature"))
                    if signature:
                        parts.append(
                            {
                                "thought": True,
                                "text": well_formed(str(block["thinking"])),
                                "thoughtSignature": signature,
                            }
                        )
                    else:
                        parts.append({"text": render_demoted_thinking(model.id, str(block["thinking"]))})
                elif kind == "toolCall":
                    emitted_names[str(block.get("id"))] = block.get("name")
                    arguments = block.get("arguments")
                    part = {
                        "functionCall": {
                            "name": block.get("name"),
                            "args": arguments if arguments is not None else {},
                        }
                    }
                    signature = _signature(same, block.get("thoughtSignature"))
                    if signature:
                        part["thoughtSignature"] = signature
                    parts.append(part)
            if parts:
                contents.append({"role": "model", "parts": parts})
        elif role == "toolResult":
            blocks = [b for b in message.get("content") or [] if isinstance(b, Mapping)]
            text = "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
            images = [b for b in blocks if b.get("type") == "image"] if model.images else []
            omitted = not model.images and any(b.get("type") == "image" for b in blocks)
            if omitted:
                value = "\n".join(
                    part for part in (well_formed(text) if text else "", NON_VISION_IMAGE_PLACEHOLDER) if part
                )
            else:
                value = well_formed(text) if text else "(see attached image)" if images else ""
            name = emitted_names.get(str(message.get("toolCallId")), message.get("toolName"))
            response = {"error": value} if message.get("isError") else {"output": value}
            function_part = {"functionResponse": {"name": name, "response": response}}
            last = contents[-1] if contents else None
            if last and last["role"] == "user" and any("functionResponse" in p for p in last["parts"]):
                last["parts"].append(function_part)
            else:
                contents.append({"role": "user", "parts": [function_part]})
            if images:
                pending_images.extend(
                    [{"text": "Tool result image:"}, *(_image_part(image) for image in images)]
                )
    flush_images()
    return contents


def google_body(
    messages: list[Message],
    model: ModelTarget,
    system_prompt: str | Sequence[str] | None,
    tools: Sequence[Mapping[str, Any]] | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"contents": google_contents(messages, model)}
    prompts = normalize_system_prompts(system_prompt)
    if prompts:
        body["systemInstruction"] = {"parts": [{"text": prompt} for prompt in prompts]}
    declarations = google_tools(tools) if tools else None
    if declarations:
        body["tools"] = declarations
    return body
