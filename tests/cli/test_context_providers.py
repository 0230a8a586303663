"""``omp-session context --llm --format``: the request body omp sends, from a session file."""

from __future__ import annotations

import json
from pathlib import Path

from omp_session import SessionManager
from omp_session.providers import request_body, request_json
from omp_session.tools.reading import session_context

from .conftest import Store, run


def test_format_prints_the_request_body_of_the_session(store: Store) -> None:
    path = store.add("custom-roles")
    for format_name in ("anthropic", "openai-responses", "openai-chat", "google"):
        result = run("context", str(path), "--llm", "--format", format_name)
        assert result.exit_code == 0, result.output
        expected = request_body(format_name, session_context(path))
        assert json.loads(result.stdout) == json.loads(request_json(expected))
    anthropic = json.loads(run("context", str(path), "--llm", "--format", "anthropic").stdout)
    assert anthropic["model"] == "claude-sonnet-4-5" and anthropic["stream"] is True
    assert anthropic["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}


def test_model_and_recorded_system_prompt(tmp_path: Path) -> None:
    with SessionManager.create("/work/demo", tmp_path) as session:
        session.append_session_init("You review code.", "review", ["read"])
        session.append_message({"role": "user", "content": "Look at a.py", "timestamp": 1})
        # omp writes the file once the first assistant message exists.
        session.append_message(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "It is fine."}],
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2},
                "stopReason": "stop",
                "timestamp": 2,
            }
        )
        path = Path(session.get_session_file() or "")
    result = run("context", str(path), "--llm", "--format", "openai-responses", "--model", "gpt-5-mini")
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["model"] == "gpt-5-mini"
    assert body["input"][0] == {"role": "developer", "content": "You review code."}
    # The earlier Claude turn is another model's: its text is replayed without signatures or ids.
    assert body["input"][-1]["content"][0]["text"] == "It is fine."
    google = json.loads(run("context", str(path), "--llm", "--format", "google").stdout)
    assert google["systemInstruction"] == {"parts": [{"text": "You review code."}]}


def test_format_needs_llm_and_model_needs_format(store: Store) -> None:
    path = store.add("custom-roles")
    without_llm = run("context", str(path), "--format", "anthropic")
    assert without_llm.exit_code == 2 and "--format and --model need --llm" in without_llm.output
    without_format = run("context", str(path), "--llm", "--model", "gpt-5")
    assert without_format.exit_code == 2 and "--model needs --format" in without_format.output
    unknown = run("context", str(path), "--llm", "--format", "bedrock")
    assert unknown.exit_code == 2
