"""omp contexts ⇄ pydantic-ai messages: a round trip keeps signatures and ids, and a context goes
through ``pydantic_ai.direct`` to a (function) model whose answer lands back in the session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic_ai.direct import model_request_sync
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from omp_session import SessionManager, convert_to_llm
from omp_session.dialects import OMP_18_2
from omp_session.integrations.pydantic_ai import append_model_messages, to_model_messages

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
USAGE = {
    "input": 10,
    "output": 5,
    "cacheRead": 2,
    "cacheWrite": 0,
    "totalTokens": 17,
    "cost": {"input": 0.1, "output": 0.2, "cacheRead": 0, "cacheWrite": 0, "total": 0.3},
}


def _assistant(content: list[Any], provider: str, api: str, model: str, stop: str, ts: int) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": content,
        "api": api,
        "provider": provider,
        "model": model,
        "usage": USAGE,
        "stopReason": stop,
        "timestamp": ts,
    }


MESSAGES: list[dict[str, Any]] = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Look"},
            {"type": "image", "data": PNG, "mimeType": "image/png"},
        ],
        "timestamp": 1_760_000_000_000,
    },
    _assistant(
        [
            {"type": "thinking", "thinking": "A pixel.", "thinkingSignature": "EqQBsig=="},
            {"type": "redactedThinking", "data": "EmwKAhgB"},
            {"type": "text", "text": "Reading it."},
            {"type": "toolCall", "id": "toolu_01", "name": "read", "arguments": {"path": "a.png"}},
        ],
        "anthropic",
        "anthropic-messages",
        "claude-sonnet-4-5",
        "toolUse",
        1_760_000_001_000,
    ),
    {
        "role": "toolResult",
        "toolCallId": "toolu_01",
        "toolName": "read",
        "content": [{"type": "text", "text": "bytes"}],
        "isError": False,
        "timestamp": 1_760_000_002_000,
    },
    _assistant(
        [
            {
                "type": "thinking",
                "thinking": "Plan",
                "thinkingSignature": '{"type":"reasoning","id":"rs_1","summary":[]}',
            },
            {"type": "text", "text": "Done.", "textSignature": '{"v":1,"id":"msg_1"}'},
            {
                "type": "toolCall",
                "id": "call_1|fc_1",
                "name": "grep",
                "arguments": {"pattern": "x"},
                "thoughtSignature": "CiQB",
            },
        ],
        "openai",
        "openai-responses",
        "gpt-5",
        "toolUse",
        1_760_000_003_000,
    ),
    {
        "role": "toolResult",
        "toolCallId": "call_1|fc_1",
        "toolName": "grep",
        "content": [{"type": "text", "text": ""}],
        "isError": True,
        "timestamp": 1_760_000_004_000,
    },
    {"role": "user", "content": "thanks", "timestamp": 1_760_000_005_000},
]


def _session(tmp_path: Path, name: str) -> SessionManager:
    return SessionManager.create("/work/demo", tmp_path / name, dialect=OMP_18_2)


def test_round_trip_keeps_signatures_ids_and_fields(tmp_path: Path) -> None:
    with _session(tmp_path, "a") as source:
        for message in MESSAGES:
            source.append_message(message)
        context = source.build_session_context()
    converted = to_model_messages(context)
    response = converted[1]
    assert isinstance(response, ModelResponse)
    thinking = response.parts[0]
    assert isinstance(thinking, ThinkingPart) and thinking.signature == "EqQBsig=="
    call = response.parts[3]
    assert (
        isinstance(call, ToolCallPart) and call.tool_call_id == "toolu_01" and call.args == {"path": "a.png"}
    )
    assert response.model_name == "claude-sonnet-4-5" and response.provider_name == "anthropic"
    with _session(tmp_path, "b") as copy:
        append_model_messages(copy, converted)
        again = copy.build_session_context()
    assert convert_to_llm(again.messages) == convert_to_llm(context.messages)


def test_a_context_through_pydantic_ai_direct(tmp_path: Path) -> None:
    seen: list[list[ModelMessage]] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        return ModelResponse(parts=[TextPart("It is one pixel.")], model_name="function-model")

    with _session(tmp_path, "c") as session:
        for message in MESSAGES:
            session.append_message(message)
        response = model_request_sync(
            FunctionModel(answer), to_model_messages(session.build_session_context())
        )
        append_model_messages(session, [response])
        last = session.build_session_context().messages[-1]
    assert isinstance(seen[0][0].parts[0], UserPromptPart)
    assert len(seen[0]) == 6
    assert last["role"] == "assistant" and last["content"] == [{"type": "text", "text": "It is one pixel."}]
    assert last["model"] == response.model_name == "function:answer:"
