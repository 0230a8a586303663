"""The session-file scanner (store/scanner.py): the compiled one and its pure-Python reference
agree on every input, generated and mutated, including the lines the compiled one hands to the
full decoder; both build the same offset index as the index builder's own loop over decoded
entries; and a cold open through either, a skim (the pure-Python cold open), a warm open through
the stored index and a full load read the same session alike."""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omp_session.store import scanner
from omp_session.store._indexed.builder import ComplexSession, IndexBuilder
from omp_session.store._indexed.offsets import OffsetIndex
from omp_session.store.scanner import Scanned
from omp_session.store.tuning import ReadStrategy
from tests.perf.tuned import EVERY_FILE, open_session
from tests.store.read_paths import read_by, tuning_for

from .sessions import full_snapshot, jump_back_lines, opened_cold, session_lines, snapshot
from .test_skim_open import _ODD_VALUES, _odd_sessions

SETTINGS = settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
Scan = Callable[[bytes, int, int, Any, Collection[str]], Scanned]
#: Every scanner this installation has (the compiled one is missing where no compiler was).
SCANNERS: list[tuple[str, Scan]] = [("pure", scanner.py_scan)]
if scanner.c_scan is not None:
    SCANNERS.append(("compiled", scanner.c_scan))


def _scan(implementation: Scan, data: bytes) -> tuple[str, Any]:
    """What one scanner makes of ``data`` (a header line, then entries): the index it builds, or
    the kind of error it raises."""
    start = data.find(b"\n") + 1
    end = data.rfind(b"\n") + 1
    builder = IndexBuilder()
    try:
        found = implementation(data, start, max(start, end), builder, builder.stateful_types)
    except orjson.JSONDecodeError:
        return "rejected", None
    except ComplexSession:
        return "complex", None
    special = {position: orjson.dumps(entry) for position, entry in found.special.items()}
    builder.adopt(found)
    index = OffsetIndex.from_builder(builder, {"covered": end})
    usage = builder.usage.to_state()
    escapes = list(found.escape_lines)
    return "ok", (index.to_bytes(), special, sorted(found.dangling), repr(usage), builder.stateful, escapes)


def _by_the_builder(data: bytes) -> tuple[str, Any]:
    """The same from ``IndexBuilder.add_all`` over every line decoded by orjson (the loop the
    scanner replaces)."""
    start = data.find(b"\n") + 1
    end = data.rfind(b"\n") + 1
    lines = data[start : end - 1].split(b"\n") if end > start else []
    try:
        entries = list(map(orjson.loads, lines))
    except orjson.JSONDecodeError:
        return "rejected", None
    if any(type(entry) is not dict for entry in entries):
        return "complex", None
    builder = IndexBuilder()
    offsets, at = [], start
    for line in lines:
        offsets.append(at)
        at += len(line) + 1
    try:
        builder.add_all(entries, offsets, list(map(len, lines)))
    except ComplexSession:
        return "complex", None
    index = OffsetIndex.from_builder(builder, {"covered": end})
    return "ok", (index.to_bytes(), repr(builder.usage.to_state()), builder.stateful)


def _check(data: bytes) -> None:
    results = [_scan(implementation, data) for _name, implementation in SCANNERS]
    assert all(result == results[0] for result in results), "the scanners disagree"
    status, found = results[0]
    expected_status, expected = _by_the_builder(data)
    # (Both give up on such a file; which reason comes first depends on the order of the checks.)
    assert (status == "ok") == (expected_status == "ok")
    if status == "ok":
        assert (found[0], found[3], found[4]) == expected
        # The lines listed as holding the bytes \u are exactly those that do.
        start, end = data.find(b"\n") + 1, data.rfind(b"\n") + 1
        lines = data[start : end - 1].split(b"\n") if end > start else []
        assert found[5] == [at for at, line in enumerate(lines) if scanner.ESCAPE in line]


_MUTATIONS = st.sampled_from(
    [
        *_ODD_VALUES,
        b'"\\u0069d"',
        b'"\\u00e9"',
        b'"\\\\u"',
        b'"\\\\\\u0075"',
        b"u",
        b'"a\\"b"',
        b'"\xc3\xa9"',
        b'"\xe2\x80\xa8"',
        b"1e308",
        b"1E-400",
        b"-",
        b"01",
        b"{}",
        b"[]",
        b'{"id":"dup"}',
        b" ",
        b"\t",
        b"\r",
        b"",
        b",",
        b"}",
        b'"',
        b"\\",
        b"\xff",
        b"\x00",
    ]
)


