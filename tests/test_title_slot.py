"""The omp 18 title slot (omp18-differences §1): layout, truncation, validation, in-place rename."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from omp_session import SessionManager
from omp_session.errors import SessionChangedError
from omp_session.format.title_slot import (
    SLOT_BYTES,
    TitleSlot,
    encode_slot,
    fit_title,
    parse_slot_line,
    split_slot,
)
from omp_session.store.file import FileStorage
from omp_session.store.slot_files import directory_has_slot_files, starts_with_slot
from tests.helpers import assistant, user

STAMP = "2025-09-01T09:00:00.000Z"


def test_slot_is_exactly_256_bytes_with_omp_key_order() -> None:
    line = encode_slot(TitleSlot("Hi", STAMP, "user"))
    assert len(line) == SLOT_BYTES and line.endswith(b"\n")
    value = json.loads(line)
    assert list(value) == ["type", "v", "title", "source", "updatedAt", "pad"]
    assert set(value["pad"]) == {" "}
    no_source = json.loads(encode_slot(TitleSlot("", STAMP)))
    assert list(no_source) == ["type", "v", "title", "updatedAt", "pad"]


def test_long_titles_are_cut_by_whole_code_points_only_in_the_slot() -> None:
    title = "Überarbeitung 🎉🚀 " + "漢字 😀 " * 40
    line = encode_slot(TitleSlot(title, STAMP, "auto"))
    assert len(line) == SLOT_BYTES
    kept = json.loads(line)["title"]
    assert title.startswith(kept) and len(kept) < len(title)
    assert kept == fit_title(title, "auto", STAMP)
    # one more code point would not fit
    bigger = TitleSlot(title[: len(kept) + 1], STAMP, "auto").to_dict()
    assert len(json.dumps(bigger, ensure_ascii=False, separators=(",", ":")).encode()) + 1 > SLOT_BYTES


def test_json_escapes_count_toward_the_budget() -> None:
    title = '"' * 300
    value = json.loads(encode_slot(TitleSlot(title, STAMP)))
    assert value["pad"] == "" or len(value["pad"]) < 2  # escaped quotes are two bytes each
    assert value["title"] == '"' * len(value["title"])


@pytest.mark.parametrize(
    ("line", "is_slot"),
    [
        (b'{"type":"title","v":1,"title":"t","updatedAt":"x","pad":""}', True),
        (b'{"type":"title","v":1,"title":"t","updatedAt":"x","pad":"","extra":1}', True),
        (b'{"type":"title","v":2,"title":"t","updatedAt":"x","pad":""}', False),
        (b'{"type":"title","v":true,"title":"t","updatedAt":"x","pad":""}', False),
        (b'{"type":"title","v":1,"title":"t","source":"bot","updatedAt":"x","pad":""}', False),
        (b'{"type":"title","v":1,"title":5,"updatedAt":"x","pad":""}', False),
        (b'{"type":"session","id":"x"}', False),
        (b"not json", False),
    ],
)
def test_slot_validation(line: bytes, is_slot: bool) -> None:
    assert (parse_slot_line(line) is not None) is is_slot
    assert (split_slot(line + b"\n")[0] is not None) is is_slot
    assert split_slot(line)[0] is None  # no newline: never a slot


def _materialized(directory: Path, dialect: str | None = "18") -> SessionManager:
    session = SessionManager.create("/work/app", directory, dialect=dialect)
    session.append_message(user("q"))
    session.append_message(assistant("a"))
    return session


def test_rename_rewrites_the_slot_in_place(tmp_path: Path) -> None:
    session = _materialized(tmp_path)
    path = Path(str(session.get_session_file()))
    before = path.read_bytes()
    inode = os.stat(path).st_ino
    assert session.set_session_name("  New\n\ttitle  ", "user", "cli") is True
    after = path.read_bytes()
    assert os.stat(path).st_ino == inode  # not a rewrite: same file
    assert after[SLOT_BYTES : len(before)] == before[SLOT_BYTES:]  # header and entries untouched
    slot = json.loads(after[:SLOT_BYTES])
    assert (slot["title"], slot["source"]) == ("New title", "user")
    change = json.loads(after[len(before) :])
    assert list(change) == ["type", "id", "parentId", "timestamp", "title", "source", "trigger"]
    assert change["timestamp"] == slot["updatedAt"]
    # an automatic title never replaces the user's
    assert session.set_session_name("auto title") is False
    assert path.read_bytes() == after
    session.close()
    reopened = SessionManager.open(path)
    assert reopened.get_session_name() == "New title" and reopened.get_title_source() == "user"
    reopened.close()


def test_in_place_rename_refuses_a_first_line_of_another_size(tmp_path: Path) -> None:
    session = _materialized(tmp_path)
    path = Path(str(session.get_session_file()))
    session.close()
    data = path.read_bytes()
    short = b'{"type":"title","v":1,"title":"","updatedAt":"x","pad":""}\n'
    path.write_bytes(short + data[SLOT_BYTES:])
    storage = FileStorage(path, blobs=None)  # type: ignore[arg-type]
    storage.read()
    with pytest.raises(SessionChangedError):
        storage.overwrite_title_slot(encode_slot(TitleSlot("x", STAMP)))
    assert path.read_bytes() == short + data[SLOT_BYTES:]


def test_slot_files_are_detected_in_a_store(tmp_path: Path) -> None:
    assert not directory_has_slot_files(tmp_path)
    legacy = _materialized(tmp_path / "a", dialect="13")
    assert not starts_with_slot(str(legacy.get_session_file()))
    legacy.close()
    assert not directory_has_slot_files(tmp_path / "a")
    current = _materialized(tmp_path / "a", dialect="18")
    assert starts_with_slot(str(current.get_session_file()))
    current.close()
    assert directory_has_slot_files(tmp_path / "a")


def test_a_read_only_follower_sees_an_in_place_rename(tmp_path: Path) -> None:
    writer = _materialized(tmp_path)
    path = Path(str(writer.get_session_file()))
    follower = SessionManager.open(path, read_only=True)
    assert follower.get_session_name() is None
    writer.set_session_name("Renamed live", "user")
    added = follower.refresh()
    assert [entry["type"] for entry in added] == ["title_change"]
    assert follower.get_session_name() == "Renamed live" and follower.get_title_source() == "user"
    follower.close()
    writer.close()
