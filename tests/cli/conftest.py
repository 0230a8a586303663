"""Fixtures for the command-line tests: a sessions store built from the conformance corpus."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from omp_session.cli import main

CORPUS = Path(__file__).resolve().parents[1] / "conformance"
SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
PROJECT = "-src-app"


@pytest.fixture(autouse=True)
def plain_terminal(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fixed width, no colours: rich output must not depend on the machine running the tests."""
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("NO_COLOR", "1")
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "OMP_SESSION_DIR", "OMP_SESSION_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    yield


class Store:
    """A sessions root under the test's own ``$PI_CODING_AGENT_DIR``."""

    def __init__(self, agent: Path) -> None:
        self.root = agent / "sessions"
        self.root.mkdir(parents=True, exist_ok=True)

    def add(
        self,
        case: str,
        *,
        project: str = PROJECT,
        session_id: str | None = None,
        name: str | None = None,
        kind: str = "load",
    ) -> Path:
        """Copy ``tests/conformance/<kind>/<case>.jsonl``, optionally under a new session id."""
        data = (CORPUS / kind / f"{case}.jsonl").read_bytes()
        if session_id is not None:
            first, _, rest = data.partition(b"\n")
            header = json.loads(first)
            header["id"] = session_id
            data = json.dumps(header, separators=(",", ":")).encode() + b"\n" + rest
        directory = self.root / project
        directory.mkdir(parents=True, exist_ok=True)
        target = directory / (name or f"{case}.jsonl")
        target.write_bytes(data)
        return target

    def display(self, text: str) -> str:
        """``text`` with the store's absolute path replaced by ``<root>`` (for snapshots)."""
        return text.replace(os.fspath(self.root), "<root>")


@pytest.fixture
def store(isolated_agent_dir: Path) -> Store:
    return Store(isolated_agent_dir)


def run(*args: str, input: str | None = None) -> Result:
    """Invoke ``omp-session`` in-process; exceptions are caught as click does in a real run."""
    return CliRunner().invoke(main, list(args), input=input)


def assert_snapshot(name: str, text: str) -> None:
    """``text`` must equal ``tests/cli/snapshots/<name>`` exactly (UPDATE_SNAPSHOTS=1 rewrites it)."""
    path = SNAPSHOTS / name
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"missing snapshot {path}; run with UPDATE_SNAPSHOTS=1 and review it"
    assert text == path.read_text(encoding="utf-8")


def assert_one_line_error(result: Result, *needles: str) -> None:
    """Exit status 2, nothing on stdout, one ``omp-session: error:`` line on stderr naming ``needles``."""
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("omp-session: error: ")
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in lines[0]
