from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated_agent_dir(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """Every test gets its own agent dir (sessions root, blob store): no test touches ~/.omp."""
    agent = tmp_path_factory.mktemp("agent")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    for terminal in ("KITTY_WINDOW_ID", "TMUX_PANE", "TERM_SESSION_ID", "WT_SESSION"):
        monkeypatch.delenv(terminal, raising=False)  # no terminal breadcrumbs unless a test sets one
    yield agent


@pytest.fixture
def sandbox_home(tmp_path: Path, isolated_agent_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh HOME whose ``.omp/agent`` is the agent dir, as the reference harness ran omp."""
    home = tmp_path / "home"
    (home / ".omp" / "agent").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(home / ".omp" / "agent"))
    return home
