"""The request bodies of ``omp_session.providers`` against bodies recorded from omp's pi-ai.

``providers_golden/cases.json`` holds the contexts (conformance sessions and generated ones);
``providers_golden/golden/<format>.json`` the raw HTTP bodies pi-ai 18.2.3 sent for each, captured by
``providers_golden/record.ts`` on a local endpoint (README there says how to re-record). Equality is
on the bytes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from omp_session.providers import request_body, request_json

HERE = Path(__file__).resolve().parent / "providers_golden"
CASES: list[dict[str, Any]] = json.loads((HERE / "cases.json").read_text(encoding="utf-8"))
FORMATS = ("anthropic", "openai-responses", "openai-chat", "google")
GOLDEN = {name: json.loads((HERE / "golden" / f"{name}.json").read_text(encoding="utf-8")) for name in FORMATS}


def test_every_case_was_recorded_for_every_format() -> None:
    names = [case["name"] for case in CASES]
    assert len(names) == len(set(names)) >= 100
    for format_name in FORMATS:
        assert sorted(GOLDEN[format_name]) == sorted(names)


@pytest.mark.parametrize("format_name", FORMATS)
@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_body_is_byte_equal_to_omp(format_name: str, case: dict[str, Any]) -> None:
    body = request_body(format_name, case["messages"], system_prompt=case["systemPrompt"], tools=case["tools"])
    assert request_json(body).decode("utf-8") == GOLDEN[format_name][case["name"]]
