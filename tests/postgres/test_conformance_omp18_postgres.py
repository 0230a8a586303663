"""The omp 18.2.3 conformance corpus with every session stored as a row of a real PostgreSQL
(the store passed to every factory and listing, as ``--store`` passes it for the command line): the same
expected files, byte for byte, title slots included."""

from __future__ import annotations

from pathlib import Path

import pytest

from omp_session.store.postgres import PostgresStorage
from tests.test_conformance_omp18 import LOAD_CASES, OPS_CASES, check_load_case, check_ops_case


@pytest.mark.parametrize("case", LOAD_CASES)
def test_omp18_load_case_on_postgres(
    case: str,
    pg_store: PostgresStorage,
    tmp_path: Path,
    isolated_agent_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    check_load_case(case, tmp_path, isolated_agent_dir, pg_store)
    assert not list(tmp_path.rglob("*.jsonl"))  # every session lived in the database


@pytest.mark.parametrize("case", OPS_CASES)
def test_omp18_ops_case_on_postgres(
    case: str,
    pg_store: PostgresStorage,
    tmp_path: Path,
    isolated_agent_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    directory = tmp_path / "D"
    directory.mkdir()
    monkeypatch.chdir(directory)
    check_ops_case(case, directory, isolated_agent_dir, pg_store)
    assert not list(tmp_path.rglob("*.jsonl"))
