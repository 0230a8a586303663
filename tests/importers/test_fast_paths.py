"""The Claude import's fast paths give what the general ones give (issue 15, the speed goal)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from omp_session.format.codec import encode_line
from omp_session.format.ids import iso_to_ms
from omp_session.importers.base import EntryBatch
from omp_session.importers.persist import persist_new, persist_streaming
from omp_session.importers.session_file import encode_entries
from omp_session.importers.stores import make_store
from omp_session.importers.timestamps import canonical_iso_ms
from omp_session.store.tuning import DEFAULT_TUNING, Tuning

SESSION = "5e551011-0000-4000-8000-00000000f001"


@pytest.mark.parametrize(
    "value",
    [
        "2025-09-01T10:00:03.123Z",
        "1970-01-01T00:00:00.000Z",
        "2024-02-29T23:59:59.999Z",
        "2023-02-29T10:00:00.000Z",  # no such day
        "2025-09-01T24:00:00.000Z",
        "2025-09-01T10:60:00.000Z",
        "2025-09-01T10:00:60.000Z",  # a leap second: the general parser's business
        "2025-09-01T10:00:0٣.123Z",  # an Arabic-Indic digit: Date.parse refuses it
        "2025-09-01T10:00:03.123+00:00",
        "2025-09-01 10:00:03.123Z",
    ],
)
def test_the_canonical_timestamp_table_agrees_with_the_general_parser(value: str) -> None:
    fast = canonical_iso_ms(value)
    assert fast is None or fast == iso_to_ms(value)
    if value[:4].isdigit() and value.isascii() and value[10] == "T" and value.endswith(".123Z"):
        assert fast == iso_to_ms(value)  # the canonical form is always taken by the fast path
    assert canonical_iso_ms("2025-09-01T10:00:0٣.123Z") is None


def test_entries_proved_float_free_are_written_as_the_exact_encoder_writes_them() -> None:
    entries: list[dict[str, Any]] = [
        {"type": "model_change", "id": "a", "parentId": None, "timestamp": "t", "model": "x"},
        {"type": "message", "id": "b", "message": {"text": "lone \ud83d"}},  # orjson refuses it
        {"type": "message", "id": "c", "message": {"usage": {"input": 1.0}}},  # not proved
    ]
    batch = EntryBatch(entries)
    batch.float_free = [True, True, False]
    assert encode_entries(batch) == [encode_line(entry) for entry in entries]
    assert encode_entries(entries) == encode_entries(batch)


def _record(kind: str, uuid: str, parent: str | None, message: dict[str, Any], **extra: Any) -> bytes:
    record = {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "cwd": "/w",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": message,
        **extra,
    }
    return orjson.dumps(record)


def _transcript(tmp_path: Path, lines: list[bytes], tuning: Tuning = DEFAULT_TUNING) -> tuple[Any, Any]:
    transcript = tmp_path / "claude" / "projects" / "-w" / f"{SESSION}.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_bytes(b"\n".join(lines) + b"\n")
    store = make_store("claude", root=str(tmp_path / "claude"), env={"HOME": str(tmp_path)}, tuning=tuning)
    return store, store.info_for(str(transcript))


def _entries(path: Path) -> list[Any]:
    """Every line but the slot and the header and the import marker, a title change without its
    fresh id and time."""
    entries = [json.loads(line) for line in path.read_bytes().splitlines()[2:-1]]
    for entry in entries:
        if entry["type"] == "title_change":
            del entry["id"], entry["timestamp"]
    return entries


def test_float_holding_records_are_written_exactly_on_the_streaming_path(tmp_path: Path) -> None:
    usage = {"input_tokens": 3.0, "output_tokens": 2}  # a float count: written as JavaScript does
    arguments = {"x": 1.0, "y": 1e16}
    lines = [
        _record("user", "u1", None, {"role": "user", "content": "hi"}),
        _record(
            "assistant",
            "a1",
            "u1",
            {
                "id": "m1",
                "model": "claude-x",
                "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": arguments}],
                "usage": usage,
            },
        ),
        _record(
            "user",
            "r1",
            "a1",
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
            toolUseResult={"elapsed": 2.0},
        ),
    ]
    lines.append(  # an API error without a response id: its status is a float here
        _record(
            "assistant",
            "e1",
            "r1",
            {"model": "claude-x", "content": [{"type": "text", "text": "overloaded"}]},
            isApiErrorMessage=True,
            apiErrorStatus=529.0,
        )
    )
    store, info = _transcript(tmp_path, lines)
    for lossless in (False, True):
        streamed, _, _ = persist_streaming(
            store, info, session_dir=tmp_path / f"s{lossless}", lossless=lossless
        )
        whole, _ = persist_new(
            store.convert(info, lossless=lossless), info, session_dir=tmp_path / f"w{lossless}"
        )
        body = streamed.read_bytes().splitlines()[2:-1]
        assert [json.loads(line) for line in body] == _entries(whole)
        if not lossless:  # (a lossless entry keeps its source line's own bytes, "3.0" included)
            assert body == [encode_line(json.loads(line))[:-1] for line in body]  # JavaScript's layout
        assert b'"input":3,' in streamed.read_bytes()
        assert b'"arguments":{"x":1,"y":10000000000000000}' in streamed.read_bytes()
        assert b'"errorStatus":529}' in streamed.read_bytes()


@pytest.mark.parametrize("where", ["start", "end"])
def test_a_big_transcript_gets_its_title_wherever_the_title_record_is(tmp_path: Path, where: str) -> None:
    """Beyond ``Tuning.title_search_whole_bytes`` the header hint looks at the file's end only: a
    title record further back makes the hint wrong, and the import rewrites the header it ends
    with."""
    tuning = Tuning(title_search_whole_bytes=10_000, title_tail_bytes=2_000)
    title = orjson.dumps({"type": "custom-title", "customTitle": "Renamed", "sessionId": SESSION})
    chat = [_record("user", "u1", None, {"role": "user", "content": "hi " + "x" * 20_000})]
    store, info = _transcript(tmp_path, [title, *chat] if where == "start" else [*chat, title], tuning)
    hint = store.header_hint(info)
    assert hint is not None and hint.title == (None if where == "start" else "Renamed")
    path, _, converted = persist_streaming(store, info, session_dir=tmp_path / "out")
    assert converted.title == "Renamed"
    lines = path.read_bytes().splitlines()
    assert json.loads(lines[1])["title"] == "Renamed" and b'"Renamed"' in lines[0]
    whole, _ = persist_new(store.convert(info), info, session_dir=tmp_path / "whole")
    assert _entries(path) == _entries(whole)
    assert [p.name for p in (tmp_path / "out").iterdir()] == [path.name]
