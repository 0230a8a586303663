"""The import's fast writing path: raw source lines kept verbatim, floats written as JavaScript does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from omp_session.format.codec import encode_line
from omp_session.format.javascript import holds_float
from omp_session.importers.jsonl import ReadStats, iter_raw_records
from omp_session.importers.persist import persist_streaming
from omp_session.importers.session_file import encode_entry
from omp_session.importers.stores import make_store

SESSION = "5e551011-0000-4000-8000-00000000e001"


@pytest.mark.parametrize(
    "value",
    [
        {"a": 1, "b": "x", "c": [True, None, {"d": "1.0"}]},
        {"usage": {"input": 1.0, "output": 2.5}},
        {"n": [0.00001, 1e16, 1e21, -0.0, 1.5e-7]},
        {"text": "half an emoji \ud83d", "n": 1},
        {"big": 2**70, "small": -(2**70)},
        {"deep": json.loads("[" * 300 + "1.0" + "]" * 300)},
    ],
    ids=["plain", "integral-float", "exponents", "lone-surrogate", "big-int", "deep"],
)
def test_encode_entry_writes_what_json_stringify_writes(value: dict[str, Any]) -> None:
    assert encode_entry(value) == encode_line(value)


def test_holds_float_finds_a_float_at_any_depth_and_ignores_raw_fragments() -> None:
    assert not holds_float({"a": [1, "2.5", None, True, {"b": []}]})
    assert holds_float({"a": [1, {"b": [2, 3.5]}]})
    assert holds_float([(1, 2.0)])
    assert not holds_float({"record": orjson.Fragment(b'{"x":1.0}')})


def test_raw_records_are_the_line_bytes_only_when_strict_json(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    lines = [
        b'{"a":1}\r',  # a CR before the LF: JSON whitespace, kept out of the copy
        b'{"b":"\xff"}',  # invalid UTF-8: read as U+FFFD, the bytes are not reusable
        b'{"c":"\\ud83d"}',  # a lone surrogate escape: JSON.parse reads it, orjson does not
        b'{"d":123456789012345678901234567890}',  # a Number for JS too; the copy keeps every digit
        b"",
        b"[1]",
        b'{"e":2}',
    ]
    path.write_bytes(b"\n".join(lines))
    stats = ReadStats()
    got = list(iter_raw_records(path, stats))
    assert [(n, raw) for n, _, raw in got] == [
        (1, b'{"a":1}'),
        (2, None),
        (3, None),
        (4, lines[3]),
        (7, b'{"e":2}'),
    ]
    assert [r for _, r, _ in got][1:4] == [{"b": "\ufffd"}, {"c": "\ud83d"}, {"d": 1.2345678901234568e29}]
    assert stats.skipped_lines == [6] and stats.records == 5 and stats.lines == 7


def _claude_store(tmp_path: Path, records: list[bytes]) -> tuple[Any, Any]:
    transcript = tmp_path / "claude" / "projects" / "-home-dev-app" / f"{SESSION}.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_bytes(b"\n".join(records) + b"\n")
    store = make_store("claude", root=str(tmp_path / "claude"), env={"HOME": str(tmp_path)})
    return store, store.info_for(str(transcript))


def test_a_streamed_import_keeps_each_source_line_as_written(tmp_path: Path) -> None:
    """The original records are recoverable byte for byte, and the file reads back as ``convert``."""
    user = {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "cwd": "/w",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": "hi \u00e9"},
    }
    assistant = {
        "type": "assistant",
        "uuid": "a1",
        "parentUuid": "u1",
        "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {
            "id": "m1",
            "model": "claude-x",
            "content": [{"type": "tool_use", "id": "t1", "name": "Calc", "input": {"x": 0.5, "y": 1e-7}}],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 3, "output_tokens": 4},
        },
    }
    progress = {"type": "progress", "uuid": "p1", "parentUuid": "a1", "data": {"ratio": 0.25}}
    compact = {"ensure_ascii": False, "separators": (",", ":")}
    raw = [json.dumps(r, **compact).encode() for r in (user, assistant, progress)]  # type: ignore[arg-type]
    raw[2] = raw[2].replace(b'"data"', b' "data"')  # not compact: still kept exactly as written
    store, info = _claude_store(tmp_path, raw)
    path, _, _ = persist_streaming(store, info, session_dir=tmp_path / "out")
    data = path.read_bytes()
    for line in raw:
        assert line in data
    written = [json.loads(line) for line in data.splitlines()[2:]]
    converted = store.convert(info)
    assert written[: len(converted.entries)] == converted.entries
    # the float in the tool arguments is written as JavaScript writes it
    assert b'"arguments":{"x":0.5,"y":1e-7}' in data


def test_an_import_without_a_header_hint_spools_and_writes_the_same_session(tmp_path: Path) -> None:
    """The cwd is past the listing's 64 KiB: no cheap header, the entries are spooled first."""
    from omp_session.importers.persist import persist_new

    filler = {"type": "file-history-snapshot", "messageId": "x", "snapshot": {"pad": "p" * 70_000}}
    user = {"type": "user", "uuid": "u1", "parentUuid": None, "cwd": "/w", "message": {"content": "hi"}}
    store, info = _claude_store(tmp_path, [json.dumps(filler).encode(), json.dumps(user).encode()])
    assert store.header_hint(info) is None
    streamed, _, _ = persist_streaming(store, info, session_dir=tmp_path / "a")
    whole, _ = persist_new(store.convert(info), info, session_dir=tmp_path / "b")

    def body(path: Path) -> list[Any]:  # all but the header and the marker (fresh id and time)
        lines = [json.loads(line) for line in path.read_bytes().splitlines()]
        return [lines[1]["cwd"], *lines[2:-1], lines[-1]["data"]]

    assert body(streamed) == body(whole)
    assert [p.name for p in (tmp_path / "a").iterdir()] == [streamed.name]


@pytest.mark.parametrize("chunk", [7, 64, 1 << 20])
def test_lines_containing_finds_every_line_backwards_across_chunks(tmp_path: Path, chunk: int) -> None:
    import random

    from omp_session.importers import jsonl

    rng = random.Random(5)
    lines = [
        (b"x" * rng.randint(0, 300)) + (b'"needle"' if rng.random() < 0.3 else b"") + b"y" * rng.randint(0, 9)
        for _ in range(200)
    ]
    for ending in (b"\n", b""):  # with and without a final LF
        path = tmp_path / "f.jsonl"
        path.write_bytes(b"\n".join(lines) + ending)
        expected = [line for line in reversed(lines) if b'"needle"' in line]
        assert list(jsonl.lines_containing(path, b'"needle"', window=chunk)) == expected
