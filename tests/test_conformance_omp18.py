"""The conformance corpus produced by the real omp 18.2.3, run under the omp 18 dialect: every
case must pass, except where the corpus names an upstream defect (then what it requires)."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from omp_session import SessionManager
from omp_session.store import SessionStorage
from tests.conformance_omp18_harness import run_load_case, run_ops_case
from tests.store.read_paths import file_stores

CORPUS = Path(__file__).parent / "conformance_omp18"
_spec = importlib.util.spec_from_file_location("normalize_omp18", CORPUS / "normalize.py")
assert _spec is not None and _spec.loader is not None
normalize = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(normalize)

#: omp 18.2.3 throws on this valid 13.19 file; the corpus note says what we must do instead,
#: which test_unknown_types_open_where_omp18_throws checks.
THROWS_UPSTREAM = "legacy-1319-unknown-type-and-fields"
LOAD_CASES = sorted(
    p.name.removesuffix(".jsonl") for p in (CORPUS / "load").glob("*.jsonl") if p.stem != THROWS_UPSTREAM
)
OPS_CASES = sorted(
    p.name.removesuffix(".json")
    for p in (CORPUS / "ops").glob("*.json")
    if not p.name.endswith((".expected.json", ".required.json"))
)
METADATA = ("upstream_defect", "note", "required_after_append", "required_note")


def _expected(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _assert_same(got: dict[str, Any], expected: dict[str, Any]) -> None:
    for key in expected:
        if key in METADATA:
            continue
        assert got.get(key) == expected[key], f"mismatch in {key!r}"


def check_load_case(case: str, work: Path, agent_dir: Path, storage: SessionStorage | None = None) -> None:
    """Run load case ``case`` (on a file, else on a row of ``storage``) and compare it with its
    expected file."""
    case_file = CORPUS / "load" / f"{case}.jsonl"
    raw = run_load_case(case_file, work, agent_dir, "18.2", storage)
    text = case_file.read_bytes().decode("utf-8", errors="surrogateescape")
    got = normalize.normalize_load(raw, text)
    expected = _expected(CORPUS / "load" / f"{case}.expected.json")
    if expected.get("upstream_defect"):
        # Upstream glues the probe onto a line without newline; the corpus states what we must do.
        expected = {**expected, "after_append": expected["required_after_append"]}
    _assert_same(got, expected)


@pytest.mark.parametrize("store", file_stores())
@pytest.mark.parametrize("case", LOAD_CASES)
def test_load_case(
    case: str,
    store: SessionStorage | None,
    tmp_path: Path,
    isolated_agent_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each case read by every strategy (tests/store/read_paths.py): ``auto``, then each fast one
    that can serve it (on a file no fast path models, the full parse that serves it)."""
    monkeypatch.chdir(tmp_path)
    check_load_case(case, tmp_path, isolated_agent_dir, store)


def test_unknown_types_open_where_omp18_throws(tmp_path: Path, isolated_agent_dir: Path) -> None:
    """Corpus note of ``legacy-1319-unknown-type-and-fields``: omp 18.2.3 throws (a ``model_usage``
    whose usage has no cost). Required: open succeeds, every entry kept losslessly, the file not
    changed by the load, a missing cost counted as 0 (tokens still counted), and the probe
    appended as for any valid v3 file."""
    expected = _expected(CORPUS / "load" / f"{THROWS_UPSTREAM}.expected.json")
    assert expected["upstream_defect"] and "usage.cost.total" in expected["load_error"]["__error__"]
    source = CORPUS / "load" / f"{THROWS_UPSTREAM}.jsonl"
    target = tmp_path / "input.jsonl"
    shutil.copyfile(source, target)
    before = target.read_bytes()
    lines = [json.loads(line) for line in before.decode("utf-8").splitlines()]
    with SessionManager.open(target, dialect="18.2") as session:
        assert session.get_header() == lines[0]
        assert session.get_entries() == lines[1:]
        usage = session.get_usage_statistics().to_dict()
        # the assistant (100/20, cost 0.003) plus the model_usage {"tokens": 5} without counts
        assert usage["cost"] == 0.003
        assert usage["orchestrationInput"] == 0 and usage["premiumRequests"] == 0
        assert usage["input"] is None  # omp 18 adds a missing count as NaN (JSON null)
        assert target.read_bytes() == before
        probe = session.append_message({"role": "user", "content": "probe", "timestamp": 1700000000000})
    after = target.read_bytes()
    assert after.startswith(before)  # a plain append: no slot, no rewrite
    appended = json.loads(after[len(before) :])
    assert appended["id"] == probe and appended["parentId"] == lines[-1]["id"]
    assert appended["message"]["content"] == "probe"


def check_ops_case(
    case: str, directory: Path, agent_dir: Path, storage: SessionStorage | None = None
) -> None:
    """Run ops case ``case`` in ``directory`` (of files, else of ``storage``) and compare it."""
    script = json.loads((CORPUS / "ops" / f"{case}.json").read_text(encoding="utf-8"))
    ops = script["ops"] if isinstance(script, dict) else script
    raw = run_ops_case(ops, directory, agent_dir, "18.2", storage=storage)
    got = normalize.normalize_ops(raw, ops)
    expected = _expected(CORPUS / "ops" / f"{case}.expected.json")
    _assert_same(got, expected)


@pytest.mark.parametrize("store", file_stores())
@pytest.mark.parametrize("case", OPS_CASES)
def test_ops_case(
    case: str,
    store: SessionStorage | None,
    tmp_path: Path,
    isolated_agent_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each case run on a store of every read strategy, as the load cases."""
    directory = tmp_path / "D"
    directory.mkdir()
    monkeypatch.chdir(directory)
    check_ops_case(case, directory, isolated_agent_dir, store)
