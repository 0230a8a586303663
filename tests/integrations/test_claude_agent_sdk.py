"""``OmpClaudeSessionStore`` against the Claude Agent SDK's own conformance suite (all 14 contracts,
the optional ones included), over files and over a real PostgreSQL, and its omp mirror."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
from claude_agent_sdk.testing import run_session_store_conformance
from claude_agent_sdk.types import SessionStore

from omp_session import SessionManager
from omp_session.importers import ClaudeSessionStore
from omp_session.importers.persist import import_session
from omp_session.integrations.claude_agent_sdk import OmpClaudeSessionStore
from tests.pg_server import ThrowawayServer, throwaway_server

FIXTURES = Path(__file__).resolve().parents[1] / "importers" / "fixtures" / "claude"


@pytest.fixture(scope="module")
def postgres() -> Iterator[ThrowawayServer]:
    with throwaway_server() as server:
        yield server


def test_conformance_over_files(tmp_path: Path) -> None:
    def make() -> SessionStore:
        base = tmp_path / uuid.uuid4().hex
        return cast(SessionStore, OmpClaudeSessionStore(base / "claude", base / "sessions"))

    asyncio.run(run_session_store_conformance(make))


def test_conformance_over_postgresql(tmp_path: Path, postgres: ThrowawayServer) -> None:
    def make() -> SessionStore:
        base = tmp_path / uuid.uuid4().hex
        prefix = f"claude_{uuid.uuid4().hex[:12]}"
        store = OmpClaudeSessionStore(
            base / "claude", base / "sessions", postgres=postgres.dsn, table_prefix=prefix
        )
        return cast(SessionStore, store)

    asyncio.run(run_session_store_conformance(make))


@pytest.mark.parametrize("backend", ["files", "postgresql"])
def test_each_append_keeps_an_omp_mirror_equal_to_a_whole_import(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    dsn = request.getfixturevalue("postgres").dsn if backend == "postgresql" else None
    store = OmpClaudeSessionStore(
        tmp_path / "claude", tmp_path / "sessions", postgres=dsn, table_prefix="mirror"
    )
    source = FIXTURES / "tool_roundtrip.jsonl"
    lines = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    key = {"project_key": "-work-app", "session_id": "3f1c2d4e-0000-4000-8000-000000000001"}

    async def feed() -> None:
        for start in range(0, len(lines), 3):  # the SDK mirrors in small batches
            await store.append(key, lines[start : start + 3])
        await store.append(key, lines[:2])  # a retried batch: already stored, by uuid
        assert await store.load(key) == lines

    asyncio.run(feed())
    mirror = store.mirror_path(key)
    assert mirror is not None and mirror.is_file()
    # One whole import of the same transcript, elsewhere: the incremental mirror must equal it.
    whole_root = tmp_path / "whole"
    claude = ClaudeSessionStore(tmp_path / "claude", env={})
    whole = import_session(
        claude,
        claude.info_for(str(tmp_path / "claude/projects/-work-app" / f"{key['session_id']}.jsonl")),
        root=whole_root,
    )
    assert whole.path is not None
    with (
        SessionManager.open(mirror, read_only=True) as incremental,
        SessionManager.open(whole.path, read_only=True) as once,
    ):
        assert incremental.build_session_context().to_dict() == once.build_session_context().to_dict()

        # The same entries, except the importer's one marker per update (``foreign_session_import``).
        def kept(session: SessionManager) -> list[object]:
            return [
                (e.get("type"), e.get("message"))
                for e in session.get_entries()
                if e.get("customType") != "foreign_session_import"
            ]

        assert kept(incremental) == kept(once)
        assert any(e.get("type") == "message" for e in incremental.get_entries())
