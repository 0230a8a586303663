"""The port of omp 18.3.4's secret obfuscation matches omp's own output byte for byte.

The expected outputs were recorded by running omp's unmodified `src/secrets/` under Bun
(tests/golden/omp_secrets/harness.ts, README.md there)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from omp_session.format.bun_hash import bun_hash
from omp_session.tools.omp_obfuscator import OmpSecretObfuscator
from omp_session.tools.omp_secrets import SENSITIVE_TOKEN_SOURCE, build_omp_entries

GOLDEN = Path(__file__).parent.parent / "golden" / "omp_secrets"
CASES: list[dict[str, Any]] = json.loads((GOLDEN / "cases.json").read_text(encoding="utf-8"))
EXPECTED: dict[str, Any] = json.loads((GOLDEN / "expected.json").read_text(encoding="utf-8"))


def test_the_recording_is_of_the_same_cases_and_release() -> None:
    assert EXPECTED["omp"] == "18.3.4"
    assert [r["name"] for r in EXPECTED["results"]] == [c["name"] for c in CASES]
    assert EXPECTED["sensitive_token_re"] == SENSITIVE_TOKEN_SOURCE


@pytest.mark.parametrize("index", range(len(CASES)), ids=[c["name"] for c in CASES])
def test_obfuscation_matches_omp(index: int, tmp_path: Path) -> None:
    case = CASES[index]
    expected = EXPECTED["results"][index]
    agent_dir = tmp_path / "agent"
    cwd = tmp_path / "project"
    (cwd / ".omp").mkdir(parents=True)
    agent_dir.mkdir()
    if case["global_yml"] is not None:
        (agent_dir / "secrets.yml").write_text(case["global_yml"], encoding="utf-8")
    if case["project_yml"] is not None:
        (cwd / ".omp" / "secrets.yml").write_text(case["project_yml"], encoding="utf-8")
    warnings: list[str] = []
    obfuscator = OmpSecretObfuscator(build_omp_entries(cwd, agent_dir, case["env"], warnings), case["key"])
    outputs = [obfuscator.obfuscate(text) for text in case["texts"]]
    for text, got, want in zip(case["texts"], outputs, expected["outputs"], strict=True):
        assert got == want, f"input {text!r}"
    assert len(warnings) == len(expected["warnings"])


def test_golden_case_count() -> None:
    # Every text of every case is one golden comparison.
    assert sum(len(c["texts"]) for c in CASES) >= 130


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("", 290873116282709081),
        ("abcd", 5251164938674970899),
        ("0123456789abcdefg", 13012861896001323413),
        ("y" * 49, 16226373637292149739),
        ("😀 emoji", 13807576741355993854),
    ],
)
def test_bun_hash_is_buns_hash(text: str, value: int) -> None:
    # Values printed by `Bun.hash(text)` under Bun 1.4.5.
    assert bun_hash(text.encode()) == bun_hash(text) == value
