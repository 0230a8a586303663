"""The importer corpus (tests/importers/fixtures, produced by omp 18.2.3's own importers).

``lossless=False`` must reproduce omp exactly, persisted file included; the default lossless
import must agree on the common part (fixtures README) and keep every record omp drops.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from omp_session.importers import codex_convert
from tests.importers import corpus, projection

CASES = [("claude", c) for c in corpus.cases("claude")] + [("codex", c) for c in corpus.cases("codex")]
IDS = [f"{s}/{c}" for s, c in CASES]


def _run(tmp_path: Path, source: str, case: str, *, lossless: bool) -> tuple[dict[str, Any], Any]:
    home, persist_dir = tmp_path / "home", tmp_path / "dir"
    home.mkdir()
    persist_dir.mkdir()
    raw, texts, converted = corpus.raw_result(source, case, home, persist_dir, lossless=lossless)
    return corpus.normalize(raw, texts), converted


def test_corpus_has_every_case() -> None:
    assert len(corpus.cases("claude")) == 19
    assert len(corpus.cases("codex")) == 13


@pytest.mark.parametrize(("source", "case"), CASES, ids=IDS)
def test_omp_mode_is_identical_to_omp(tmp_path: Path, source: str, case: str) -> None:
    got, _ = _run(tmp_path, source, case, lossless=False)
    want = corpus.expected(source, case)["expected"]
    assert set(got) == set(want)
    for key in want:
        assert got[key] == want[key], key


def _uuid_lines(source: str, case: str) -> dict[str, int]:
    from omp_session.importers.jsonl import iter_records

    lines: dict[str, int] = {}
    for line, record in iter_records(corpus.FIXTURES / source / f"{case}.jsonl"):
        if isinstance(record.get("uuid"), str):
            lines.setdefault(record["uuid"], line)
    return lines


@pytest.mark.parametrize(("source", "case"), CASES, ids=IDS)
def test_lossless_agrees_with_omp_on_the_common_part(tmp_path: Path, source: str, case: str) -> None:
    got, converted = _run(tmp_path, source, case, lossless=True)
    want = corpus.expected(source, case)["expected"]
    name = f"{source}/{case}"
    for key in (
        "listed",
        "staged_path",
        "list",
        "info",
        "load_error",
        "header",
        "cwd",
        "sessionName",
        "titleSource",
    ):
        assert got.get(key) == want.get(key), key
    if "entries" in want:
        problems = projection.compare_entries(
            name, got["entries"], want["entries"], _uuid_lines(source, case)
        )
        assert problems == []
        declared = set(projection.DEVIATIONS.get(name, {}))
        assert declared <= set(converted.deviations)
        if name not in projection.CONTEXT_CHANGES:
            messages = [
                projection.undo_field_deviations(m, w)
                for m, w in zip(got["context"]["messages"], want["context"]["messages"], strict=True)
            ]
            context = {**got["context"], "messages": messages}
            if converted.deviations.get(codex_convert.THINKING_LEVEL):
                # the effort's thinking level (checked in test_deviations); omp's context has none
                for key in ("thinkingLevel", "configuredThinkingLevel"):
                    context.pop(key, None)
                    if key in want["context"]:
                        context[key] = want["context"][key]
            assert context == want["context"]
        if name not in projection.USAGE_CHANGES and not converted.deviations.get("codex.token_usage"):
            assert got["usage"] == want["usage"]
    gp, wp = got["persisted"], want["persisted"]
    if "error" in wp:
        assert gp == wp
        return
    for key in ("cwd", "sessionName", "titleSource", "header", "sessionId"):
        assert gp[key] == wp[key], key
    assert gp["file_lines_raw"][:2] == wp["file_lines_raw"][:2]  # the title slot and the header

    def import_data(lines: list[dict[str, Any]]) -> list[Any]:
        # ``resume`` (ours: where an update continues reading, claude_resume) is projected away
        data = [e["data"] for e in lines if e.get("customType") == "foreign_session_import"]
        return [{k: v for k, v in d.items() if k != "resume"} for d in data]

    assert import_data(gp["file_lines"]) == import_data(wp["file_lines"])


@pytest.mark.parametrize(("source", "case"), CASES, ids=IDS)
def test_lossless_keeps_every_readable_record(tmp_path: Path, source: str, case: str) -> None:
    """Each readable input line is an entry's source, a kept record, or inside a compaction."""
    from omp_session.importers.jsonl import iter_records

    _, converted = _run(tmp_path, source, case, lossless=True)
    if converted is None:
        return  # omp's load error, compared above
    readable = {line for line, _ in iter_records(corpus.FIXTURES / source / f"{case}.jsonl")}
    kept: set[int] = set()
    for entry in converted.entries:
        for record in entry.get("sourceRecords", []):
            kept.add(record["line"])
        data = entry.get("data")
        if entry.get("type") == "custom" and isinstance(data, dict) and "line" in data:
            kept.add(data["line"])
        details = entry.get("details")
        if entry.get("type") == "compaction" and isinstance(details, dict):
            kept.update(part["line"] for key, part in details.items() if key in ("boundary", "summary"))
    assert readable - kept == set()


def test_the_shared_normaliser_finds_the_store_corpus_one() -> None:
    # The shared importer normaliser loads ../conformance-omp18/normalize.py next to itself: a link
    # to the omp 18 store corpus, not a copy that could drift.
    tests = Path(__file__).resolve().parents[1]
    link = tests / "importers" / "conformance-omp18"
    assert link.is_symlink() and link.resolve() == tests / "conformance_omp18"
