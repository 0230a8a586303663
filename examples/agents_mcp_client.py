"""Ask ``omp-session mcp`` (a real stdio subprocess) about past sessions with the ``mcp`` client.

Run with ``python examples/agents_mcp_client.py`` (extra ``[mcp]``).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from agents_common import write_demo_session
from mcp import Client
from mcp.client.stdio import StdioServerParameters


async def ask(root: Path) -> None:
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "omp_session", "--dir", str(root), "mcp"]
    )
    async with Client(server) as client:
        listed = await client.call_tool("list_sessions", {"limit": 5})
        session = listed.structured_content["sessions"][0]["id"]
        print("sessions:", len(listed.structured_content["sessions"]))
        hits = await client.call_tool("search_sessions", {"query": "hello"})
        entry = hits.structured_content["hits"][0]["entry_id"]
        context = await client.call_tool("context_at", {"session": session, "entry": entry})
        roles = [m["role"] for m in context.structured_content["messages"]]
        print("context at the hit:", roles)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "sessions"
        write_demo_session(root / "-work-app")
        asyncio.run(ask(root))


if __name__ == "__main__":
    main()
