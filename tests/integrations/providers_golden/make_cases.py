"""Write ``cases.json``: the LLM contexts the golden request bodies are recorded for.

Two sources:
- every non-empty context of the three conformance corpora (``shared/fixtures/conformance*/load``),
  which omp itself built from real session files, passed through ``convert_to_llm``;
- generated contexts covering each content block, signature and replay encoding, aborted and
  errored turns, orphaned calls and results, duplicate ids and cross-provider switches;
- assistant turns that carry OpenAI's native items (``providerPayload`` ``openaiResponsesHistory``,
  kept in memory under omp 18): full snapshots, ``dt`` deltas, hidden-empty and whitespace-only
  turns, other providers/models/apis, invalid call arguments, other item kinds, and the session the
  OpenAI Agents bridge writes under a real ``Runner.run`` (``gen-native-openai-agents``).

Run from the repository root: ``.venv/bin/python tests/integrations/providers_golden/make_cases.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from omp_session import convert_to_llm

HERE = Path(__file__).resolve().parent
FIXTURES = Path("/work/shared/fixtures")
SYSTEM = "You are omp, a coding agent. Work in /repo."
TOOLS = [
    {
        "name": "read",
        "description": "Read a file",
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path"},
                "offset": {"type": "number", "description": "First line"},
            },
            "required": ["path"],
        },
    },
    {
        "name": "grep",
        "description": "Search files",
        "parameters": {
            "type": "object",
            "properties": {
                "pattern": {"type": "string"},
                "paths": {"type": "array", "items": {"type": "string"}},
                "mode": {"type": "string", "enum": ["content", "files"]},
            },
            "required": ["pattern"],
        },
    },
]

USAGE = {
    "input": 10,
    "output": 5,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 15,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}
SOURCES = {
    "anthropic": ("anthropic", "anthropic-messages", "claude-sonnet-4-5"),
    "anthropic-opus": ("anthropic", "anthropic-messages", "claude-opus-4-1"),
    "openai": ("openai", "openai-responses", "gpt-5"),
    "openai-mini": ("openai", "openai-responses", "gpt-5-mini"),
    "groq": ("groq", "openai-completions", "llama-3.3-70b-versatile"),
    "google": ("google", "google-generative-ai", "gemini-2.5-pro"),
    "google-flash": ("google", "google-generative-ai", "gemini-2.5-flash"),
}
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
REASONING_JSON = json.dumps(
    {
        "type": "reasoning",
        "id": "rs_0abc",
        "summary": [{"type": "summary_text", "text": "Plan"}],
        "encrypted_content": "gAAAAB-enc",
    },
    separators=(",", ":"),
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_760_000_000_000

    def tick(self) -> int:
        self.now += 1000
        return self.now


def user(clock: Clock, content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content, "timestamp": clock.tick()}


def assistant(clock: Clock, source: str, content: list[Any], stop: str = "stop") -> dict[str, Any]:
    provider, api, model = SOURCES[source]
    return {
        "role": "assistant",
        "content": content,
        "api": api,
        "provider": provider,
        "model": model,
        "usage": USAGE,
        "stopReason": stop,
        "timestamp": clock.tick(),
    }


def result(
    clock: Clock, call_id: str, text: str, name: str = "read", error: bool = False, extra: Any = None
) -> dict[str, Any]:
    content: list[Any] = [{"type": "text", "text": text}] if text else []
    if extra:
        content.extend(extra)
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": content,
        "isError": error,
        "timestamp": clock.tick(),
    }


def thinking(text: str, signature: str | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "thinking", "thinking": text}
    if signature is not None:
        block["thinkingSignature"] = signature
    return block


def text(value: str, signature: str | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": value}
    if signature is not None:
        block["textSignature"] = signature
    return block


def call(
    call_id: str, name: str = "read", arguments: Any = None, signature: str | None = None
) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "toolCall",
        "id": call_id,
        "name": name,
        "arguments": {"path": "src/app.py"} if arguments is None else arguments,
    }
    if signature is not None:
        block["thoughtSignature"] = signature
    return block


def native_ids(source: str, n: int) -> tuple[str, str | None, str | None]:
    """A tool-call id, a thinking signature and a text signature in the source's own encoding."""
    if source.startswith("anthropic"):
        return f"toolu_01A{n}bcDEF", f"EqQBCkYIBxgCKkD{n}sig==", None
    if source.startswith("openai"):
        reasoning = REASONING_JSON.replace("rs_0abc", f"rs_0abc{n}")
        return (
            f"call_K{n}x9|fc_0d{n}e8",
            reasoning,
            json.dumps({"v": 1, "id": f"msg_0f{n}", "phase": "final_answer"}, separators=(",", ":")),
        )
    if source.startswith("google"):
        return f"read_{n}_1760000000", f"CiQB{n}abc", "Q2lRQmFi"
    return f"call_{n}groq", None, None


