"""The Claude Agent SDK's session store kept as omp sessions (extra ``[claude-agent-sdk]``).

The SDK calls ``append`` with batches of transcript lines; here two batches are fed by hand.
Run with ``python examples/agents_claude_store.py``.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from omp_session import SessionManager
from omp_session.integrations.claude_agent_sdk import OmpClaudeSessionStore

KEY = {"project_key": "-work-app", "session_id": "3f1c2d4e-0000-4000-8000-00000000abcd"}
LINES: list[dict[str, Any]] = [
    {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": KEY["session_id"],
        "cwd": "/work/app",
        "timestamp": "2026-01-01T10:00:00.000Z",
        "message": {"role": "user", "content": "Say hi"},
    },
    {
        "type": "assistant",
        "uuid": "a1",
        "parentUuid": "u1",
        "sessionId": KEY["session_id"],
        "cwd": "/work/app",
        "timestamp": "2026-01-01T10:00:01.000Z",
        "message": {
            "id": "msg_1",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "Hi!"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "output_tokens": 2},
        },
    },
]


async def run(base: Path) -> None:
    store = OmpClaudeSessionStore(base / "claude", base / "sessions")
    await store.append(KEY, LINES[:1])
    await store.append(KEY, LINES[1:])
    print("loaded lines:", len(await store.load(KEY) or []))
    mirror = store.mirror_path(KEY)
    assert mirror is not None
    with SessionManager.open(mirror, read_only=True) as session:
        print("omp mirror:", [m["role"] for m in session.build_session_context().messages])


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(run(Path(tmp)))


if __name__ == "__main__":
    main()
