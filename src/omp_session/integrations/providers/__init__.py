"""omp's LLM messages → the request body omp sends to each provider.

omp's last step before a model call lives in its ``pi-ai`` package: a ``transformMessages`` pass for
the target model, then one encoder per provider API. These functions do the same on plain dicts and
return the JSON body pi-ai 18.2.3 builds with default stream options (no reasoning level, no session
id, no temperature): what omp would send for that context, byte for byte once serialised with
``JSON.stringify`` rules (:func:`request_json`). The golden tests compare them with bodies recorded
from pi-ai itself against a local HTTP endpoint.

Every function takes omp *agent* messages (a :class:`~omp_session.SessionContext`, its ``messages``,
or LLM messages) and runs :func:`~omp_session.convert_to_llm` first.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from omp_session.format.bun_hash import bun_hash, bun_hash_base36
from omp_session.format.codec import encode_json
from omp_session.integrations.providers._anthropic import anthropic_body
from omp_session.integrations.providers._common import UnsupportedConversion
from omp_session.integrations.providers._google import google_body
from omp_session.integrations.providers._openai_chat import openai_chat_body
from omp_session.integrations.providers._openai_responses import openai_responses_body
from omp_session.integrations.providers._target import (
    ANTHROPIC,
    GOOGLE,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    ModelTarget,
)
from omp_session.integrations.providers._tools import UnsupportedToolSchema
from omp_session.integrations.providers._transform import transform_messages
from omp_session.manager import SessionManager
from omp_session.model.llm import convert_to_llm
from omp_session.store import SessionStorage
from omp_session.store.blobs import BlobSink
from omp_session.tools.reading import session_context

__all__ = [
    "FORMATS",
    "ModelTarget",
    "UnsupportedConversion",
    "UnsupportedToolSchema",
    "bun_hash",
    "bun_hash_base36",
    "request_body",
    "request_json",
    "session_request_body",
    "to_anthropic_messages",
    "to_google_contents",
    "to_openai_chat",
    "to_openai_responses",
    "transform_messages",
]

#: ``--format`` names → pi-ai api names.
FORMATS = {
    "anthropic": ANTHROPIC,
    "openai-responses": OPENAI_RESPONSES,
    "openai-chat": OPENAI_CHAT,
    "google": GOOGLE,
}

Messages = Any  # a SessionContext, or a sequence of agent/LLM message dicts
Tools = Sequence[Mapping[str, Any]] | None


def _llm_messages(context: Messages) -> list[dict[str, Any]]:
    messages = getattr(context, "messages", context)
    if isinstance(messages, Mapping):
        messages = messages.get("messages", [])
    return convert_to_llm(list(messages or []))


def _target(api: str, model: ModelTarget | str | None) -> ModelTarget:
    if isinstance(model, ModelTarget):
        if model.api != api:
            raise ValueError(f"model target is for {model.api}, not {api}")
        return model
    return ModelTarget.for_api(api, model)


def to_anthropic_messages(
    context: Messages,
    *,
    model: ModelTarget | str | None = None,
    system_prompt: str | Sequence[str] | None = None,
    tools: Tools = None,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """The Anthropic Messages body: ``model, messages, system, tools, max_tokens, stream``.

    Thinking replays with its signature where the issuer can verify it, tool-call ids are made
    Anthropic-valid, and ``cache_control`` marks the last tool, the last system block and the last
    two messages, as omp does with an API key.
    """
    return anthropic_body(_llm_messages(context), _target(ANTHROPIC, model), system_prompt, tools, max_tokens)


def to_openai_responses(
    context: Messages,
    *,
    model: ModelTarget | str | None = None,
    system_prompt: str | Sequence[str] | None = None,
    tools: Tools = None,
) -> dict[str, Any]:
    """The OpenAI Responses body: ``model, input, stream, store, stream_options, tools, include``.

    Same-model turns replay their reasoning item (``thinkingSignature``), output message ids
    (``textSignature``) and ``call_id|item_id`` tool ids, or, when they carry OpenAI's native items
    (``providerPayload`` ``openaiResponsesHistory``), those items.
    """
    return openai_responses_body(
        _llm_messages(context), _target(OPENAI_RESPONSES, model), system_prompt, tools
    )


def to_openai_chat(
    context: Messages,
    *,
    model: ModelTarget | str | None = None,
    system_prompt: str | Sequence[str] | None = None,
    tools: Tools = None,
) -> dict[str, Any]:
    """The Chat Completions body: ``model, messages, stream, stream_options, store, tools``."""
    return openai_chat_body(_llm_messages(context), _target(OPENAI_CHAT, model), system_prompt, tools)


def to_google_contents(
    context: Messages,
    *,
    model: ModelTarget | str | None = None,
    system_prompt: str | Sequence[str] | None = None,
    tools: Tools = None,
) -> dict[str, Any]:
    """The Gemini ``streamGenerateContent`` body: ``contents, systemInstruction, tools``."""
    return google_body(_llm_messages(context), _target(GOOGLE, model), system_prompt, tools)


def request_body(
    format_name: str,
    context: Messages,
    *,
    model: ModelTarget | str | None = None,
    system_prompt: str | Sequence[str] | None = None,
    tools: Tools = None,
) -> dict[str, Any]:
    """The body for a ``--format`` name (``anthropic``, ``openai-responses``, ``openai-chat``, ``google``)."""
    if format_name == "anthropic":
        return to_anthropic_messages(context, model=model, system_prompt=system_prompt, tools=tools)
    if format_name == "openai-responses":
        return to_openai_responses(context, model=model, system_prompt=system_prompt, tools=tools)
    if format_name == "openai-chat":
        return to_openai_chat(context, model=model, system_prompt=system_prompt, tools=tools)
    if format_name == "google":
        return to_google_contents(context, model=model, system_prompt=system_prompt, tools=tools)
    raise ValueError(f"unknown format {format_name!r}: expected one of {', '.join(FORMATS)}")


def session_request_body(
    path: str | os.PathLike[str],
    format_name: str,
    *,
    leaf_id: str | None = None,
    model: ModelTarget | str | None = None,
    blobs: BlobSink | None = None,
    storage: SessionStorage | None = None,
) -> dict[str, Any]:
    """The body omp would send for the session file at ``path`` (a row of ``storage`` when
    given; at its leaf, or at ``leaf_id``).

    The system prompt is the one the session recorded in its last ``session_init`` entry (omp 18
    sub-agent sessions), else none. Reads only.
    """
    context = session_context(os.fspath(path), leaf_id=leaf_id, blobs=blobs, storage=storage)
    peeked = SessionManager.peek_session_init(
        path, storage=storage
    )  # None: no header (omp 18.3's projection)
    init = peeked.get("init") if peeked is not None else None
    system_prompt = init.get("systemPrompt") if isinstance(init, Mapping) else None
    if not isinstance(system_prompt, (str, list)):
        system_prompt = None
    return request_body(format_name, context, model=model, system_prompt=system_prompt)


def request_json(body: Mapping[str, Any]) -> bytes:
    """``JSON.stringify(body)`` as UTF-8: the bytes omp puts on the wire."""
    return encode_json(body)
