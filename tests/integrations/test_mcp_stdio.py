"""``omp-session mcp`` over a real stdio subprocess, driven by the ``mcp`` client library."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

CORPUS = Path(__file__).resolve().parents[1] / "conformance" / "load"
TOOLS = {
    "list_sessions",
    "search_sessions",
    "session_overview",
    "get_messages",
    "context_at",
    "usage_summary",
}


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "sessions"
    project = root / "-src-app"
    project.mkdir(parents=True)
    cases = {
        "v3-branch-summaries": None,
        "custom-roles": "c0ffee00c0ffee01",
        "usage-model-switches": "c0ffee00c0ffee02",
        "omp-large-real": "c0ffee00c0ffee03",
    }
    for case, session_id in cases.items():
        data = (CORPUS / f"{case}.jsonl").read_bytes()
        if session_id is not None:  # the corpus reuses one id; each copy gets its own
            first, _, rest = data.partition(b"\n")
            header = json.loads(first)
            header["id"] = session_id
            data = json.dumps(header, separators=(",", ":")).encode() + b"\n" + rest
        (project / f"{case}.jsonl").write_bytes(data)
    old = time.time() - 3600
    for path in project.iterdir():
        os.utime(path, (old, old))
    return root


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {os.fspath(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))}


def _run(root: Path, body: Callable[[Client], Awaitable[None]]) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "omp_session", "--dir", os.fspath(root), "mcp", "--active-seconds", "600"],
        env={**os.environ, "PI_CODING_AGENT_DIR": os.fspath(root.parent / "agent")},
    )

    async def main() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            await body(client)

    asyncio.run(main())


async def _call(client: Client, tool: str, **arguments: Any) -> Any:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    text = result.content[0].text  # type: ignore[union-attr]
    assert json.loads(text) == result.structured_content
    return result.structured_content


def test_every_tool_over_stdio_and_nothing_is_written(tmp_path: Path) -> None:
    root = _root(tmp_path)
    before = _snapshot(root)

    async def body(client: Client) -> None:
        tools = await client.list_tools()
        assert {tool.name for tool in tools.tools} == TOOLS
        assert all(tool.annotations is not None and tool.annotations.read_only_hint for tool in tools.tools)

        first = await _call(client, "list_sessions", limit=3)
        assert len(first["sessions"]) == 3 and first["nextCursor"] == "3"
        rest = await _call(client, "list_sessions", limit=3, cursor=first["nextCursor"])
        assert len(rest["sessions"]) == 1 and rest["nextCursor"] is None
        ids = {s["id"] for s in first["sessions"] + rest["sessions"]}
        assert "15d0c6a0e2b44001" in ids

        hits = await _call(client, "search_sessions", query="merge sort")
        assert hits["hits"] and all("merge sort" in h["snippet"].lower() for h in hits["hits"])
        assert {h["entry_id"] for h in hits["hits"]} >= {"u0000003"}

        overview = await _call(client, "session_overview", session="15d0c6a0")
        assert overview["id"] == "15d0c6a0e2b44001" and overview["branchCount"] >= 2
        assert overview["models"] and overview["total"]["cost"] > 0

        # An entry on an abandoned branch: its own branch, not the current one.
        around = await _call(client, "get_messages", session="15d0c6a0", entry="u0000002", before=1, after=1)
        assert [e["id"] for e in around["entries"]] == ["a0000001", "u0000002", "a0000002"]
        assert around["onCurrentBranch"] is False and around["hasMoreBefore"] is True
        assert around["entries"][1]["text"] == "Make it a bubble sort"

        context = await _call(client, "context_at", session="15d0c6a0", entry="a0000002")
        texts = [
            m["content"] if isinstance(m["content"], str) else m["content"][0].get("text")
            for m in context["messages"]
        ]
        assert (
            texts[-2:] == ["Make it a bubble sort", "Bubble sort implemented."]
            or "Make it a bubble sort" in texts
        )
        assert context["messageCount"] == len(context["messages"]) and context["nextOffset"] is None
        paged = await _call(client, "context_at", session="15d0c6a0", entry="a0000002", limit=1, max_chars=5)
        assert len(paged["messages"]) == 1 and paged["nextOffset"] == 1

        usage = await _call(client, "usage_summary", view="model")
        assert usage["rows"] and usage["total"]["cost"] > 0

        bad = await client.call_tool("session_overview", {"session": "no-such-session"})
        assert bad.is_error and "no-such-session" in bad.content[0].text  # type: ignore[union-attr]
        for limit in (0, -1):
            paging = await client.call_tool("list_sessions", {"limit": limit})
            assert paging.is_error and "limit must be at least 1" in paging.content[0].text  # type: ignore[union-attr]
        cursor = await client.call_tool("list_sessions", {"cursor": "x"})
        assert cursor.is_error and "invalid cursor" in cursor.content[0].text  # type: ignore[union-attr]

    _run(root, body)
    assert _snapshot(root) == before


def test_sessions_still_being_written_can_be_excluded(tmp_path: Path) -> None:
    root = _root(tmp_path)
    fresh = root / "-src-app" / "v3-branch-summaries.jsonl"
    os.utime(fresh, None)  # just written

    async def body(client: Client) -> None:
        every = await _call(client, "list_sessions")
        settled = await _call(client, "list_sessions", exclude_active=True)
        assert len(every["sessions"]) == 4 and len(settled["sessions"]) == 3
        assert "15d0c6a0e2b44001" not in {s["id"] for s in settled["sessions"]}
        hits = await _call(client, "search_sessions", query="merge sort", exclude_active=True)
        assert all(h["session_id"] != "15d0c6a0e2b44001" for h in hits["hits"])

    _run(root, body)
