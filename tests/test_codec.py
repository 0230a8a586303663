"""omp_session.format.codec: lenient JSONL reading (spec §7.5) and JS-identical writing (§1.7)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from omp_session.format.codec import (
    BLANK,
    INVALID_UTF8,
    MALFORMED,
    NOT_OBJECT,
    TORN,
    LineIssue,
    decode_line,
    decode_lines,
    encode_json,
    encode_line,
    encode_lines,
    js_number,
)

# ---------------------------------------------------------------------------------------------
# Reading


def test_valid_lines_keep_order_and_line_numbers() -> None:
    decoded = decode_lines(b'{"a":1}\n{"b":2}\n{"c":3}\n')
    assert decoded.records == [{"a": 1}, {"b": 2}, {"c": 3}]
    assert decoded.line_numbers == [1, 2, 3]
    assert decoded.issues == []
    assert decoded.ends_with_newline and not decoded.has_bom
    assert decoded.size == 24


def test_empty_input() -> None:
    decoded = decode_lines(b"")
    assert decoded.records == [] and decoded.issues == []
    assert decoded.ends_with_newline  # nothing to repair in an empty file
    assert decoded.first_value_line() is None


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
def test_splits_on_newline_only(separator: str) -> None:
    # str.splitlines() would split on each of these; JSON.stringify writes them raw inside strings.
    text = f'{{"text":"a{separator}b"}}\n{{"n":2}}\n'
    decoded = decode_lines(text.encode("utf-8"))
    assert decoded.records == [{"text": f"a{separator}b"}, {"n": 2}]
    assert decoded.line_numbers == [1, 2]


def test_blank_lines_are_recorded_but_not_reported_as_skipped() -> None:
    decoded = decode_lines(b'\n   \n{"a":1}\n\t\r\n{"b":2}\n\n')
    assert decoded.records == [{"a": 1}, {"b": 2}]
    assert decoded.line_numbers == [3, 5]
    assert [(i.line, i.offset, i.reason) for i in decoded.issues] == [
        (1, 0, BLANK),
        (2, 1, BLANK),
        (4, 13, BLANK),
        (6, 24, BLANK),
    ]
    assert decoded.skipped == []


def test_crlf_lines_are_read() -> None:
    decoded = decode_lines(b'{"a":1}\r\n{"b":"x"}\r\n')
    assert decoded.records == [{"a": 1}, {"b": "x"}]
    assert decoded.issues == []


def test_malformed_line_is_skipped_with_line_offset_and_preview() -> None:
    data = b'{"a":1}\n<<<<<<< HEAD\n{"b":2}\n'
    decoded = decode_lines(data)
    assert decoded.records == [{"a": 1}, {"b": 2}]
    assert decoded.line_numbers == [1, 3]
    (issue,) = decoded.issues
    assert issue == LineIssue(2, 8, MALFORMED, True, "<<<<<<< HEAD")
    assert decoded.skipped == [issue]
    assert issue.describe() == "line 2 (byte 8): malformed JSON; skipped"


def test_preview_is_cut_to_80_bytes() -> None:
    bad = b"x" * 200
    (issue,) = decode_lines(bad + b"\n").issues
    assert issue.preview == "x" * 80


def test_torn_last_line_is_recorded_as_torn() -> None:
    data = b'{"a":1}\n{"b":'
    decoded = decode_lines(data)
    assert decoded.records == [{"a": 1}]
    assert not decoded.ends_with_newline
    assert [(i.line, i.offset, i.reason) for i in decoded.issues] == [(2, 8, TORN)]


def test_incomplete_line_in_the_middle_is_malformed_not_torn_and_later_lines_survive() -> None:
    # Bun's streaming parser would swallow every line after an open value; we keep them (§7.5).
    decoded = decode_lines(b'{"a":1}\n{"b":\n{"c":3}\n')
    assert decoded.records == [{"a": 1}, {"c": 3}]
    assert [(i.line, i.reason) for i in decoded.issues] == [(2, MALFORMED)]


def test_complete_last_line_without_newline_is_kept() -> None:
    decoded = decode_lines(b'{"a":1}\n{"b":2}')
    assert decoded.records == [{"a": 1}, {"b": 2}]
    assert not decoded.ends_with_newline
    assert decoded.issues == []


@pytest.mark.parametrize("line", [b"null", b"42", b'"str"', b"[1,2]", b"true", b"-1.5"])
def test_non_object_lines_are_skipped_and_recorded(line: bytes) -> None:
    decoded = decode_lines(b'{"a":1}\n' + line + b'\n{"b":2}\n')
    assert decoded.records == [{"a": 1}, {"b": 2}]
    (issue,) = decoded.issues
    assert (issue.line, issue.offset, issue.reason, issue.skipped) == (2, 8, NOT_OBJECT, True)
    assert issue.preview == line.decode()


def test_first_value_line_sees_a_leading_non_object() -> None:
    # A scalar before the header means the header is not the first value (the file is corrupt).
    decoded = decode_lines(b'\n42\n{"type":"session","id":"x"}\n')
    assert decoded.line_numbers == [3]
    assert decoded.first_value_line() == 2


def test_bom_is_stripped_and_remembered() -> None:
    decoded = decode_lines(b'\xef\xbb\xbf{"type":"session","id":"x"}\n{"a":1}\n')
    assert decoded.has_bom
    assert decoded.records == [{"type": "session", "id": "x"}, {"a": 1}]
    # offsets stay byte offsets into the file, BOM included
    assert decode_lines(b'\xef\xbb\xbf{"a":1}\nbad\n').issues[0].offset == 11


def test_bom_elsewhere_than_the_start_is_not_stripped() -> None:
    decoded = decode_lines(b'{"a":1}\n\xef\xbb\xbf{"b":2}\n')
    assert not decoded.has_bom
    assert decoded.records == [{"a": 1}]
    assert decoded.issues[0].reason == MALFORMED


def test_lone_surrogate_escapes_are_read() -> None:
    # JavaScript writes a lone UTF-16 surrogate as an escape; orjson rejects it, we must not.
    decoded = decode_lines(b'{"text":"broken \\ud83d emoji"}\n{"pair":"\\ud83d\\ude00"}\n')
    assert decoded.records == [{"text": "broken \ud83d emoji"}, {"pair": "😀"}]
    assert decoded.issues == []


def test_invalid_utf8_is_read_leniently_with_replacement_and_recorded() -> None:
    decoded = decode_lines(b'{"a":"x\xffy"}\n')
    assert decoded.records == [{"a": "x\ufffdy"}]
    (issue,) = decoded.issues
    assert (issue.line, issue.reason, issue.skipped) == (1, INVALID_UTF8, False)
    assert "read leniently" in issue.describe()
    assert decoded.skipped == []


@pytest.mark.parametrize("line", [b'{"a":NaN}', b'{"a":Infinity}', b'{"a":-Infinity}', b"{'a':1}"])
def test_non_json_constants_are_rejected(line: bytes) -> None:
    decoded = decode_lines(line + b"\n")
    assert decoded.records == []
    assert decoded.issues[0].reason == MALFORMED


def test_garbage_after_a_value_makes_the_line_malformed() -> None:
    # Documented difference from Bun (which keeps the first value): a line is one JSON value.
    decoded = decode_lines(b'{"a":1} garbage\n{"a":1}{"b":2}\n')
    assert decoded.records == []
    assert [i.reason for i in decoded.issues] == [MALFORMED, MALFORMED]


def test_integers_beyond_64_bits_are_read_as_javascript_doubles() -> None:
    big = 2**70 + 1
    (record,) = decode_lines(f'{{"n":{big},"m":-{big}}}\n'.encode()).records
    assert record == {"n": 2.0**70, "m": -(2.0**70)}
    # ... and written back as JSON.stringify writes that double
    assert encode_json(record) == b'{"n":1.1805916207174113e+21,"m":-1.1805916207174113e+21}'


def test_duplicate_keys_last_wins_like_json_parse() -> None:
    assert decode_line(b'{"a":1,"a":2}') == {"a": 2}


def test_decode_line_returns_any_json_value_and_raises_value_error() -> None:
    assert decode_line(b"[1,2]") == [1, 2]
    assert decode_line(b"null") is None
    assert decode_line(b'"\\ud800"') == "\ud800"
    with pytest.raises(ValueError):
        decode_line(b"{")


# ---------------------------------------------------------------------------------------------
# Writing


def test_compact_and_insertion_ordered() -> None:
    value = {"type": "message", "id": "x", "parentId": None, "z": [1, {"b": True, "a": False}]}
    assert encode_json(value) == b'{"type":"message","id":"x","parentId":null,"z":[1,{"b":true,"a":false}]}'


def test_non_ascii_and_line_separators_are_written_raw() -> None:
    value = {"t": "é漢😀\u2028\u2029\u0085"}
    assert encode_json(value) == '{"t":"é漢😀\u2028\u2029\u0085"}'.encode()


def test_control_characters_are_escaped_like_json_stringify() -> None:
    text = "".join(chr(c) for c in range(0x20)) + '"\\\x7f'
    expected = (
        '"\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\b\\t\\n\\u000b\\f\\r\\u000e\\u000f'
        "\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018\\u0019\\u001a\\u001b\\u001c"
        '\\u001d\\u001e\\u001f\\"\\\\\x7f"'
    )
    assert encode_json(text) == expected.encode()


def test_lone_surrogates_are_written_as_lowercase_escapes() -> None:
    assert encode_json({"a": "x\ud83dy", "b": "\udfff"}) == b'{"a":"x\\ud83dy","b":"\\udfff"}'
    # and read back to the same string
    assert decode_line(encode_json({"a": "x\ud83dy"})) == {"a": "x\ud83dy"}


def test_lone_surrogate_in_a_key_is_written_as_an_escape() -> None:
    assert encode_json({"k\ud83d": 1}) == b'{"k\\ud83d":1}'


def test_integers_stay_integers_of_any_size() -> None:
    assert encode_json({"a": 1, "b": -0, "c": 2**64, "d": -(2**70)}) == (
        b'{"a":1,"b":0,"c":18446744073709551616,"d":-1180591620717411303424}'
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1.0, b"1"),
        (-0.0, b"0"),
        (0.5, b"0.5"),
        (1e16, b"10000000000000000"),
        (1e20, b"100000000000000000000"),
        (1e21, b"1e+21"),
        (1.5e300, b"1.5e+300"),
        (1e-6, b"0.000001"),
        (1.234e-6, b"0.000001234"),
        (1e-7, b"1e-7"),
        (2.5e-5, b"0.000025"),
        (5e-324, b"5e-324"),
        (float("nan"), b"null"),
        (float("inf"), b"null"),
        (float("-inf"), b"null"),
    ],
)
def test_floats_are_formatted_like_javascript(value: float, expected: bytes) -> None:
    assert encode_json({"v": value}) == b'{"v":' + expected + b"}"
    assert encode_json([value]) == b"[" + expected + b"]"
    assert encode_json(value) == expected  # a top-level number too


def test_tuples_are_arrays() -> None:
    assert encode_json({"a": (1, "x")}) == b'{"a":[1,"x"]}'


def test_encode_line_and_lines_end_every_line_with_newline() -> None:
    assert encode_line({"a": 1}) == b'{"a":1}\n'
    assert encode_lines([{"a": 1}, [2]]) == b'{"a":1}\n[2]\n'
    assert encode_lines([]) == b""


def test_round_trip_through_decode_lines() -> None:
    values: list[dict[str, Any]] = [
        {"type": "session", "id": "s", "title": "line\u2028sep"},
        {"x": [None, True, 1, 0.25, "ü", {"nested": {"deep": []}}]},
    ]
    decoded = decode_lines(encode_lines(values))
    assert decoded.records == values and decoded.issues == []


def test_matches_python_json_for_plain_values() -> None:
    value = {"a": "Ω\n\t", "b": [1, 2, {"c": None}], "d": 12345678901234}
    assert encode_json(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1.0, "1"),
        (-0.0, "0"),
        (3e-05, "0.00003"),
        (1.5e-07, "1.5e-7"),
        (1e16, "10000000000000000"),
        (1e21, "1e+21"),
        (0.1, "0.1"),
        (-123.456, "-123.456"),
        (-1.5e-7, "-1.5e-7"),
        (-2.5e-5, "-0.000025"),
        (123456789012345680000.0, "123456789012345680000"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
    ],
)
def test_js_number(value: float, expected: str) -> None:
    assert js_number(value) == expected
