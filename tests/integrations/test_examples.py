"""Each example of docs/agents.md runs as a script and prints what it promises."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXPECTED = {
    "agents_provider_bodies.py": ["anthropic: thinking user", "google: ['user', 'model', 'user', 'model']"],
    "agents_mcp_client.py": ["sessions: 1", "context at the hit: ['user', 'assistant', 'toolResult']"],
    "agents_openai_session.py": [
        "You said hello.",
        "omp messages: ['user', 'assistant', 'user', 'assistant']",
    ],
    "agents_claude_store.py": ["loaded lines: 2", "omp mirror: ['user', 'assistant']"],
    "agents_pydantic_ai.py": ["I was sent 4 messages."],
}


@pytest.mark.parametrize("script", sorted(EXPECTED))
def test_example_runs(script: str, tmp_path: Path) -> None:
    env = {**os.environ, "PI_CODING_AGENT_DIR": os.fspath(tmp_path / "agent"), "HOME": os.fspath(tmp_path)}
    result = subprocess.run(
        [sys.executable, os.fspath(EXAMPLES / script)], capture_output=True, text=True, timeout=180, env=env
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for expected in EXPECTED[script]:
        assert expected in lines, result.stdout
