"""The one JavaScript number formatter, checked against real JavaScript (Node.js)."""

from __future__ import annotations

import json
import math
import random
import shutil
import subprocess

import pytest

from omp_session.format.javascript import UNDEFINED, js_number, number_to_string, template_string

_EDGES = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.1,
    1.5e-7,
    1e-7,
    9e-6,
    1e-6,
    123e-20,
    1e16,
    1e21,
    1e20,
    2**53,
    2**53 + 2.0,
    5e-324,
    1.7976931348623157e308,
    123456789012.5,
    0.000001234,
    3e-5,
    100.0,
    1.25e-10,
    -4.5e22,
]


def _numbers() -> list[float]:
    rng = random.Random(20261130)
    values = list(_EDGES)
    for _ in range(2000):
        digits = rng.randint(1, 17)
        mantissa = f"{rng.randint(1, 10**digits - 1)}"
        values.append(float(f"{rng.choice('-+')}0.{mantissa}e{rng.randint(-30, 30)}"))
    values.extend(rng.uniform(-1e6, 1e6) for _ in range(500))
    return [v for v in values if math.isfinite(v)]


def _node(script: str, payload: str) -> list[str]:
    node = shutil.which("node")
    assert node is not None, "Node.js is needed to compare with real JavaScript (it ships on these machines)"
    done = subprocess.run([node, "-e", script], input=payload, capture_output=True, text=True, check=True)
    result: list[str] = json.loads(done.stdout)
    return result


_READ = "const xs = JSON.parse(require('fs').readFileSync(0, 'utf8')).map(Number);"


@pytest.fixture(scope="module")
def numbers() -> list[float]:
    return _numbers()


def test_json_stringify_matches_javascript(numbers: list[float]) -> None:
    # repr() round-trips exactly, and JavaScript's Number() parses the same decimal to the same double.
    expected = _node(
        _READ + "process.stdout.write(JSON.stringify(xs.map((x) => JSON.stringify(x))));",
        json.dumps([repr(v) for v in numbers]),
    )
    assert [js_number(v) for v in numbers] == expected


def test_string_of_number_matches_javascript(numbers: list[float]) -> None:
    expected = _node(
        _READ + "process.stdout.write(JSON.stringify(xs.map((x) => String(x))));",
        json.dumps([repr(v) for v in numbers]),
    )
    assert [number_to_string(v) for v in numbers] == expected


def test_template_literals_match_javascript() -> None:
    # Drifted copies fixed: the LLM conversion once wrote 1.5e-7 as Python's "1.5e-07", and the
    # context builder wrote an explicit null provider as "undefined".
    values: list[object] = [
        None,
        True,
        False,
        1.5e-7,
        1e21,
        2.0,
        -0.0,
        "text",
        {"a": 1},
        [1, None, "b", [2, 3]],
        [],
    ]
    expected = _node(
        "const xs = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "process.stdout.write(JSON.stringify([...xs.map((x) => `${x}`), `${undefined}`]));",
        json.dumps(values),
    )
    assert [template_string(v) for v in values] + [template_string(UNDEFINED)] == expected
    assert number_to_string(float("nan")) == "NaN"
    assert js_number(float("inf")) == "null"