def tool_turn(clock: Clock, source: str, n: int, with_thinking: bool = True) -> list[dict[str, Any]]:
    call_id, thinking_signature, text_signature = native_ids(source, n)
    blocks: list[Any] = []
    if with_thinking:
        blocks.append(thinking(f"I should read the file ({n}).", thinking_signature))
    blocks.append(text(f"Reading it now ({n}).", text_signature))
    blocks.append(call(call_id, signature="CiQBthought=" if source.startswith("google") else None))
    return [
        assistant(clock, source, blocks, "toolUse"),
        result(clock, call_id, f"print('hello {n}')\n"),
    ]


def final_turn(clock: Clock, source: str, n: int) -> dict[str, Any]:
    _, thinking_signature, text_signature = native_ids(source, n)
    return assistant(
        clock,
        source,
        [thinking(f"Done thinking {n}.", thinking_signature), text(f"All done ({n}).", text_signature)],
    )


def generated() -> dict[str, list[dict[str, Any]]]:
    cases: dict[str, list[dict[str, Any]]] = {}
    for source in SOURCES:
        clock = Clock()
        cases[f"gen-{source}-tool-loop"] = [
            user(clock, "Read src/app.py"),
            *tool_turn(clock, source, 1),
            *tool_turn(clock, source, 2),
            final_turn(clock, source, 3),
            user(clock, [{"type": "text", "text": "Thanks. Now explain it."}]),
        ]
        clock = Clock()
        call_id, thinking_signature, _ = native_ids(source, 7)
        cases[f"gen-{source}-aborted"] = [
            user(clock, "Run the tests"),
            assistant(
                clock,
                source,
                [
                    thinking("Let me run them.", thinking_signature),
                    call(call_id, "bash", {"command": "pytest"}),
                ],
                "aborted",
            ),
            user(clock, "Why did you stop?"),
        ]
        clock = Clock()
        cases[f"gen-{source}-error-with-result"] = [
            user(clock, "List files"),
            assistant(clock, source, [text("Listing."), call(call_id, "bash", {"command": "ls"})], "error"),
            result(clock, call_id, "a.py\nb.py", "bash"),
            user(clock, "Continue"),
        ]
        clock = Clock()
        cases[f"gen-{source}-orphan-call"] = [
            user(clock, "Read it"),
            assistant(clock, source, [text("Reading."), call(call_id)], "toolUse"),
            user(clock, "Never mind, stop."),
        ]
        clock = Clock()
        cases[f"gen-{source}-thinking-only-length"] = [
            user(clock, "Think hard"),
            assistant(clock, source, [thinking("Very long reasoning...", thinking_signature)], "length"),
            user(clock, "Go on"),
        ]
        clock = Clock()
        cases[f"gen-{source}-trailing-assistant"] = [
            user(clock, "Say hi"),
            final_turn(clock, source, 4),
        ]
    clock = Clock()
    cases["gen-cross-provider-switch"] = [
        user(clock, "Start with Claude"),
        *tool_turn(clock, "anthropic", 1),
        final_turn(clock, "anthropic", 2),
        user(clock, "Now GPT"),
        *tool_turn(clock, "openai", 3),
        final_turn(clock, "openai", 4),
        user(clock, "Now Gemini"),
        *tool_turn(clock, "google", 5),
        final_turn(clock, "google", 6),
        user(clock, "Now Groq"),
        *tool_turn(clock, "groq", 7, with_thinking=False),
        assistant(clock, "groq", [text("Groq answer.")]),
        user(clock, "And back"),
    ]
    clock = Clock()
    cases["gen-orphan-result"] = [
        user(clock, "Hello"),
        assistant(clock, "anthropic", [text("Hi!")]),
        result(clock, "toolu_gone", "stale output", "read", True),
        user(clock, "What was that?"),
    ]
    clock = Clock()
    cases["gen-duplicate-ids"] = [
        user(clock, "Read twice"),
        assistant(clock, "anthropic", [call("toolu_same")], "toolUse"),
        result(clock, "toolu_same", "first"),
        assistant(clock, "anthropic", [call("toolu_same", arguments={"path": "b.py"})], "toolUse"),
        result(clock, "toolu_same", "second"),
        user(clock, "ok"),
    ]
    clock = Clock()
    cases["gen-parallel-calls"] = [
        user(clock, "Read both"),
        assistant(
            clock,
            "openai",
            [
                thinking("", native_ids("openai", 1)[1]),
                call("call_A|fc_1"),
                call("call_B|fc_2", "grep", {"pattern": "x"}),
            ],
            "toolUse",
        ),
        result(clock, "call_A|fc_1", "A"),
        result(clock, "call_B|fc_2", "B", "grep"),
        assistant(
            clock, "openai", [text("Both read.", json.dumps({"v": 1, "id": "msg_z"}, separators=(",", ":")))]
        ),
        user(clock, "ok"),
    ]
    clock = Clock()
    cases["gen-images"] = [
        user(
            clock,
            [
                {"type": "text", "text": "Look at this"},
                {"type": "image", "data": PNG, "mimeType": "image/png"},
            ],
        ),
        assistant(
            clock, "anthropic", [text("A pixel."), call("toolu_img", "read", {"path": "shot.png"})], "toolUse"
        ),
        result(
            clock, "toolu_img", "", "read", False, [{"type": "image", "data": PNG, "mimeType": "image/png"}]
        ),
        assistant(clock, "anthropic", [text("Same pixel.")]),
        user(clock, [{"type": "image", "data": PNG, "mimeType": "image/jpg"}]),
    ]
    clock = Clock()
    cases["gen-redacted-and-empty"] = [
        user(clock, "   "),
        user(clock, "Real question"),
        assistant(
            clock,
            "anthropic",
            [
                {"type": "redactedThinking", "data": "EmwKAhgBEgy3va"},
                thinking("   ", "EqQBCkYsig=="),
                thinking("visible", "EqQBCkYsig2=="),
                text("   "),
                text("Answer"),
            ],
        ),
        {"role": "developer", "content": "Be brief.", "timestamp": clock.tick()},
        user(clock, "again"),
    ]
    clock = Clock()
    cases["gen-unsigned-thinking"] = [
        user(clock, "Hmm"),
        assistant(clock, "anthropic", [thinking("unsigned thought"), text("Visible")]),
        assistant(clock, "openai", [thinking("openai unsigned"), text("Plain text", "msg_plain")]),
        user(clock, "next"),
    ]
    clock = Clock()
    cases["gen-long-and-odd-ids"] = [
        user(clock, "Go"),
        assistant(
            clock,
            "openai",
            [call("call_" + "x" * 70 + "|fc_" + "y" * 80), call("weird id!|not_fc"), call("call_plain")],
            "toolUse",
        ),
        result(clock, "call_" + "x" * 70 + "|fc_" + "y" * 80, "one"),
        result(clock, "weird id!|not_fc", "two"),
        result(clock, "call_plain", "three"),
        user(clock, "ok"),
    ]
    clock = Clock()
    cases["gen-error-result-empty"] = [
        user(clock, "Try"),
        assistant(clock, "anthropic", [call("toolu_fail", "bash", {"command": "false"})], "toolUse"),
        result(clock, "toolu_fail", "", "bash", True),
        user(clock, "and?"),
    ]
    clock = Clock()
    many: list[dict[str, Any]] = []
    for n in range(17):
        many.append(user(clock, f"question {n}"))
        many.append(assistant(clock, "anthropic", [text(f"answer {n}")]))
    many.append(user(clock, "last"))
    cases["gen-many-turns-decimation"] = many
    return cases