@st.composite
def _mutated(draw: st.DrawFn) -> bytes:
    """A generated session with a few bytes replaced, inserted or deleted anywhere."""
    data = bytearray(b"".join(draw(session_lines(weird=draw(st.booleans())))))
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(data)))
        cut = draw(st.integers(0, 3))
        data[at : at + cut] = draw(_MUTATIONS)
    return bytes(data)


@SETTINGS
@given(lines=session_lines())
def test_the_scanners_agree_on_generated_sessions(lines: list[bytes]) -> None:
    _check(b"".join(lines))


@SETTINGS
@given(data=_mutated())
def test_the_scanners_agree_on_mutated_lines(data: bytes) -> None:
    _check(data)


@SETTINGS
@given(lines=_odd_sessions())
def test_the_scanners_agree_on_odd_values(lines: list[bytes]) -> None:
    _check(b"".join(lines))


# -- usage totals added in C -------------------------------------------------------------------

_NUMBERS = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, 0.0, -0.0, 1e-300, 2**63 - 1, -(2**63), 2**64]),
)
_VALUES = st.one_of(
    _NUMBERS, st.none(), st.booleans(), st.text(max_size=3), st.lists(st.integers(), max_size=2)
)
_KEYS = ["input", "output", "cacheRead", "cacheWrite", "totalTokens", "premiumRequests", "x"]


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode()  # (any integer, unlike orjson)


@st.composite
def _usage_json(draw: st.DrawFn) -> bytes:
    """One usage value as JSON: numbers of every kind, missing and odd fields, nested parts,
    sometimes a duplicate key, extra spaces, or not an object at all."""
    if draw(st.integers(0, 15)) == 0:
        return _dumps(draw(_VALUES))
    parts = []
    for key in draw(st.lists(st.sampled_from(_KEYS), max_size=8)):
        parts.append(b'"' + key.encode() + b'":' + _dumps(draw(_VALUES)))
    if draw(st.booleans()):
        inner = {k: draw(_VALUES) for k in draw(st.lists(st.sampled_from(["input", "output", "cacheRead"])))}
        parts.append(b'"orchestration":' + _dumps(inner if draw(st.integers(0, 5)) else 3))
    if draw(st.booleans()):
        parts.append(b'"cost":' + _dumps({"total": draw(_VALUES), "input": 1}))
    separator = b" , " if draw(st.booleans()) else b","
    return b"{" + separator.join(parts) + b"}"


@SETTINGS
@given(usages=st.lists(_usage_json(), max_size=12))
def test_usage_totals_added_in_c_are_usage_statistics(usages: list[bytes]) -> None:
    lines = [b'{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}']
    for number, usage in enumerate(usages):
        parent = b"null" if number == 0 else b'"e%d"' % (number - 1)
        lines.append(
            b'{"type":"message","id":"e%d","parentId":%s,"message":{"role":"assistant","usage":%s}}'
            % (number, parent, usage)
        )
    _check(b"\n".join(lines) + b"\n")


#: JSON numbers as a file may spell them: the compiled scanner reads most floats on a fast path
#: (an integer below 2**53 and a power of ten up to 22, one rounding) and the rest with strtod.
_SPELLED_NUMBERS = st.from_regex(
    r"-?(0|[1-9][0-9]{0,19})(\.[0-9]{1,22})?([eE][+-]?[0-9]{1,3})?", fullmatch=True
)


@SETTINGS
@given(totals=st.lists(_SPELLED_NUMBERS, min_size=1, max_size=8))
def test_usage_costs_spelled_any_way_add_up_alike(totals: list[str]) -> None:
    _check_costs(totals)


def _check_costs(totals: list[str]) -> None:
    lines = [b'{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}']
    for number, total in enumerate(totals):
        parent = b"null" if number == 0 else b'"e%d"' % (number - 1)
        usage = b'{"input":%s,"cost":{"input":%s,"total":%s}}' % (
            total.encode(),
            total.encode(),
            total.encode(),
        )
        lines.append(
            b'{"type":"message","id":"e%d","parentId":%s,"message":{"role":"assistant","usage":%s}}'
            % (number, parent, usage)
        )
    _check(b"\n".join(lines) + b"\n")


