"""omp contexts as pydantic-ai messages and back (extra ``[pydantic-ai]``).

:func:`to_model_messages` turns an omp context into ``pydantic_ai.messages`` (so it can be sent to any
model through ``pydantic_ai.direct``); :func:`append_model_messages` appends pydantic-ai messages
(``result.new_messages()``, a ``direct`` response) to an omp session. Signatures and ids survive both
ways: thinking signatures (``ThinkingPart.signature``), text signatures, Gemini thought signatures
and the omp fields pydantic-ai has no slot for travel in ``provider_details["omp"]``.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from pydantic_ai.messages import (
    BinaryContent,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.usage import RequestUsage

from omp_session.manager import SessionManager
from omp_session.model.llm import convert_to_llm

__all__ = ["append_model_messages", "to_model_messages"]

_OMP = "omp"
_APIS = {"openai": "openai-responses", "anthropic": "anthropic-messages", "google": "google-generative-ai"}


def _when(milliseconds: Any) -> datetime:
    if isinstance(milliseconds, (int, float)) and not isinstance(milliseconds, bool):
        return datetime.fromtimestamp(milliseconds / 1000, tz=timezone.utc)
    return datetime.fromtimestamp(0, tz=timezone.utc)


def _ms(moment: datetime | None) -> int:
    return int(moment.timestamp() * 1000) if moment is not None else 0


def _user_content(content: Any) -> Any:
    if isinstance(content, str):
        return content
    out: list[Any] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text":
            out.append(str(block.get("text", "")))
        elif block.get("type") == "image":
            if block.get("url"):
                out.append(ImageUrl(url=str(block["url"])))
            else:
                out.append(
                    BinaryContent(
                        data=base64.b64decode(str(block.get("data", ""))),
                        media_type=str(block.get("mimeType")),
                    )
                )
    return out


def _response(message: Mapping[str, Any]) -> ModelResponse:
    provider = message.get("provider")
    parts: list[ModelResponsePart] = []
    for block in message.get("content") or []:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "thinking":
            parts.append(
                ThinkingPart(
                    content=str(block.get("thinking") or ""),
                    signature=block.get("thinkingSignature"),
                    provider_name=provider,
                )
            )
        elif kind == "redactedThinking":
            parts.append(
                ThinkingPart(
                    content="",
                    signature=block.get("data"),
                    provider_name=provider,
                    provider_details={_OMP: dict(block)},
                )
            )
        elif kind == "text":
            extra = {key: value for key, value in block.items() if key not in ("type", "text")}
            parts.append(
                TextPart(
                    content=str(block.get("text", "")), provider_details={_OMP: extra} if extra else None
                )
            )
        elif kind == "toolCall":
            extra = {
                key: value for key, value in block.items() if key not in ("type", "id", "name", "arguments")
            }
            parts.append(
                ToolCallPart(
                    tool_name=str(block.get("name", "")),
                    args=dict(block.get("arguments") or {}),
                    tool_call_id=str(block.get("id", "")),
                    provider_details={_OMP: extra} if extra else None,
                )
            )
    usage = message.get("usage") if isinstance(message.get("usage"), Mapping) else {}
    assert isinstance(usage, Mapping)
    kept = {
        key: value
        for key, value in message.items()
        if key not in ("role", "content", "model", "provider", "timestamp")
    }
    return ModelResponse(
        parts=parts,
        usage=RequestUsage(
            input_tokens=int(usage.get("input") or 0),
            output_tokens=int(usage.get("output") or 0),
            cache_read_tokens=int(usage.get("cacheRead") or 0),
            cache_write_tokens=int(usage.get("cacheWrite") or 0),
        ),
        model_name=message.get("model"),
        timestamp=_when(message.get("timestamp")),
        provider_name=provider,
        provider_details={_OMP: kept},
    )


def _tool_return(message: Mapping[str, Any]) -> ModelRequestPart:
    texts = [
        str(b.get("text", ""))
        for b in message.get("content") or []
        if isinstance(b, Mapping) and b.get("type") == "text"
    ]
    kept = {
        key: value
        for key, value in message.items()
        if key not in ("role", "toolCallId", "toolName", "content")
    }
    return ToolReturnPart(
        tool_name=str(message.get("toolName", "")),
        content="\n".join(texts),
        tool_call_id=str(message.get("toolCallId", "")),
        metadata={_OMP: {**kept, "content": message.get("content")}},
        timestamp=_when(message.get("timestamp")),
        outcome="failed" if message.get("isError") else "success",
    )


def to_model_messages(context: Any) -> list[ModelMessage]:
    """pydantic-ai messages for an omp context (a ``SessionContext``, its messages, or LLM messages).

    User turns become ``UserPromptPart`` (images as ``BinaryContent``/``ImageUrl``), developer
    messages ``SystemPromptPart``, assistant turns a ``ModelResponse`` and each run of tool results
    one ``ModelRequest`` of ``ToolReturnPart``.
    """
    messages = convert_to_llm(list(getattr(context, "messages", context)))
    out: list[ModelMessage] = []
    pending: list[ModelRequestPart] = []

    def flush() -> None:
        nonlocal pending
        if pending:
            out.append(ModelRequest(parts=pending))
            pending = []

    for message in messages:
        role = message.get("role")
        if role == "toolResult":
            pending.append(_tool_return(message))
            continue
        flush()
        if role == "assistant":
            out.append(_response(message))
        elif role == "developer":
            out.append(ModelRequest(parts=[SystemPromptPart(content=_text_of(message.get("content")))]))
        elif role == "user":
            out.append(
                ModelRequest(
                    parts=[
                        UserPromptPart(
                            content=_user_content(message.get("content")),
                            timestamp=_when(message.get("timestamp")),
                        )
                    ]
                )
            )
    flush()
    return out


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(
        str(b.get("text", "")) for b in content or [] if isinstance(b, Mapping) and b.get("type") == "text"
    )


def _omp_user_content(content: Any) -> Any:
    if isinstance(content, str):
        return content
    blocks: list[dict[str, Any]] = []
    for item in content:
        if isinstance(item, str):
            blocks.append({"type": "text", "text": item})
        elif isinstance(item, BinaryContent):
            blocks.append(
                {
                    "type": "image",
                    "data": base64.b64encode(item.data).decode("ascii"),
                    "mimeType": item.media_type,
                }
            )
        elif isinstance(item, ImageUrl):
            blocks.append({"type": "image", "url": item.url, "mimeType": item.media_type})
    return blocks


def _assistant(response: ModelResponse) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    for part in response.parts:
        details = (part.provider_details or {}).get(_OMP) if hasattr(part, "provider_details") else None
        if isinstance(part, ThinkingPart):
            if isinstance(details, Mapping) and details.get("type") == "redactedThinking":
                blocks.append(dict(details))
                continue
            block: dict[str, Any] = {"type": "thinking", "thinking": part.content}
            if part.signature is not None:
                block["thinkingSignature"] = part.signature
            blocks.append(block)
        elif isinstance(part, TextPart):
            blocks.append(
                {
                    "type": "text",
                    "text": part.content,
                    **(dict(details) if isinstance(details, Mapping) else {}),
                }
            )
        elif isinstance(part, ToolCallPart):
            blocks.append(
                {
                    "type": "toolCall",
                    "id": part.tool_call_id,
                    "name": part.tool_name,
                    "arguments": part.args_as_dict(),
                    **(dict(details) if isinstance(details, Mapping) else {}),
                }
            )
    kept = (response.provider_details or {}).get(_OMP)
    kept = dict(kept) if isinstance(kept, Mapping) else {}
    provider = response.provider_name or "unknown"
    usage = response.usage
    message: dict[str, Any] = {
        "role": "assistant",
        "content": blocks,
        "api": kept.pop("api", _APIS.get(provider, provider)),
        "provider": provider,
        "model": response.model_name or "unknown",
        "usage": kept.pop(
            "usage",
            {
                "input": usage.input_tokens,
                "output": usage.output_tokens,
                "cacheRead": usage.cache_read_tokens,
                "cacheWrite": usage.cache_write_tokens,
                "totalTokens": usage.input_tokens + usage.output_tokens,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
            },
        ),
        "stopReason": kept.pop(
            "stopReason", "toolUse" if any(b["type"] == "toolCall" for b in blocks) else "stop"
        ),
        "timestamp": _ms(response.timestamp),
    }
    message.update(kept)
    return message


def _request_messages(request: ModelRequest) -> Iterable[dict[str, Any]]:
    for part in request.parts:
        if isinstance(part, SystemPromptPart):
            yield {"role": "developer", "content": part.content, "timestamp": _ms(part.timestamp)}
        elif isinstance(part, UserPromptPart):
            yield {
                "role": "user",
                "content": _omp_user_content(part.content),
                "timestamp": _ms(part.timestamp),
            }
        elif isinstance(part, ToolReturnPart):
            meta = part.metadata.get(_OMP) if isinstance(part.metadata, Mapping) else None
            kept = dict(meta) if isinstance(meta, Mapping) else {}
            content = kept.pop("content", None) or [{"type": "text", "text": part.model_response_str()}]
            message = {
                "role": "toolResult",
                "toolCallId": part.tool_call_id,
                "toolName": part.tool_name,
                "content": content,
                "isError": part.outcome == "failed",
                "timestamp": _ms(part.timestamp),
            }
            message.update({key: value for key, value in kept.items() if key not in message})
            yield message
        elif isinstance(part, RetryPromptPart):
            text = part.model_response()
            if part.tool_name is None:
                yield {"role": "user", "content": text, "timestamp": _ms(part.timestamp)}
            else:
                yield {
                    "role": "toolResult",
                    "toolCallId": part.tool_call_id,
                    "toolName": part.tool_name,
                    "content": [{"type": "text", "text": text}],
                    "isError": True,
                    "timestamp": _ms(part.timestamp),
                }


def append_model_messages(session: SessionManager, messages: Sequence[ModelMessage]) -> list[str]:
    """Append pydantic-ai messages to ``session`` as omp messages; returns the new entry ids."""
    ids: list[str] = []
    for message in messages:
        if isinstance(message, ModelResponse):
            ids.append(session.append_message(_assistant(message)))
        else:
            ids.extend(session.append_message(item) for item in _request_messages(message))
    return ids
