"""The skim of a cold open (store/_indexed/skim_open.py): a session with compactions indexed from skims
reads exactly like a full load, whatever odd value its lines hold, and the skim gives up (the
one-pass open then serves the file) wherever msgspec and orjson would read a line differently."""

from __future__ import annotations

import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omp_session.format.codec import encode_line
from omp_session.store._indexed import fast_open, skim_open
from omp_session.store.tuning import ReadStrategy
from tests.perf.tuned import EVERY_FILE, open_session

from .sessions import HEADER, full_snapshot, jump_back_lines, opened_cold, snapshot

SETTINGS = settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

#: Raw JSON values (or bytes orjson rejects) where msgspec and orjson part ways, or nearly.
_ODD_VALUES = [
    b"1",
    b"-0",
    b"1.0",
    b"0.1000000000000000055511151231257827",
    b"2.5e-324",
    b"18446744073709551615",  # the largest integer orjson keeps exact
    b"18446744073709551616",  # orjson: a float; msgspec: an exact int
    b"-9223372036854775809",
    b"123456789012345678901234567890",
    b"1e400",  # msgspec skips it; orjson rejects the line
    b'"\xff"',  # invalid UTF-8: msgspec does not check what it skips
    b'"\xed\xa0\x80"',  # a surrogate encoded in UTF-8
    b'"\\ud800"',  # a lone surrogate escape
    b'"a\x01"',  # a raw control character
    b"[" * 200 + b"]" * 200,  # (deeper: test_a_raised_recursion_limit_turns_the_skim_off)
    b"NaN",
    b'{"total":1,"total":2.5}',
    b"null",
    b"true",
    b'"x"',
]
_ODD = st.sampled_from(_ODD_VALUES)
#: Where an odd value goes: a field nothing indexes, a usage count, the cost, or the message.
_PLACES = st.sampled_from(["skipped", "input", "cost", "total", "premiumRequests", "message", "type", "id"])


#: The skim is the cold open without the compiled scanner (the scanner's is tests/perf/test_scanner.py).
SKIM = replace(EVERY_FILE, read_strategy=ReadStrategy.COLD_SKIM)


def _line(number: int, parent: str | None, odd: bytes | None, place: str) -> bytes:
    usage: dict[str, Any] = {"input": 10, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 12}
    usage["cost"] = {"total": 0.25 + number / 7}
    message: dict[str, Any] = {
        "role": "assistant" if number % 2 else "user",
        "content": [],
        "usage": usage,
        "timestamp": 1,
    }
    entry = {"type": "message", "id": f"e{number}", "parentId": parent, "message": message}
    line = encode_line(entry)[:-1]
    if odd is None:
        return line + b"\n"
    marker = {
        "skipped": (b'"content":[]', b'"content":' + odd),
        "input": (b'"input":10', b'"input":' + odd),
        "cost": (b'"cost":{"total":', b'"cost":' + odd + b',"x":{"total":'),
        "total": (b'"total":', b'"total":' + odd + b',"t":'),
        "premiumRequests": (b'"output":2', b'"output":2,"premiumRequests":' + odd),
        "message": (b'"message":{', b'"message":' + odd + b',"m":{'),
        "type": (b'"type":"message"', b'"type":' + odd),
        "id": (b'"id":"e', b'"id":' + odd + b',"i":"e'),
    }[place]
    return line.replace(*marker, 1) + b"\n"


