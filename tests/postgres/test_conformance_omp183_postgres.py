"""The omp 18.3.4 conformance corpus with every session stored as a row of a real PostgreSQL (the
store every factory and listing is given): ``assistantTurns`` with its full-scan fallback through the
store (``PostgresStorage.has_assistant_turn``), the picker lists and ``continue_recent`` skipping
empty sessions read rows, not files.
(the pins file ``session-pins.json`` stays a file). Left out: ``drop-session-baks``, which is
about ``.bak`` files beside a session file (their clean-up by ``drop_session`` and their promotion
by ``list``), which a database row does not have."""

from __future__ import annotations

from pathlib import Path

import pytest

from omp_session.store.postgres import PostgresStorage
from tests.test_conformance_omp183 import LOAD_CASES, OPS_CASES, check_load_case, check_ops_case

#: Cases about files next to a session (``.bak`` backups), which a database does not keep.
FILE_ONLY = {"drop-session-baks"}


@pytest.mark.parametrize("case", LOAD_CASES)
def test_omp183_load_case_on_postgres(
    case: str,
    pg_store: PostgresStorage,
    tmp_path: Path,
    isolated_agent_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    check_load_case(case, tmp_path, isolated_agent_dir, pg_store)
    assert not list(tmp_path.rglob("*.jsonl"))


@pytest.mark.parametrize("case", sorted(set(OPS_CASES) - FILE_ONLY))
def test_omp183_ops_case_on_postgres(
    case: str,
    pg_store: PostgresStorage,
    tmp_path: Path,
    sandbox_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    directory = tmp_path / "D"
    directory.mkdir()
    monkeypatch.chdir(directory)
    check_ops_case(case, directory, sandbox_home, pg_store)
    assert not list(tmp_path.rglob("*.jsonl"))
