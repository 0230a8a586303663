"""Write ``cases.json``: the LLM contexts the golden request bodies are recorded for.

Two sources:
- every non-empty context of the three conformance corpora (``shared/fixtures/conformance*/load``),
  which omp itself built from real session files, passed through ``convert_to_llm``;
- generated contexts covering each content block, signature and replay encoding, aborted and
  errored turns, orphaned calls and results, duplicate ids and cross-provider switches.

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
    for name, messages in {**conformance(), **generated()}.items():
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
