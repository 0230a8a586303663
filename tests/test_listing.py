"""omp_session.tools.listing and the listing factories (spec §6.9; checklist 21–27, 58)."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from omp_session import SessionInfo, SessionManager
from omp_session.format.codec import encode_line
from omp_session.store.paths import legacy_encode
from omp_session.tools.listing import (
    find_most_recent_session,
    list_all_sessions,
    list_sessions,
    message_text,
    session_info,
)
from tests.helpers import HEADER, assistant, entry, msg, user, write_session


def session_file(directory: Path, name: str, mtime: float, header: dict[str, Any] | None = None) -> Path:
    path = write_session(
        directory / name, [msg("u", None, user(name))], {**HEADER, "id": name, **(header or {})}
    )
    os.utime(path, (mtime, mtime))
    return path


# -- find_most_recent_session (checklist 21–27) --------------------------------------------------


def test_most_recent_in_empty_or_missing_dir(tmp_path: Path) -> None:
    assert find_most_recent_session(tmp_path) is None  # 21
    assert find_most_recent_session(tmp_path / "missing") is None  # 22


def test_most_recent_ignores_other_files_and_invalid_headers(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text('{"type":"session","id":"x"}\n')  # 23
    os.utime(tmp_path / "notes.txt", (9e9, 9e9))
    (tmp_path / "bad.jsonl").write_text('{"type":"message","id":"m"}\n')  # 24
    (tmp_path / "dir.jsonl").mkdir()
    assert find_most_recent_session(tmp_path) is None
    only = session_file(tmp_path, "only.jsonl", 1000)  # 25
    assert find_most_recent_session(tmp_path) == only


def test_most_recent_by_mtime_skipping_invalid_newer_files(tmp_path: Path) -> None:
    session_file(tmp_path, "a.jsonl", 1000)
    newest = session_file(tmp_path, "b.jsonl", 3000)
    session_file(tmp_path, "c.jsonl", 2000)
    assert find_most_recent_session(tmp_path) == newest  # 26
    invalid = tmp_path / "z.jsonl"
    invalid.write_text("garbage\n")
    os.utime(invalid, (5000, 5000))
    (tmp_path / "numeric-id.jsonl").write_text('{"type":"session","id":5}\n')
    os.utime(tmp_path / "numeric-id.jsonl", (6000, 6000))
    assert find_most_recent_session(tmp_path) == newest  # 27


def test_most_recent_accepts_a_header_longer_than_4096_bytes(tmp_path: Path) -> None:
    session_file(tmp_path, "old.jsonl", 1000)
    long = session_file(tmp_path, "long.jsonl", 2000, {"title": "T" * 10_000})
    assert len((tmp_path / "long.jsonl").read_bytes().split(b"\n")[0]) > 4096
    assert find_most_recent_session(tmp_path) == long


# -- continue_recent -----------------------------------------------------------------------------


def test_continue_recent_opens_the_newest_valid_session(tmp_path: Path) -> None:
    session_file(tmp_path, "old.jsonl", 1000)
    session_file(tmp_path, "long.jsonl", 2000, {"title": "T" * 10_000})
    broken = tmp_path / "broken.jsonl"
    broken.write_text("{not json\n")
    os.utime(broken, (3000, 3000))
    with SessionManager.continue_recent("/proj", tmp_path) as session:
        assert session.get_session_id() == "long.jsonl"
        assert session.get_session_name() == "T" * 10_000
        session.append_message(user("continued"))  # loaded sessions persist at once
    assert (tmp_path / "long.jsonl").read_bytes().count(b"\n") == 3
    assert broken.read_text() == "{not json\n"


def test_continue_recent_without_sessions_creates_one(tmp_path: Path) -> None:
    with SessionManager.continue_recent("/proj", tmp_path) as session:
        assert session.get_entries() == [] and session.get_cwd() == "/proj"
        path = session.get_session_file()
        assert path is not None and Path(path).parent == tmp_path and not Path(path).exists()


# -- SessionInfo ---------------------------------------------------------------------------------


def test_session_info_fields(tmp_path: Path) -> None:
    entries = [
        msg(
            "u1",
            None,
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "first"},
                    {"type": "image"},
                    {"type": "text", "text": "question"},
                ],
                "timestamp": 1,
            },
        ),
        msg("a1", "u1", assistant("answer")),
        entry(
            "c1",
            "a1",
            "compaction",
            summary="s",
            shortSummary="older short",
            firstKeptEntryId="u1",
            tokensBefore=1,
        ),
        msg(
            "t1",
            "c1",
            {
                "role": "toolResult",
                "toolCallId": "x",
                "toolName": "bash",
                "content": [],
                "isError": False,
                "timestamp": 1,
            },
        ),
        msg("u2", "u1", user("")),  # another branch; empty text is not in allMessagesText
        entry("c2", "u2", "compaction", summary="s", shortSummary="newest short", tokensBefore=1),
        entry("c3", "c2", "compaction", summary="s", tokensBefore=1),  # no shortSummary: does not reset
    ]
    header = {**HEADER, "parentSession": "/old/file.jsonl"}
    path = write_session(tmp_path / "s.jsonl", entries, header)
    os.utime(path, (1_700_000_000.5, 1_700_000_000.5))
    info = session_info(path)
    assert info is not None
    assert (info.path, info.id, info.cwd) == (str(path), "sess-1", "/work/proj")
    assert info.title == "newest short"
    assert info.parent_session_path == "/old/file.jsonl"
    assert info.created == datetime(2025, 6, 2, 14, 0, tzinfo=timezone.utc)
    assert info.modified == datetime.fromtimestamp(1_700_000_000.5, timezone.utc)  # 58: file mtime
    assert info.message_count == 4
    assert info.first_message == "first question"
    assert info.all_messages_text == "first question answer"
    assert info.to_dict() == {
        "path": str(path),
        "id": "sess-1",
        "cwd": "/work/proj",
        "title": "newest short",
        "parentSessionPath": "/old/file.jsonl",
        "created": "2025-06-02T14:00:00.000Z",
        "modified": "2023-11-14T22:13:20.500Z",
        "messageCount": 4,
        "firstMessage": "first question",
        "allMessagesText": "first question answer",
    }


def test_session_info_header_title_wins_and_defaults(tmp_path: Path) -> None:
    entries = [entry("c", None, "compaction", summary="s", shortSummary="short", tokensBefore=1)]
    titled = session_info(write_session(tmp_path / "a.jsonl", entries, {**HEADER, "title": "Header title"}))
    assert titled is not None and titled.title == "Header title"
    bare_header = {"type": "session", "id": "x", "cwd": 42}
    bare = session_info(write_session(tmp_path / "b.jsonl", [msg("u", None, user(""))], bare_header))
    assert bare is not None
    assert (bare.cwd, bare.title, bare.parent_session_path, bare.created) == ("", None, None, None)
    assert bare.first_message == "(no messages)" and bare.all_messages_text == "" and bare.message_count == 1
    assert "title" not in bare.to_dict() and bare.to_dict()["created"] is None


@pytest.mark.parametrize(
    "content",
    [b"", b"garbage\n", b'{"type":"session","id":""}\n', b'{"type":"message","id":"m"}\n'],
)
def test_session_info_of_non_sessions(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(content)
    assert session_info(path) is None
    assert session_info(tmp_path / "missing.jsonl") is None


def test_message_text() -> None:
    assert message_text({"content": "plain"}) == "plain"
    blocks = [
        {"type": "text", "text": "a"},
        {"type": "thinking", "thinking": "no"},
        {"type": "text", "text": "b"},
        "junk",
    ]
    assert message_text({"content": blocks}) == "a b"
    assert message_text({"content": None}) == "" and message_text({}) == ""


# -- list / list_all -----------------------------------------------------------------------------


def test_list_newest_first_skips_invalid_and_unwritten(tmp_path: Path) -> None:
    session_file(tmp_path, "a.jsonl", 1000)
    session_file(tmp_path, "c.jsonl", 3000)
    session_file(tmp_path, "b.jsonl", 2000)
    (tmp_path / "corrupt.jsonl").write_text("nope\n")
    unwritten = SessionManager.create("/proj", tmp_path)
    unwritten.append_message(user("never answered"))
    infos = SessionManager.list("/proj", tmp_path)
    assert [i.id for i in infos] == ["c.jsonl", "b.jsonl", "a.jsonl"]
    assert all(isinstance(i, SessionInfo) for i in infos)
    assert list_sessions(tmp_path / "missing") == []


def test_list_all_covers_every_project_but_not_artifact_dirs(isolated_agent_dir: Path) -> None:
    root = isolated_agent_dir / "sessions"
    session_file(root / "-proj-a", "a.jsonl", 1000)
    session_file(root / "-proj-b", "b.jsonl", 2000)
    artifact = root / "-proj-b" / "b"
    session_file(artifact, "subagent.jsonl", 3000)  # sub-agent session inside the artifact dir
    (root / "stray.jsonl").write_bytes(encode_line(HEADER))  # not inside a project dir
    assert [i.id for i in SessionManager.list_all()] == ["b.jsonl", "a.jsonl"]
    assert [i.id for i in list_all_sessions(root)] == ["b.jsonl", "a.jsonl"]
    assert list_all_sessions(root / "missing") == []


def test_list_for_a_cwd_uses_its_default_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / "proj").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    with SessionManager.create(home / "proj") as session:
        session.append_message(assistant())
        assert Path(session.get_session_dir()).name == "-proj"
    (info,) = SessionManager.list(home / "proj")
    assert info.cwd == str(home / "proj")


def test_home_tmp_and_temp_root_collide_but_keep_their_cwds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ~/tmp/x and $TMPDIR/x both map to "-tmp-x" (§9 #17): both sessions share the directory and
    # are told apart by the cwd in their headers.
    home, temp = tmp_path / "home", tmp_path / "tmproot"
    (home / "tmp" / "x").mkdir(parents=True)
    (temp / "x").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TMPDIR", str(temp))
    cwds = [str(home / "tmp" / "x"), str(temp / "x")]
    directories = set()
    for cwd in cwds:
        with SessionManager.create(cwd) as session:
            session.append_message(assistant(cwd))
            directories.add(Path(session.get_session_dir()).name)
    assert directories == {"-tmp-x"}
    assert sorted(i.cwd for i in SessionManager.list(cwds[0])) == sorted(cwds)
    with SessionManager.continue_recent(cwds[1]) as session:
        assert session.get_cwd() in cwds


def test_legacy_directory_is_migrated_and_its_sessions_found(
    tmp_path: Path, isolated_agent_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / "proj").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    root = isolated_agent_dir / "sessions"
    legacy = root / f"--{legacy_encode(home / 'proj')}--"
    old = session_file(legacy, "old.jsonl", 1000, {"cwd": str(home / "proj")})
    old_bytes = old.read_bytes()
    (info,) = SessionManager.list(home / "proj")
    assert Path(info.path) == root / "-proj" / "old.jsonl"
    assert Path(info.path).read_bytes() == old_bytes and not legacy.exists()
    with SessionManager.continue_recent(home / "proj") as session:
        assert session.get_session_id() == "old.jsonl"


@pytest.mark.parametrize(
    ("stamps", "newest"),
    [
        (
            ["2025-06-02T14:00:00.000Z", "2025-06-03T09:30:00.250Z", "2025-06-01T00:00:00.000Z"],
            "2025-06-03T09:30:00.250Z",
        ),
        (
            ["2025-06-02T14:00:00.000Z", "2025-06-04T08:00:00+02:00"],
            "2025-06-04T06:00:00.000Z",
        ),  # not canonical
        (
            ["2025-06-02T14:00:00.000Z", "2025-13-40T99:00:00.000Z"],
            "2025-06-02T14:00:00.000Z",
        ),  # shaped, invalid
        (["2025-13-40T99:00:00.000Z", 17, None], None),
    ],
)
def test_last_activity_is_the_newest_entry_time(
    tmp_path: Path, stamps: list[Any], newest: str | None
) -> None:
    entries = [{**msg(f"m{n}", None, user("x")), "timestamp": stamp} for n, stamp in enumerate(stamps)]
    path = write_session(tmp_path / "s.jsonl", entries)
    os.utime(path, (1_700_000_000, 1_700_000_000))
    info = session_info(path)
    assert info is not None
    expected = datetime.fromisoformat(newest.replace("Z", "+00:00")) if newest else info.modified
    assert info.last_activity == expected
