"""Shared by the agent examples: a small omp session written to a temporary directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omp_session import SessionManager

USAGE = {
    "input": 120,
    "output": 30,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 150,
    "cost": {"input": 0.00036, "output": 0.00045, "cacheRead": 0, "cacheWrite": 0, "total": 0.00081},
}


def claude_turn(content: list[dict[str, Any]], stop: str, timestamp: int) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": content,
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": USAGE,
        "stopReason": stop,
        "timestamp": timestamp,
    }


def write_demo_session(directory: Path) -> Path:
    """A session with thinking, a tool call and its result, written by "Claude"."""
    with SessionManager.create("/work/app", directory) as session:
        session.append_message(
            {"role": "user", "content": "What is in app.py?", "timestamp": 1_760_000_000_000}
        )
        session.append_message(
            claude_turn(
                [
                    {
                        "type": "thinking",
                        "thinking": "Read the file first.",
                        "thinkingSignature": "EqQBCkYsig==",
                    },
                    {"type": "toolCall", "id": "toolu_01", "name": "read", "arguments": {"path": "app.py"}},
                ],
                "toolUse",
                1_760_000_001_000,
            )
        )
        session.append_message(
            {
                "role": "toolResult",
                "toolCallId": "toolu_01",
                "toolName": "read",
                "content": [{"type": "text", "text": "print('hello')"}],
                "isError": False,
                "timestamp": 1_760_000_002_000,
            }
        )
        session.append_message(
            claude_turn([{"type": "text", "text": "It prints hello."}], "stop", 1_760_000_003_000)
        )
        return Path(session.get_session_file() or "")
