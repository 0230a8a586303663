"""Odd source records the importer fuzzing found: each converts (or updates) instead of raising."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from omp_session import SessionManager
from omp_session.errors import ForeignSessionError
from omp_session.format.ids import iso_from_ms
from omp_session.importers.persist import import_session
from omp_session.importers.stores import make_store
from tests.importers import corpus
from tests.importers.helpers import write_pi_session

#: Numbers JavaScript's ``new Date(n).toISOString()`` rejects (beyond ±8.64e15 ms): omp's
#: importers throw ``RangeError`` on them and import nothing.
OUT_OF_RANGE = [2**70, -(2**70), 1e300, 8_640_000_000_000_001]


def _rewrite_line(path: Path, number: int, **fields: object) -> dict[str, Any]:
    lines = path.read_bytes().splitlines()
    record: dict[str, Any] = json.loads(lines[number])
    record.update(fields)
    lines[number] = json.dumps(record).encode()
    path.write_bytes(b"\n".join(lines) + b"\n")
    return record


@pytest.mark.parametrize("stamp", OUT_OF_RANGE)
@pytest.mark.parametrize("lossless", [True, False])
def test_a_claude_timestamp_beyond_javascript_time_takes_the_file_time(
    tmp_path: Path, stamp: float, lossless: bool
) -> None:
    staged, _ = corpus.stage("claude", "plain_chat", tmp_path)
    record = _rewrite_line(staged, 2, timestamp=stamp)
    store = make_store("claude", env={"HOME": str(tmp_path)})
    converted = store.convert(store.info_for(str(staged)), lossless=lossless)
    entry = next(e for e in converted.entries if record["uuid"] in e["id"])
    mtime_ms = os.stat(staged).st_mtime_ns / 1e6  # omp's fallback: the file's (fractional) mtimeMs
    assert entry["timestamp"] == iso_from_ms(int(mtime_ms))
    assert entry["message"]["timestamp"] == pytest.approx(mtime_ms, abs=0.001)


@pytest.mark.parametrize("stamp", OUT_OF_RANGE)
def test_a_codex_timestamp_beyond_javascript_time_takes_the_running_fallback(
    tmp_path: Path, stamp: float
) -> None:
    staged, _ = corpus.stage("codex", "basic_chat", tmp_path)
    store = make_store("codex", env={"HOME": str(tmp_path)})
    before = store.convert(store.info_for(str(staged)))
    _rewrite_line(staged, 3, timestamp=stamp)
    after = store.convert(store.info_for(str(staged)))
    # The record keeps the fallback (the time before it, plus one): every other time is unchanged.
    assert len(after.entries) == len(before.entries)
    assert [e["timestamp"] for e in after.entries][:2] == [e["timestamp"] for e in before.entries][:2]
    assert all(isinstance(e["timestamp"], str) for e in after.entries)


@pytest.mark.parametrize(("version", "migrated"), [(b"1e999", False), (b"-1e999", True)])
def test_a_pi_header_version_beyond_a_double_is_compared_as_javascript_compares_it(
    tmp_path: Path, version: bytes, migrated: bool
) -> None:
    # JSON.parse reads 1e999 as Infinity: never below 2 or 3, so no migration; -Infinity is below
    # both. int() of either raised OverflowError out of the import (found by fuzzing, seed 41).
    source = write_pi_session(tmp_path / "home")
    lines = source.read_bytes().splitlines()
    header = lines[0].replace(b'"version": 3', b'"version": ' + version)
    assert header != lines[0]
    source.write_bytes(b"\n".join([header, *lines[1:]]) + b"\n")
    store = make_store("pi", root=str(tmp_path / "home" / ".pi" / "agent"))
    converted = store.convert(store.info_for(str(source)))
    ids = [entry["id"] for entry in converted.entries]
    assert (ids[0] != "a1000001") is migrated  # a v1 migration gives every entry a new id
    outcome = import_session(store, store.info_for(str(source)), root=tmp_path / "out")
    assert outcome.status == "imported"


def test_an_update_recognises_written_entries_without_a_string_id(tmp_path: Path) -> None:
    # A pi session may hold an entry whose id is not a string; the import keeps it as it is. An
    # update must not append it again (it compared ids only, and a dict id could not be looked up).
    source = write_pi_session(tmp_path / "home")
    lines = source.read_bytes().splitlines()
    odd = {"type": "custom", "customType": "note", "id": {"odd": 1}, "parentId": None, "data": {"n": 1}}
    source.write_bytes(b"\n".join([*lines, json.dumps(odd).encode()]) + b"\n")
    store = make_store("pi", root=str(tmp_path / "home" / ".pi" / "agent"))
    root = tmp_path / "out"
    first = import_session(store, store.info_for(str(source)), root=root)
    assert first.status == "imported" and first.path is not None
    assert import_session(store, store.info_for(str(source)), root=root).status == "unchanged"
    last = json.loads(lines[-1])
    grown = {**last, "id": "added01", "parentId": last["id"], "timestamp": "2026-01-02T00:00:00.000Z"}
    with open(source, "ab") as handle:
        handle.write(json.dumps(grown).encode() + b"\n")
    update = import_session(store, store.info_for(str(source)), root=root)
    assert update.status == "updated"
    with SessionManager.open(first.path, read_only=True) as session:
        entries = session.get_entries()
    assert sum(1 for e in entries if e.get("id") == {"odd": 1}) == 1
    assert sum(1 for e in entries if e.get("id") == "added01") == 1


def test_a_cwd_too_long_for_a_directory_name_fails_as_the_library_s_own_error(tmp_path: Path) -> None:
    # The recorded cwd names the project directory; 5,000 characters exceed any file system's limit.
    staged, _ = corpus.stage("claude", "plain_chat", tmp_path)
    lines = [json.loads(line) for line in staged.read_bytes().splitlines()]
    source = tmp_path / "long.jsonl"
    source.write_text("".join(json.dumps({**record, "cwd": "/" + "x" * 5000}) + "\n" for record in lines))
    before = source.read_bytes()
    store = make_store("claude", env={"HOME": str(tmp_path)})
    with pytest.raises(ForeignSessionError) as raised:
        import_session(store, store.info_for(str(source)), root=tmp_path / "out")
    assert raised.value.path == source and "File name too long" in str(raised.value)
    assert source.read_bytes() == before


def test_a_cwd_with_a_lone_surrogate_names_its_directory_with_a_replacement_character(tmp_path: Path) -> None:
    # JSON.parse reads "\ud83d" as a lone surrogate; Node writes it to the file system as U+FFFD.
    staged, _ = corpus.stage("claude", "plain_chat", tmp_path)
    lines = [json.loads(line) for line in staged.read_bytes().splitlines()]
    source = tmp_path / "surrogate.jsonl"
    source.write_text("".join(json.dumps({**record, "cwd": "/work/a\ud83db"}) + "\n" for record in lines))
    store = make_store("claude", env={"HOME": str(tmp_path)})
    outcome = import_session(store, store.info_for(str(source)), root=tmp_path / "out")
    assert outcome.status == "imported" and outcome.path is not None
    assert outcome.path.parent.name == "--work-a\ufffdb--"
    with SessionManager.open(outcome.path, read_only=True) as session:
        assert session.get_header()["cwd"] == "/work/a\ud83db"  # the header keeps the text as recorded