@pytest.mark.parametrize(
    "total",
    [
        "0.1",
        "0.3",
        "-0.0",
        "1e22",
        "1e23",
        "123456789012345e-22",
        "1234567890123456e-3",
        "9007199254740993.0",
        "0.000000000000000000000001",
        "4.35e-5",
        "1E+2",
        "2.5E-3",
        "0.0",
        "100",
        "1.7976931348623157e308",
    ],
)
def test_a_cost_near_the_fast_path_s_edges_adds_up_alike(total: str) -> None:
    _check_costs([total, total, total])


@pytest.mark.parametrize("odd", _ODD_VALUES)
def test_a_line_the_compiled_scanner_cannot_read_exactly_goes_to_the_full_decoder(odd: bytes) -> None:
    line = b'{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":' + odd + b"}}"
    if scanner.c_scan is not None:
        from omp_session.store._scanner_c import line_readable

        # It reads a line itself only when orjson reads it too (else orjson decides).
        try:
            orjson.loads(line)
            accepted = True
        except orjson.JSONDecodeError:
            accepted = False
        if not accepted:
            assert not line_readable(line)
        if odd in (b'"\\ud800"', b"1e400", b'"\xff"', b'"\xed\xa0\x80"', b'"a\x01"'):
            assert not line_readable(line)
        assert line_readable(b'{"type":"message","id":"a","parentId":null,"message":{"role":"user"}}')
    _check(b"{}\n" + line + b"\n")


@pytest.mark.parametrize(
    ("text", "listed"),
    [
        (b"plain", False),
        (b"a\\nb", False),  # an escape, but not \u
        (b"\\u00e9", True),  # a \u escape the scanner reads itself
        (b"C:\\\\users", True),  # an escaped backslash, then a u: the bytes \u all the same
        (b"\\\\\\u0075", True),
        (b"\\\\n", False),
        (b"\\ud83d\\ude00", True),  # a surrogate pair: handed to orjson, the bytes looked at
    ],
)
def test_both_scanners_list_the_lines_holding_the_bytes_of_an_escape(text: bytes, listed: bool) -> None:
    # (The offset index marks these lines for the load transforms instead of searching the file.)
    lines = [b'{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"%s"}}' % text]
    lines.append(b'{"type":"message","id":"b","parentId":"a","message":{"role":"user","content":"x"}}')
    data = b"{}\n" + b"\n".join(lines) + b"\n"
    for _name, implementation in SCANNERS:
        builder = IndexBuilder()
        found = implementation(data, 3, len(data), builder, builder.stateful_types)
        assert list(found.escape_lines) == ([0] if listed else [])
    _check(data)


#: Bytes that end a string's plain run, each as it may stand in a string's raw bytes (the last
#: two are plain: DEL and the highest plain byte below it, which must not stop a run).
_RUN_STOPS = [
    b'\\"',
    b"\\\\",
    b"\\n",
    b"\\u00e9",
    b"\x01",
    b"\x1f",
    b"\xc3\xa9",
    b"\xe2\x82\xac",
    b"\xff",
    b"\x7f",
    b"~",
]


@pytest.mark.parametrize("stop", _RUN_STOPS)
def test_the_scanners_agree_wherever_a_string_s_plain_run_stops(stop: bytes) -> None:
    # The compiled scanner reads a string 16 bytes at a time (SSE2), then 8, then one by one:
    # a byte that ends the run at every position of strings up to 40 bytes, and at their ends,
    # is found in each of those reads.
    lines = []
    for length in range(41):
        for at in range(length + 1):
            text = b"a" * at + stop + b"b" * (length - at)
            lines.append(
                b'{"type":"message","id":"%d-%d","parentId":null,"message":{"role":"user","content":"%s"}}'
                % (length, at, text)
            )
    if scanner.c_scan is not None:
        from omp_session.store._scanner_c import line_readable

        # Read by the compiled scanner itself exactly when the string is valid JSON (so a run
        # that overshot a stop byte cannot hide behind the full decoder).
        readable = stop not in (b"\x01", b"\x1f", b"\xff")
        assert all(line_readable(line) == readable for line in lines)
    _check(b"{}\n" + b"\n".join(lines) + b"\n")


