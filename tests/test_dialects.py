"""Dialect selection and the layout rule "never strand an older omp" (docs/compatibility.md)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from omp_session import SessionManager
from omp_session.dialects import OMP_13_19, OMP_18_2, OMP_18_3, UnknownDialectError, explicit_dialect
from omp_session.format.title_slot import SLOT_BYTES
from omp_session.store.slot_files import starts_with_slot
from omp_session.tools.listing import list_sessions
from omp_session.tools.repair import check, migrate_file, repair
from tests.helpers import assistant, usage, user

CORPUS18 = Path(__file__).parent / "conformance_omp18" / "load"


def _write(session: SessionManager) -> Path:
    session.append_message(user("q"))
    session.append_message(assistant("a", usage=usage(10, 5, 0.01)))
    return Path(str(session.get_session_file()))


def test_dialect_from_argument_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_SESSION_DIALECT", raising=False)
    assert explicit_dialect(None) is None
    assert explicit_dialect("18") is OMP_18_3 and explicit_dialect(OMP_13_19) is OMP_13_19
    assert explicit_dialect("18.3") is OMP_18_3 and explicit_dialect("18.3.4") is OMP_18_3
    assert explicit_dialect("18.2") is OMP_18_2 and explicit_dialect("18.2.3") is OMP_18_2
    assert explicit_dialect("13") is OMP_13_19
    monkeypatch.setenv("OMP_SESSION_DIALECT", "13")
    assert explicit_dialect(None) is OMP_13_19
    assert explicit_dialect("18") is OMP_18_3  # the argument wins
    monkeypatch.setenv("OMP_SESSION_DIALECT", "18.2")
    assert explicit_dialect(None) is OMP_18_2
    monkeypatch.setenv("OMP_SESSION_DIALECT", "17")
    with pytest.raises(UnknownDialectError, match="OMP_SESSION_DIALECT"):
        explicit_dialect(None)


def test_dialect_18_writes_what_omp_18_writes(tmp_path: Path) -> None:
    session = SessionManager.create("/work/app", tmp_path, dialect="18")
    assert session.dialect is OMP_18_3
    path = _write(session)
    session.append_thinking_level_change("high")
    session.append_model_change("a/b")
    session.close()
    lines = path.read_bytes().split(b"\n")
    assert len(lines[0]) + 1 == SLOT_BYTES
    header = json.loads(lines[1])
    assert header["id"][14] == "7" and len(header["id"]) == 36  # a UUIDv7
    thinking, model = json.loads(lines[4]), json.loads(lines[5])
    assert thinking["configured"] is None and model["resolvedModelIsFallback"] is False


def test_env_var_selects_the_dialect(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_SESSION_DIALECT", "18")
    with SessionManager.create("/work/app", tmp_path) as session:
        assert session.dialect is OMP_18_3
        assert starts_with_slot(_write(session))


def test_auto_new_file_in_a_legacy_store_has_no_slot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_SESSION_DIALECT", raising=False)
    with SessionManager.create("/work/app", tmp_path) as session:
        path = _write(session)
        assert session.dialect is OMP_13_19
    assert json.loads(path.read_bytes().split(b"\n")[0])["type"] == "session"


def test_auto_new_file_in_an_omp18_store_gets_the_slot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OMP_SESSION_DIALECT", raising=False)
    shutil.copyfile(CORPUS18 / "api-basic.jsonl", tmp_path / "existing.jsonl")
    with SessionManager.create("/work/app", tmp_path) as session:
        assert session.dialect is OMP_18_3  # auto: the newest omp 18 we know
        assert starts_with_slot(_write(session))


def test_auto_keeps_a_slotless_file_slotless_on_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OMP_SESSION_DIALECT", raising=False)
    shutil.copyfile(CORPUS18 / "api-basic.jsonl", tmp_path / "omp18.jsonl")  # the store has slot files
    legacy = tmp_path / "legacy.jsonl"
    shutil.copyfile(CORPUS18 / "legacy-1319-v3-labels.jsonl", legacy)
    with SessionManager.open(legacy) as session:
        session.set_session_name("Renamed")
        session.append_message(user("more"))
    first = json.loads(legacy.read_bytes().split(b"\n")[0])
    assert first["type"] == "session" and first["title"] == "Renamed"  # what omp 13.19 can read


def test_explicit_18_adds_a_slot_to_a_legacy_file_on_rename(tmp_path: Path) -> None:
    legacy = tmp_path / "legacy.jsonl"
    shutil.copyfile(CORPUS18 / "legacy-1319-v3-labels.jsonl", legacy)
    with SessionManager.open(legacy, dialect="18") as session:
        session.append_message(user("more"))  # a plain append first: still slot-less
        assert not starts_with_slot(legacy)
        session.set_session_name("Now slotted")
    assert starts_with_slot(legacy)
    with SessionManager.open(legacy, dialect="13") as session:
        assert session.get_session_name() == "Now slotted"


def test_explicit_13_keeps_a_slot_it_finds(tmp_path: Path) -> None:
    path = tmp_path / "omp18.jsonl"
    shutil.copyfile(CORPUS18 / "api-renamed-twice.jsonl", path)
    with SessionManager.open(path, dialect="13") as session:
        assert session.get_session_name() == "User picked title"
        session.set_session_name("Line\nbreak kept by 13.19")
    assert starts_with_slot(path)
    with SessionManager.open(path) as session:
        assert session.get_session_name() == "Line\nbreak kept by 13.19"


def test_malformed_lines_dropped_by_the_omp18_rewrite_are_kept_in_a_backup(tmp_path: Path) -> None:
    path = tmp_path / "input.jsonl"
    shutil.copyfile(CORPUS18 / "v3-noslot-malformed.jsonl", path)
    original = path.read_bytes()
    with SessionManager.open(path, dialect="18") as session:
        session.append_message(user("probe"))
    assert starts_with_slot(path)
    backups = list(tmp_path.glob("input.jsonl.malformed.bak*"))
    assert len(backups) == 1 and backups[0].read_bytes() == original


def test_check_repair_and_migrate_understand_the_slot(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    shutil.copyfile(CORPUS18 / "v1-with-slot.jsonl", path)
    assert [(p.kind, p.severity) for p in check(path)] == [("old-version", "info")]
    assert migrate_file(path) == 1
    assert starts_with_slot(path) and check(path) == []
    short = tmp_path / "short.jsonl"
    shutil.copyfile(CORPUS18 / "slot-short-unpadded.jsonl", short)
    assert [p.kind for p in check(short)] == ["title-slot"]
    report = repair(short)
    assert any("title slot" in change for change in report.changes)
    assert check(short) == [] and len(short.read_bytes().split(b"\n")[0]) + 1 == SLOT_BYTES
    slot_title = json.loads(short.read_bytes().split(b"\n")[0])["title"]
    with SessionManager.open(short) as session:
        assert session.get_session_name() == (slot_title or None)


def test_large_slotted_file_opens_through_the_offset_index_with_its_slot_title(tmp_path: Path) -> None:
    session = SessionManager.create("/work/app", tmp_path, dialect="18")
    path = _write(session)
    for i in range(400):
        session.append_message(user("x" * 1000 + str(i)))
    session.set_session_name("Before", "user")
    session.close()
    with SessionManager.open(path) as first:  # full load; writes the offset index
        assert first.get_session_name() == "Before"
    with SessionManager.open(path) as second:  # served by the index: the slot is folded in too
        assert second.get_session_name() == "Before" and second.get_header()["title"] == "Before"
        assert second.dialect is OMP_18_3  # omp 18's context rules over the lazy index
        assert len(second.build_session_context().messages) == 402
        second.set_session_name("After", "user")  # in place: the index must notice
    with SessionManager.open(path, read_only=True) as third:
        assert third.get_session_name() == "After"
        assert len(third.get_entries()) == 404


def test_listing_shows_slot_titles_and_stays_correct_after_rename(tmp_path: Path) -> None:
    shutil.copyfile(CORPUS18 / "api-renamed-twice.jsonl", tmp_path / "a.jsonl")
    shutil.copyfile(CORPUS18 / "legacy-1319-header-title-parent.jsonl", tmp_path / "b.jsonl")
    titles = {Path(i.path).name: i.title for i in list_sessions(tmp_path)}
    assert titles["a.jsonl"] == "User picked title"
    assert titles["b.jsonl"] == "Refactor the parser"
    with SessionManager.open(tmp_path / "a.jsonl") as session:
        session.set_session_name("Renamed in place", "user")
    os.utime(tmp_path / "a.jsonl")
    titles = {Path(i.path).name: i.title for i in list_sessions(tmp_path)}  # cached rows re-read
    assert titles["a.jsonl"] == "Renamed in place"


def test_omp18_listing_reads_a_prefix_and_reports_size_and_status(tmp_path: Path) -> None:
    shutil.copyfile(CORPUS18 / "api-renamed-twice.jsonl", tmp_path / "a.jsonl")
    with SessionManager.create("/work/app", tmp_path, dialect="18") as session:
        session.append_message(user("pending question"))
        session.ensure_on_disk()
    infos = SessionManager.list("/work/app", tmp_path, dialect="18")
    by_title = {info.title: info for info in infos}
    listed = by_title["User picked title"].to_dict()
    assert listed["size"] == (tmp_path / "a.jsonl").stat().st_size and listed["status"] == "complete"
    pending = [info for info in infos if info.title is None]
    assert len(pending) == 1 and pending[0].status == "pending"
    assert [i.modified for i in infos] == sorted((i.modified for i in infos), reverse=True)


def test_model_usage_counts_only_under_18(tmp_path: Path) -> None:
    session = SessionManager.in_memory("/work/app", dialect="18")
    session.append_message(user("q"))
    owner = session.append_message(assistant("a", usage=usage(10, 5, 0.01)))
    side = session.append_model_usage("title", "x", "p", "m", usage(3, 1, 0.002), "stop")
    assert side is not None and session.get_leaf_id() == side
    assert (
        session.append_model_usage("t", "x", "p", "m", usage(1, 1, 0.1), "stop", session_id="other") is None
    )
    totals = session.get_usage_statistics().to_dict()
    assert totals["input"] == 13 and totals["cost"] == pytest.approx(0.012)
    entries = session.get_entries()
    legacy = SessionManager.in_memory("/work/app", dialect="13")
    for entry in entries:
        legacy._persistence.append(dict(entry))  # the same entries, read with 13.19's rules
    assert legacy.get_usage_statistics().to_dict()["input"] == 10
    assert owner in {e["id"] for e in entries}