@st.composite
def _odd_sessions(draw: st.DrawFn) -> list[bytes]:
    """A linear session with a compaction in its last quarter and odd values here and there."""
    count = draw(st.integers(8, 40))
    odd_at = dict(draw(st.lists(st.tuples(st.integers(0, count - 1), st.tuples(_ODD, _PLACES)), max_size=3)))
    compaction_at = draw(st.integers(count - max(1, count // 5), count - 1))
    lines, parent = [encode_line(HEADER)], None
    for number in range(count):
        if number == compaction_at:
            kept = f"e{draw(st.integers(0, number - 1))}"
            entry = {"type": "compaction", "id": f"e{number}", "parentId": parent, "summary": "s"}
            lines.append(encode_line({**entry, "firstKeptEntryId": kept, "tokensBefore": 1}))
        else:
            odd, place = odd_at.get(number, (None, "skipped"))
            lines.append(_line(number, parent, odd, place))
        parent = f"e{number}"
    lines.append(_line(count, parent, None, "skipped"))  # the leaf after the compaction
    return lines


def _write(directory: str, lines: list[bytes]) -> Path:
    path = Path(directory) / "session.jsonl"
    path.write_bytes(b"".join(lines))
    return path


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    served: list[bool] = []
    original = skim_open.skim_lines

    def spy(*args: Any) -> Any:
        result = original(*args)
        served.append(result is not None)
        return result

    monkeypatch.setattr(fast_open, "skim_lines", spy)
    return served


@SETTINGS
@given(lines=_odd_sessions())
def test_a_skimmed_cold_open_reads_like_a_full_load(
    lines: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = _write(directory, lines)
        expected = full_snapshot(path)
        with monkeypatch.context() as patch:
            _spy(patch)
            with open_session(path, read_only=True, tuning=SKIM) as manager:
                assert snapshot(manager) == expected


@SETTINGS
@given(lines=jump_back_lines())
def test_branches_that_jump_back_read_the_same_after_a_skim(lines: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = _write(directory, lines)
        expected = full_snapshot(path)
        with open_session(path, read_only=True, tuning=SKIM) as manager:
            assert opened_cold(manager)
            assert snapshot(manager) == expected


def _plain(tmp_path: Path, odd: bytes | None = None, place: str = "skipped") -> Path:
    lines = [encode_line(HEADER)]
    lines += [
        _line(number, f"e{number - 1}" if number else None, odd if number == 3 else None, place)
        for number in range(40)
    ]
    compaction = {
        "type": "compaction",
        "id": "e40",
        "parentId": "e39",
        "summary": "s",
        "firstKeptEntryId": "e36",
    }
    lines += [encode_line({**compaction, "tokensBefore": 1}), _line(41, "e40", None, "skipped")]
    return _write(str(tmp_path), lines)


def test_a_plain_session_with_a_compaction_is_skimmed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _plain(tmp_path)
    expected = full_snapshot(path)
    served = _spy(monkeypatch)
    with open_session(path, read_only=True, tuning=SKIM) as manager:
        assert opened_cold(manager)
        assert snapshot(manager) == expected
    assert served == [True]


@pytest.mark.parametrize(
    ("odd", "place"),
    [
        (b'"\xff"', "skipped"),  # orjson rejects the line: the full load reads it leniently
        (b"1e400", "skipped"),  # msgspec skips it; read through the index, it is the full load's inf
        (b"18446744073709551616", "input"),  # read by orjson from the raw usage: no give-up needed
        (b'"x"', "message"),
    ],
)
def test_the_skim_gives_up_or_reads_as_orjson_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, odd: bytes, place: str
) -> None:
    path = _plain(tmp_path, odd, place)
    expected = full_snapshot(path)
    served = _spy(monkeypatch)
    with open_session(path, read_only=True, tuning=SKIM) as manager:
        assert snapshot(manager) == expected
    assert served == [odd in (b"1e400", b"18446744073709551616")]


def test_a_line_nested_deeper_than_orjson_reads_is_never_skimmed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With the recursion limit raised, msgspec would accept it; orjson stops at 1023 levels.
    path = _plain(tmp_path, b"[" * 1100 + b"]" * 1100)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(5000)
    try:
        expected = full_snapshot(path)
        served = _spy(monkeypatch)
        with open_session(path, read_only=True, tuning=SKIM) as manager:
            assert snapshot(manager) == expected
    finally:
        sys.setrecursionlimit(limit)
    assert served == [False]


def test_an_entry_without_a_string_id_is_nobodys_child_after_a_lazy_open(tmp_path: Path) -> None:
    # Found by the property test above: the parent column named it, SessionIndex does not.
    path = _plain(tmp_path, b"1", "id")  # entry 3: "id":1, its parent e2
    expected = full_snapshot(path)
    assert expected["children"][2] == []
    for opening, tuning in (("cold", SKIM), ("through the index", EVERY_FILE)):
        with open_session(path, read_only=True, tuning=tuning) as manager:
            assert opened_cold(manager) == (opening == "cold")
            assert manager.get_children("e2") == [] and snapshot(manager) == expected