#: Every ``find`` this installation has: the scanner's bound one, and the compiled one if built.
FINDS = [("bound", scanner.find), ("pure", scanner.py_find)]
if scanner.c_find is not None:
    FINDS.append(("compiled", scanner.c_find))


@SETTINGS
@given(
    data=st.binary(max_size=64) | st.text("ab:\\u", max_size=64).map(str.encode),
    needle=st.binary(max_size=4) | st.text("ab:\\u", max_size=4).map(str.encode),
    start=st.integers(-70, 70),
    end=st.none() | st.integers(-70, 70),
)
def test_every_find_is_bytes_find(data: bytes, needle: bytes, start: int, end: int | None) -> None:
    for _name, find in FINDS:
        assert find(data, needle, start, end) == data.find(needle, start, end)


def test_find_over_a_large_buffer_finds_every_marker_where_bytes_find_does() -> None:
    # (memmem's shift-table search on long haystacks: hits at the edges, in the middle, none.)
    data = b"x" * 100_000 + b"blob:sha256:" + b"y" * 50_000 + b"openaiResponsesHistory"
    for needle in (b"blob:sha256:", b"openaiResponsesHistory", b"image_url", b"x", b"y" * 7, b"\\u"):
        for start in (0, 99_999, 100_000, 100_001, len(data) - 22, len(data)):
            for _name, find in FINDS:
                assert find(data, needle, start) == data.find(needle, start), (needle, start)
                assert find(data, needle, 0, start) == data.find(needle, 0, start), (needle, start)


def test_deep_nesting_goes_to_the_full_decoder() -> None:
    deep = b"[" * 1100 + b"]" * 1100
    _check(b'{}\n{"type":"x","id":"a","v":' + deep + b"}\n")
    limit = sys.getrecursionlimit()
    _check(b'{}\n{"type":"x","id":"a","v":' + b"[" * 600 + b"]" * 600 + b"}\n")
    assert sys.getrecursionlimit() == limit


def test_the_note_names_the_scanner_in_use() -> None:
    assert scanner.NOTE.startswith("omp-session: compiled") == scanner.COMPILED
    assert scanner.scan is (scanner.c_scan if scanner.COMPILED else scanner.py_scan)


# -- the cold open through the scanner, against the other ways to read a session ----------------


#: The cold opens through a scanner, and the one without (the skim or the one-pass decode).
THROUGH_A_SCANNER = [ReadStrategy.COLD_PURE]
if scanner.c_scan is not None:
    THROUGH_A_SCANNER.append(ReadStrategy.COLD_COMPILED)


def _all_reads_agree(path: Path) -> None:
    expected = full_snapshot(path)
    for read in THROUGH_A_SCANNER:
        with open_session(path, read_only=True, tuning=tuning_for(read, EVERY_FILE)) as manager:
            assert snapshot(manager) == expected  # cold (a stored index is not read): through the scanner
        with open_session(path, read_only=True) as manager:  # warm: the index it wrote
            assert snapshot(manager) == expected
    with open_session(path, read_only=True, tuning=tuning_for(ReadStrategy.COLD_SKIM, EVERY_FILE)) as manager:
        assert snapshot(manager) == expected


@SETTINGS
@given(lines=session_lines())
def test_lazy_skim_and_full_loads_agree(lines: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "session.jsonl"
        path.write_bytes(b"".join(lines))
        _all_reads_agree(path)


@SETTINGS
@given(lines=_odd_sessions())
def test_lazy_skim_and_full_loads_agree_on_odd_values(lines: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "session.jsonl"
        path.write_bytes(b"".join(lines))
        _all_reads_agree(path)


@SETTINGS
@given(lines=jump_back_lines())
def test_lazy_skim_and_full_loads_agree_on_branches_that_jump_back(lines: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "session.jsonl"
        path.write_bytes(b"".join(lines))
        _all_reads_agree(path)


@pytest.mark.parametrize("read", THROUGH_A_SCANNER)
def test_a_plain_session_is_opened_cold_through_the_scanner(read: ReadStrategy, tmp_path: Path) -> None:
    from .test_skim_open import _plain

    path = _plain(tmp_path)
    expected = full_snapshot(path)
    with open_session(path, read_only=True, tuning=tuning_for(read, EVERY_FILE)) as manager:
        assert opened_cold(manager) and read_by(manager) is read
        assert snapshot(manager) == expected