def with_history(message: dict[str, Any], items: list[Any], *, delta: bool, provider: Any = "openai") -> Any:
    """``message`` carrying OpenAI's native items as omp keeps them (``dt``: this turn's items only)."""
    payload: dict[str, Any] = {"type": "openaiResponsesHistory"}
    if provider is not None:
        payload["provider"] = provider
    if delta:
        payload["dt"] = True
    payload["items"] = items
    return {**message, "providerPayload": payload}


def rs_item(n: int) -> dict[str, Any]:
    return {
        "type": "reasoning",
        "id": f"rs_n{n}",
        "summary": [{"type": "summary_text", "text": f"Plan {n}"}],
        "encrypted_content": f"gAAAAB-n{n}",
    }


def msg_item(n: int, value: str, phase: str = "final_answer") -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"msg_n{n}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": value, "annotations": []}],
        "phase": phase,
    }


def fc_item(n: int, arguments: str = '{"path":"src/app.py"}', name: str = "read") -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_n{n}",
        "call_id": f"call_n{n}",
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def native_turn(clock: Clock, n: int, value: str, calls: int = 0, source: str = "openai") -> dict[str, Any]:
    """An OpenAI turn's omp content: thinking with its reasoning item, text with its id, calls."""
    blocks: list[Any] = [
        thinking(f"Plan {n}", json.dumps(rs_item(n), separators=(",", ":"))),
        text(value, json.dumps({"v": 1, "id": f"msg_n{n}", "phase": "final_answer"}, separators=(",", ":"))),
    ]
    blocks.extend(call(f"call_n{n + k}|fc_n{n + k}") for k in range(calls))
    return assistant(clock, source, blocks, "toolUse" if calls else "stop")


