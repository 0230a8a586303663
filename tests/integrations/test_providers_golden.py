"""The request bodies of ``omp_session.providers`` against bodies recorded from omp's pi-ai.

``providers_golden/cases.json`` holds the contexts (conformance sessions and generated ones);
``providers_golden/golden/<target>.json`` the raw HTTP bodies pi-ai 18.2.3 sent for each, captured by
``providers_golden/record.ts`` on a local endpoint, and ``golden/targets.json`` the catalog facts of
each target model (README there says how to re-record). Equality is on the bytes.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from omp_session.providers import FORMATS, ModelTarget, request_body, request_json

HERE = Path(__file__).resolve().parent / "providers_golden"
CASES: list[dict[str, Any]] = json.loads((HERE / "cases.json").read_text(encoding="utf-8"))
TARGETS: dict[str, dict[str, Any]] = json.loads(
    (HERE / "golden" / "targets.json").read_text(encoding="utf-8")
)
GOLDEN = {
    label: json.loads((HERE / "golden" / f"{label}.json").read_text(encoding="utf-8")) for label in TARGETS
}


def _target(label: str) -> ModelTarget:
    facts = TARGETS[label]
    default = ModelTarget.for_api(facts["api"], facts["id"], facts["provider"])
    return replace(
        default, max_tokens=facts["maxTokens"], reasoning=facts["reasoning"], images=facts["images"]
    )


def test_every_case_was_recorded_for_every_format() -> None:
    names = [case["name"] for case in CASES]
    assert len(names) == len(set(names)) >= 100
    assert {facts["format"] for facts in TARGETS.values()} == set(FORMATS)
    for label in TARGETS:
        assert sorted(GOLDEN[label]) == sorted(names)


@pytest.mark.parametrize("label", sorted(TARGETS))
@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_body_is_byte_equal_to_omp(label: str, case: dict[str, Any]) -> None:
    body = request_body(
        TARGETS[label]["format"],
        case["messages"],
        model=_target(label),
        system_prompt=case["systemPrompt"],
        tools=case["tools"],
    )
    assert request_json(body).decode("utf-8") == GOLDEN[label][case["name"]]
