"""Sessions written through the bridges open in the viewer like any omp session, and load through
the omp 18.3 conformance harness as omp 18.3 would load them."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from omp_session import SessionManager
from omp_session.dialects import OMP_18_2
from omp_session.integrations.claude_agent_sdk import OmpClaudeSessionStore
from omp_session.integrations.openai_agents import OmpSession
from omp_session.integrations.pydantic_ai import append_model_messages, to_model_messages
from omp_session.web import create_app
from tests.conformance_omp18_harness import run_load_case

KEY = {"project_key": "-work-app", "session_id": "3f1c2d4e-0000-4000-8000-0000000000aa"}
CLAUDE_LINES: list[dict[str, Any]] = [
    {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": KEY["session_id"],
        "cwd": "/work/app",
        "timestamp": "2026-01-01T10:00:00.000Z",
        "message": {"role": "user", "content": "Claude question"},
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
            "content": [{"type": "text", "text": "Claude answer"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "output_tokens": 2},
        },
    },
]


def test_viewer_renders_each_bridged_session(
    tmp_path: Path, isolated_agent_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sessions"
    project = root / "-work-app"

    async def write() -> list[Path]:
        with SessionManager.create("/work/app", project, dialect=OMP_18_2) as manager:
            session = OmpSession(manager)
            await session.add_items(
                [
                    {"role": "user", "content": "Agents question"},
                    {
                        "type": "message",
                        "role": "assistant",
                        "id": "msg_x",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": "Agents answer", "annotations": []}],
                    },
                ]
            )
            agents = Path(manager.get_session_file() or "")
        store = OmpClaudeSessionStore(tmp_path / "claude", root)
        await store.append(KEY, CLAUDE_LINES)
        claude = store.mirror_path(KEY)
        assert claude is not None
        with SessionManager.open(agents, read_only=True) as source:
            messages = to_model_messages(source.build_session_context())
        with SessionManager.create("/work/app", project, dialect=OMP_18_2) as copy:
            append_model_messages(copy, messages)
            pydantic = Path(copy.get_session_file() or "")
        return [agents, claude, pydantic]

    agents, claude, pydantic = asyncio.run(write())
    client = TestClient(create_app(root, allowed_hosts=["testserver"]))
    for path, text in ((agents, "Agents answer"), (claude, "Claude answer"), (pydantic, "Agents answer")):
        ref = path.relative_to(root).as_posix()
        page = client.get(f"/session/{ref}")
        assert page.status_code == 200, (ref, page.status_code)
        assert text in page.text, ref
    index = client.get("/")
    assert index.status_code == 200 and "-work-app" in index.text

    # The same files through the omp 18.3 corpus harness (load, then the probe append), as the
    # conformance cases run: each opens, keeps its messages in the context and takes an append.
    monkeypatch.chdir(tmp_path)
    for number, (path, text) in zip(
        itertools.count(), ((agents, "Agents answer"), (claude, "Claude answer"), (pydantic, "Agents answer"))
    ):
        work = tmp_path / f"harness-{number}"
        work.mkdir()
        raw = run_load_case(path, work, isolated_agent_dir, "18.3")
        assert "load_error" not in raw, (path, raw.get("load_error"))
        assert not raw["file_changed_by_load"], path
        roles = [message["role"] for message in raw["context"]["messages"]]
        assert roles[:2] == ["user", "assistant"], (path, roles)
        assert text in str(raw["context"]["messages"]), path
        returns = raw["after_append"]["returns"]
        assert isinstance(returns[1], str) and "__error__" not in str(returns), (path, returns)