def native_history() -> dict[str, list[dict[str, Any]]]:
    cases: dict[str, list[dict[str, Any]]] = {}
    first_user = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "Read it (sent)"}],
    }
    clock = Clock()
    turn1 = [first_user, rs_item(1), msg_item(1, "Reading it now.", "commentary"), fc_item(1)]
    output = {"type": "function_call_output", "call_id": "call_n1", "output": "print('hello') (sent)"}
    cases["gen-native-snapshot-tool-loop"] = [
        user(clock, "Read src/app.py"),
        with_history(native_turn(clock, 1, "Reading it now.", calls=1), turn1, delta=False),
        result(clock, "call_n1|fc_n1", "print('hello')\n"),
        with_history(
            native_turn(clock, 2, "It prints hello."),
            [*turn1, output, rs_item(2), msg_item(2, "It prints hello.")],
            delta=False,
        ),
        user(clock, "Thanks"),
    ]
    clock = Clock()
    cases["gen-native-delta-tool-loop"] = [
        user(clock, "Read src/app.py"),
        with_history(
            native_turn(clock, 1, "Reading it now.", calls=1),
            [rs_item(1), msg_item(1, "Reading it now.", "commentary"), fc_item(1)],
            delta=True,
        ),
        result(clock, "call_n1|fc_n1", "print('hello')\n"),
        with_history(
            native_turn(clock, 2, "It prints hello."),
            [rs_item(2), msg_item(2, "It prints hello.")],
            delta=True,
        ),
        user(clock, "Thanks"),
    ]
    clock = Clock()
    cases["gen-native-snapshot-after-delta"] = [
        user(clock, "One"),
        with_history(native_turn(clock, 1, "First."), [rs_item(1), msg_item(1, "First.")], delta=True),
        user(clock, "Two"),
        with_history(
            native_turn(clock, 2, "Second."),
            [first_user, rs_item(2), msg_item(2, "Second.")],
            delta=False,
        ),
        user(clock, "Three"),
    ]
    clock = Clock()
    hidden = native_turn(clock, 3, "")
    visible_call = native_turn(clock, 4, "Said.", calls=1)
    cases["gen-native-hidden-empty"] = [
        user(clock, "Think quietly"),
        with_history(hidden, [rs_item(3), msg_item(3, "")], delta=True),
        user(clock, "Now read it"),
        with_history(visible_call, [rs_item(4), msg_item(4, " \n")], delta=True),
        result(clock, "call_n4|fc_n4", "content"),
        user(clock, "ok"),
    ]
    clock = Clock()
    refusal = {**msg_item(8, ""), "content": [{"type": "refusal", "refusal": "\t"}]}
    cases["gen-native-whitespace-message"] = [
        user(clock, "Go"),
        with_history(
            native_turn(clock, 5, "   ", calls=1),
            [rs_item(5), msg_item(5, "  \n", "commentary"), rs_item(6), fc_item(5)],
            delta=True,
        ),
        result(clock, "call_n5|fc_n5", "done"),
        with_history(
            native_turn(clock, 7, "Answer"),
            [rs_item(7), msg_item(7, "Answer"), msg_item(9, " "), refusal, rs_item(10)],
            delta=True,
        ),
        user(clock, "ok"),
    ]
    clock = Clock()
    copilot = native_turn(clock, 12, "From copilot.")
    copilot["provider"] = "github-copilot"
    codex = native_turn(clock, 13, "From codex.")
    codex["api"] = "openai-codex-responses"
    cases["gen-native-other-source"] = [
        user(clock, "Hi"),
        with_history(
            native_turn(clock, 11, "From mini.", source="openai-mini"),
            [rs_item(11), msg_item(11, "From mini.")],
            delta=True,
        ),
        user(clock, "Copilot"),
        with_history(copilot, [rs_item(12), msg_item(12, "From copilot.")], delta=True, provider=None),
        user(clock, "Codex"),
        with_history(codex, [rs_item(13), msg_item(13, "From codex.")], delta=True),
        user(clock, "Azure payload"),
        with_history(
            native_turn(clock, 14, "Azure items."),
            [rs_item(14), msg_item(14, "Azure items.")],
            delta=True,
            provider="azure",
        ),
        user(clock, "No provider"),
        with_history(
            native_turn(clock, 15, "Own items."),
            [rs_item(15), msg_item(15, "Own items (sent).")],
            delta=True,
            provider=None,
        ),
        user(clock, "end"),
    ]
    clock = Clock()
    cases["gen-native-invalid-arguments"] = [
        user(clock, "Read three"),
        with_history(
            native_turn(clock, 20, "Reading.", calls=3),
            [rs_item(20), fc_item(20), fc_item(21, '{"path":'), fc_item(22, "  ")],
            delta=True,
        ),
        result(clock, "call_n20|fc_n20", "one"),
        result(clock, "call_n21|fc_n21", "two"),
        result(clock, "call_n22|fc_n22", "three"),
        user(clock, "ok"),
    ]
    clock = Clock()
    patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch"
    cases["gen-native-item-kinds"] = [
        user(clock, "Patch, click and draw"),
        with_history(
            assistant(
                clock,
                "openai",
                [
                    thinking("Plan 30", json.dumps(rs_item(30), separators=(",", ":"))),
                    call("call_p|ctc_p", "edit", {"input": patch}),
                ],
                "toolUse",
            ),
            [
                rs_item(30),
                {
                    "type": "custom_tool_call",
                    "id": "ctc_p",
                    "call_id": "call_p",
                    "name": "apply_patch",
                    "input": patch,
                    "status": "completed",
                },
                {
                    "type": "computer_call",
                    "id": "cu_1",
                    "call_id": "call_cu",
                    "actions": [{"type": "click", "x": 1, "y": 2}],
                    "pending_safety_checks": [],
                    "status": "completed",
                },
                {
                    "type": "image_generation_call",
                    "id": "ig_" + "z" * 70,
                    "status": "completed",
                    "result": PNG,
                },
                {"type": "image_generation_call", "id": "ig_empty", "status": "completed", "result": ""},
                {"type": "item_reference", "id": "ref_1"},
                {
                    "type": "web_search_call",
                    "id": "ws_1",
                    "status": "completed",
                    "action": {"type": "search", "query": "x"},
                },
            ],
            delta=True,
        ),
        result(clock, "call_p|ctc_p", "patched", "edit"),
        user(clock, "ok"),
    ]
    clock = Clock()
    screenshot = {"type": "computer_screenshot", "image_url": f"data:image/png;base64,{PNG}"}
    cases["gen-native-input-boundaries"] = [
        user(clock, "Go"),
        with_history(
            native_turn(clock, 40, "Step.", calls=1),
            [
                rs_item(40),
                msg_item(40, " "),
                {"type": "function_call_output", "call_id": "call_x", "output": "early"},
                rs_item(41),
                msg_item(41, ""),
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "inline"}]},
                rs_item(42),
                fc_item(40),
            ],
            delta=True,
        ),
        result(clock, "call_n40|fc_n40", "done"),
        {
            **user(clock, "Look"),
            "providerPayload": {
                "type": "openaiResponsesHistory",
                "provider": "openai",
                "items": [
                    {"type": "computer_call_output", "call_id": "call_cu", "output": screenshot},
                    {
                        "type": "message",
                        "id": "m_1",
                        "role": "user",
                        "status": "completed",
                        "content": "Look",
                    },
                    {
                        "type": "function_call",
                        "id": "fc_bad",
                        "call_id": "c",
                        "name": "read",
                        "arguments": "{",
                    },
                ],
            },
        },
        user(clock, "ok"),
    ]
    cases["gen-native-openai-agents"] = openai_agents_session()
    return cases


