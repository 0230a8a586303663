"""Small fixture stores for the importer tests: real files staged as each agent writes them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from omp_session.importers.base import ConvertedSession, ForeignSessionInfo
from omp_session.importers.stores import make_store
from tests.importers import corpus


def convert_case(tmp_path: Path, source: str, case: str, *, lossless: bool = True) -> ConvertedSession:
    staged, _ = corpus.stage(source, case, tmp_path)
    store = make_store(source, env={"HOME": str(tmp_path)})
    return store.convert(store.info_for(str(staged)), lossless=lossless)


def by_id(converted: ConvertedSession) -> dict[str, dict[str, Any]]:
    return {e["id"]: e for e in converted.entries}


def path_ids(converted: ConvertedSession) -> list[str]:
    """Ids from the root to the leaf."""
    entries = by_id(converted)
    out: list[str] = []
    cursor = converted.leaf_id
    while cursor is not None:
        out.append(cursor)
        cursor = entries[cursor].get("parentId")
    return out[::-1]


def write_pi_session(home: Path, cwd: str = "/home/carol/notes") -> Path:
    """A pi session (pi-mono v3): model_change with provider/modelId, session_info names, a branch."""
    directory = home / ".pi" / "agent" / "sessions" / f"--{cwd.strip('/').replace('/', '-')}--"
    directory.mkdir(parents=True)
    usage = {
        "input": 5,
        "output": 7,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 12,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }
    lines: list[dict[str, Any]] = [
        {
            "type": "session",
            "version": 3,
            "id": "3f1c2a9e-5b7d-4c1e-9a2b-0d4e6f8a1b2c",
            "timestamp": "2025-11-01T09:00:00.000Z",
            "cwd": cwd,
        },
        {
            "type": "model_change",
            "id": "a1000001",
            "parentId": None,
            "timestamp": "2025-11-01T09:00:01.000Z",
            "provider": "anthropic",
            "modelId": "claude-sonnet-4-5",
        },
        {
            "type": "message",
            "id": "a1000002",
            "parentId": "a1000001",
            "timestamp": "2025-11-01T09:00:02.000Z",
            "message": {"role": "user", "content": "Summarise my notes", "timestamp": 1761987602000},
        },
        {
            "type": "message",
            "id": "a1000003",
            "parentId": "a1000002",
            "timestamp": "2025-11-01T09:00:03.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "Your notes are about gardening."}],
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": usage,
                "stopReason": "stop",
                "timestamp": 1761987603000,
            },
        },
        {
            "type": "session_info",
            "id": "a1000004",
            "parentId": "a1000003",
            "timestamp": "2025-11-01T09:00:04.000Z",
            "name": "Garden notes",
        },
        {
            "type": "message",
            "id": "a1000005",
            "parentId": "a1000002",
            "timestamp": "2025-11-01T09:00:05.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "A second answer."}],
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": usage,
                "stopReason": "stop",
                "timestamp": 1761987605000,
            },
        },
        {
            "type": "future_kind",
            "id": "a1000006",
            "parentId": "a1000005",
            "timestamp": "2025-11-01T09:00:06.000Z",
            "whatever": [1, 2],
        },
    ]
    path = directory / "2025-11-01T09-00-00-000Z_3f1c2a9e-5b7d-4c1e-9a2b-0d4e6f8a1b2c.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def stage_all(home: Path) -> dict[str, list[ForeignSessionInfo]]:
    """A home with stores of all three agents: a few corpus cases each, and one pi session."""
    for case in ("plain_chat", "tool_roundtrip", "titles_custom_wins"):
        corpus.stage("claude", case, home)
    for case in ("basic_chat", "thread_name_and_index"):
        corpus.stage("codex", case, home)
    write_pi_session(home)
    env = {"HOME": str(home)}
    return {source: make_store(source, env=env).list() for source in ("claude", "codex", "pi")}
