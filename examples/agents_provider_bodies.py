"""The request body omp would send to each provider for a session (omp_session.providers).

Run with ``python examples/agents_provider_bodies.py``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from agents_common import write_demo_session

from omp_session import SessionManager
from omp_session.providers import request_json, to_anthropic_messages, to_google_contents, to_openai_responses


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = write_demo_session(Path(tmp))
        with SessionManager.open(path, read_only=True) as session:
            context = session.build_session_context()
        anthropic = to_anthropic_messages(context, system_prompt="You are a coding agent.")
        # Same model: the thinking block replays with its signature; the last message is cached.
        print("anthropic:", anthropic["messages"][1]["content"][0]["type"], anthropic["messages"][-1]["role"])
        openai = to_openai_responses(context)
        # Another provider: thinking becomes text, the Claude tool id gets an OpenAI item id.
        print("openai:", [item.get("type", item.get("role")) for item in openai["input"]])
        google = to_google_contents(context)
        print("google:", [content["role"] for content in google["contents"]])
        print("bytes:", len(request_json(anthropic)))


if __name__ == "__main__":
    main()