def openai_agents_session() -> list[dict[str, Any]]:
    """The omp 18 context of a session the OpenAI Agents bridge wrote under a real ``Runner.run``."""
    import asyncio
    import tempfile

    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.memory import Session
    from agents.testing import ScriptedModel, assistant_message, function_call
    from openai.types.responses import ResponseReasoningItem
    from openai.types.responses.response_reasoning_item import Summary

    from omp_session import SessionManager
    from omp_session.dialects import OMP_18_2
    from omp_session.integrations.openai_agents import OmpSession

    @function_tool
    def read_file(path: str) -> str:
        """Read a file."""
        return f"contents of {path}"

    reasoning = ResponseReasoningItem(
        id="rs_1",
        type="reasoning",
        summary=[Summary(text="Need the file.", type="summary_text")],
        encrypted_content="enc-1",
    )
    model = ScriptedModel(
        [
            [reasoning, function_call("read_file", {"path": "a.py"}, call_id="call_1", item_id="fc_1")],
            [assistant_message("a.py holds code.", item_id="msg_1")],
            [assistant_message("You asked about a.py.", item_id="msg_2")],
        ]
    )
    agent = Agent(name="helper", instructions="Be brief.", model=model, tools=[read_file])
    ticks = iter(range(1_760_000_000, 1_760_000_100))
    set_tracing_disabled(True)  # the SDK would otherwise try to export traces

    async def run(folder: str) -> list[dict[str, Any]]:
        with SessionManager.create("/work/demo", folder, dialect=OMP_18_2) as manager:
            session = OmpSession(manager, model="gpt-5", clock=lambda: float(next(ticks)))
            assert isinstance(session, Session)  # the SDK's protocol, met structurally
            await Runner.run(agent, "What is in a.py?", session=session)
            await Runner.run(agent, "What did I ask?", session=session)
            path = str(manager.get_session_file())
        with SessionManager.open(path, read_only=True, dialect=OMP_18_2) as reopened:
            return list(reopened.build_session_context().messages)

    with tempfile.TemporaryDirectory() as folder:
        return asyncio.run(run(folder))


def conformance() -> dict[str, list[dict[str, Any]]]:
    cases: dict[str, list[dict[str, Any]]] = {}
    seen: set[str] = set()
    for corpus in ("conformance", "conformance-omp18", "conformance-omp183"):
        for path in sorted((FIXTURES / corpus / "load").glob("*.expected.json")):
            data = json.loads(path.read_text(encoding="utf-8"))
            context = data.get("context")
            messages = context.get("messages") if isinstance(context, dict) else None
            if not messages:
                continue
            key = json.dumps(messages, sort_keys=True)
            if key in seen:
                continue
            seen.add(key)
            cases[f"{corpus}-{path.name.removesuffix('.expected.json')}"] = messages
    return cases


def main() -> int:
    out: list[dict[str, Any]] = []
    for name, messages in {**conformance(), **generated(), **native_history()}.items():
        with_tools = name.startswith("gen-") and "tool" in name
        out.append(
            {
                "name": name,
                "systemPrompt": SYSTEM,
                "tools": TOOLS if with_tools else None,
                "messages": convert_to_llm(messages),
            }
        )
    (HERE / "cases.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(out)} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
