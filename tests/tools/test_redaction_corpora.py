"""The redaction engine over the conformance corpora and the bundled samples: how often it fires
where there is no secret (the false-positive rate, docs/sharing.md), and that a scrubbed corpus file
loads exactly as before apart from the replaced values."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from omp_session.format.codec import decode_line, encode_line
from omp_session.tools.redaction import Redactor, iter_strings
from omp_session.tools.session_redaction import plan_scrub, scan_file
from tests.conformance_omp18_harness import run_load_case

REPO = Path(__file__).resolve().parents[2]
CORPORA = [
    REPO / "tests" / "conformance",
    REPO / "tests" / "conformance_omp18",
    REPO / "tests" / "importers",
    REPO / "samples",
]
FILES = sorted(p for root in CORPORA for p in root.rglob("*.jsonl"))
OMP18_LOAD = sorted((REPO / "tests" / "conformance_omp18" / "load").glob("*.jsonl"))

_spec = importlib.util.spec_from_file_location(
    "normalize_omp18", REPO / "tests" / "conformance_omp18" / "normalize.py"
)
assert _spec is not None and _spec.loader is not None
normalize = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(normalize)


def test_false_positive_rate_on_the_corpora_and_samples() -> None:
    strings = 0
    findings = []
    for path in FILES:
        data = path.read_bytes()
        for line in data.split(b"\n"):
            try:
                value = decode_line(line)
            except ValueError:
                continue
            strings += sum(1 for _ in iter_strings(value))
        findings.extend(scan_file(path, Redactor(), data=data))
    assert len(FILES) >= 140 and strings >= 7000
    # None of these files holds a credential: every finding is a false positive.
    assert [f for f in findings if f.confidence != "low"] == []
    assert len(findings) <= strings // 1000, [(f.session, f.field, f.kind) for f in findings]


def test_every_corpus_file_scrubs_to_itself() -> None:
    for path in FILES:
        data = path.read_bytes()
        new, changed = plan_scrub(data, Redactor())
        assert changed == [] and new == data, path


TOKEN = "ghp_" + "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lz9Xc8V"


def _plant(data: bytes) -> bytes | None:
    """``data`` with a token appended to the first user message written as a string, only that
    line re-encoded; ``None`` when the file has no such message."""
    lines = data.split(b"\n")
    for index, line in enumerate(lines):
        try:
            value = decode_line(line)
        except ValueError:
            continue
        message = value.get("message") if isinstance(value, dict) else None
        if (
            isinstance(message, dict)
            and message.get("role") == "user"
            and isinstance(message.get("content"), str)
        ):
            message["content"] += f" token {TOKEN} end"
            lines[index] = encode_line(value)[:-1]
            return b"\n".join(lines)
    return None


PLANTABLE = [p for p in OMP18_LOAD if _plant(p.read_bytes()) is not None]


def _load(path: Path, work: Path, agent: Path) -> dict[str, Any]:
    work.mkdir()
    raw = run_load_case(path, work, agent)
    text = path.read_bytes().decode("utf-8", errors="surrogateescape")
    loaded: dict[str, Any] = normalize.normalize_load(raw, text)
    loaded.pop("after_append", None)  # the probe's own entry id and timestamps differ by design
    return loaded


@pytest.mark.parametrize("case", PLANTABLE, ids=[p.stem for p in PLANTABLE])
def test_a_scrubbed_corpus_file_loads_the_same_apart_from_the_value(
    case: Path, tmp_path: Path, isolated_agent_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = _plant(case.read_bytes())
    assert planted is not None
    original = tmp_path / "planted.jsonl"
    original.write_bytes(planted)
    scrubbed_bytes, changed = plan_scrub(planted, Redactor())
    assert len(changed) >= 1 and TOKEN.encode() not in scrubbed_bytes
    for number, (old, new) in enumerate(
        zip(planted.split(b"\n"), scrubbed_bytes.split(b"\n"), strict=True), 1
    ):
        assert (old == new) == (number not in changed)
    scrubbed = tmp_path / "scrubbed.jsonl"
    scrubbed.write_bytes(scrubbed_bytes)
    monkeypatch.chdir(tmp_path)
    before = _load(original, tmp_path / "a", isolated_agent_dir)
    after = _load(scrubbed, tmp_path / "b", isolated_agent_dir)
    expected = json.loads(json.dumps(before).replace(TOKEN, "[REDACTED:github-token#1]"))
    assert after == expected
