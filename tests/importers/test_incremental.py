"""A growing Claude transcript (a live session) is brought up to date from where the import stopped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from omp_session.importers.persist import import_session
from omp_session.importers.stores import make_store
from omp_session.manager import SessionManager

SESSION = "5e551011-0000-4000-8000-00000000c001"
BASE = {"cwd": "/home/dev/app", "sessionId": SESSION, "isSidechain": False, "userType": "external"}


def _user(n: int, parent: str | None, content: Any) -> dict[str, Any]:
    return {
        **BASE,
        "type": "user",
        "uuid": f"u{n}",
        "parentUuid": parent,
        "timestamp": f"2026-01-01T00:00:{n:02d}.000Z",
        "message": {"role": "user", "content": content},
    }


def _assistant(n: int, parent: str, block: dict[str, Any], response: str) -> dict[str, Any]:
    message: dict[str, Any] = {
        "id": response,
        "model": "claude-x",
        "content": [block],
        "stop_reason": None,
        "usage": {},
    }
    return {
        **BASE,
        "type": "assistant",
        "uuid": f"a{n}",
        "parentUuid": parent,
        "timestamp": f"2026-01-01T00:00:{n:02d}.000Z",
        "message": message,
    }


def _first_part() -> list[dict[str, Any]]:
    call = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}
    return [
        _user(1, None, "list the files"),
        _assistant(2, "u1", {"type": "text", "text": "Listing."}, "msg_1"),
        _assistant(3, "a2", call, "msg_1"),
        {**BASE, "type": "progress", "uuid": "p4", "parentUuid": "a3", "data": {"type": "hook_progress"}},
        {"type": "file-history-snapshot", "messageId": "a3", "snapshot": {}},
    ]


def _second_part() -> list[dict[str, Any]]:
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt", "is_error": False}
    return [
        _user(5, "p4", [result]),  # answers a call made before the update: its name is looked up
        _assistant(6, "u5", {"type": "text", "text": "One file."}, "msg_2"),
        _user(7, "a2", "no, start over"),  # a rewind to a record of the first part: a new branch
        {"type": "custom-title", "customTitle": "Files", "sessionId": SESSION},
    ]


def _write(path: Path, records: list[dict[str, Any]], mode: str = "w") -> None:
    with open(path, mode) as handle:
        handle.write("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records))


def _entries(path: Path) -> list[dict[str, Any]]:
    """The session's entries without the import markers and titles (fresh ids and times), and
    without the time of records that have none (omp gives them the transcript's mtime)."""
    lines = [json.loads(line) for line in path.read_text().splitlines()[2:]]
    kept = [
        e for e in lines if e["type"] != "title_change" and e.get("customType") != "foreign_session_import"
    ]
    for entry in kept:
        if entry.get("customType") == "claude_record" and "timestamp" not in entry["data"]["record"]:
            del entry["timestamp"]
    return kept


def _setup(tmp_path: Path) -> tuple[Path, Any, Path]:
    transcript = tmp_path / ".claude" / "projects" / "-home-dev-app" / f"{SESSION}.jsonl"
    transcript.parent.mkdir(parents=True)
    store = make_store("claude", env={"HOME": str(tmp_path)})
    return transcript, store, tmp_path / "sessions"


def test_an_update_reads_only_the_appended_records_and_matches_a_whole_import(tmp_path: Path) -> None:
    transcript, store, root = _setup(tmp_path)
    _write(transcript, _first_part())
    first = import_session(store, store.info_for(str(transcript)), root=root, session_dir=root / "p")
    assert first.status == "imported" and first.path is not None
    before = first.path.read_bytes()

    unchanged = import_session(store, store.info_for(str(transcript)), root=root, session_dir=root / "p")
    assert unchanged.status == "unchanged" and unchanged.converted.stats.records == 0  # nothing read
    assert first.path.read_bytes() == before

    _write(transcript, _second_part(), "a")
    grown = import_session(store, store.info_for(str(transcript)), root=root, session_dir=root / "p")
    assert (grown.status, grown.path) == ("updated", first.path)
    assert grown.converted.stats.records == len(_second_part())  # only the appended lines were read
    after = first.path.read_bytes()
    assert after[256:].startswith(before[256:])  # nothing written is changed (but the title slot)

    # the same entries, ids and tree as importing the grown transcript in one go
    whole = import_session(store, store.info_for(str(transcript)), root=tmp_path / "fresh")
    assert whole.path is not None
    assert _entries(first.path) == _entries(whole.path)
    by_id = {e["id"]: e for e in _entries(first.path)}
    result = next(e["message"] for e in by_id.values() if e.get("message", {}).get("role") == "toolResult")
    assert result["toolName"] == "Bash"
    rewind = next(e for e in by_id.values() if e["id"].startswith("claude-u7-"))
    assert rewind["parentId"] == "claude-a2-message-2"  # the last entry record a2 became
    with SessionManager.open(first.path) as session:
        assert session.get_session_name() == "Files"
        assert session.build_session_context().messages[-1]["content"] == "no, start over"

    # and the update after that continues again from its own record
    _write(transcript, [_user(8, "u7", "thanks")], "a")
    third = import_session(store, store.info_for(str(transcript)), root=root, session_dir=root / "p")
    assert third.status == "updated" and third.converted.stats.records == 1
    whole = import_session(store, store.info_for(str(transcript)), root=tmp_path / "fresh2")
    assert whole.path is not None and _entries(first.path) == _entries(whole.path)


def test_a_rewritten_transcript_is_not_continued(tmp_path: Path) -> None:
    transcript, store, root = _setup(tmp_path)
    _write(transcript, _first_part())
    first = import_session(store, store.info_for(str(transcript)), root=root, session_dir=root / "p")
    records = _first_part()
    records[0]["message"]["content"] = "list every file"  # an edit before the recorded offset
    _write(transcript, records + _second_part())
    again = import_session(store, store.info_for(str(transcript)), root=root, session_dir=root / "p")
    assert again.status == "reimported" and again.path != first.path
    assert again.converted.stats.records == len(records) + len(_second_part())  # read whole


def test_a_line_still_being_written_is_read_whole_by_the_next_update(tmp_path: Path) -> None:
    transcript, store, root = _setup(tmp_path)
    _write(transcript, _first_part())
    partial = json.dumps(_second_part()[0], separators=(",", ":"))
    with open(transcript, "a") as handle:
        handle.write(partial[:40])  # Claude Code is writing the next record
    first = import_session(store, store.info_for(str(transcript)), root=root, session_dir=root / "p")
    assert first.status == "imported" and first.converted.stats.skipped_lines == [6]
    with open(transcript, "a") as handle:
        handle.write(partial[40:] + "\n")
    _write(transcript, _second_part()[1:], "a")
    grown = import_session(store, store.info_for(str(transcript)), root=root, session_dir=root / "p")
    assert grown.status == "updated"
    whole = import_session(store, store.info_for(str(transcript)), root=tmp_path / "fresh")
    assert first.path is not None and whole.path is not None
    assert _entries(first.path) == _entries(whole.path)


def test_a_transcript_renamed_while_it_is_imported_gets_the_header_it_ends_with(tmp_path: Path) -> None:
    """A streaming import writes the header it expects first; when the transcript changes under
    it (Claude Code renames the session meanwhile) the file is rewritten with the right one."""
    from omp_session.importers.base import ForeignSessionInfo, HeaderHint
    from omp_session.importers.claude import ClaudeSessionStore
    from omp_session.importers.persist import persist_new, persist_streaming

    transcript, _, root = _setup(tmp_path)
    _write(transcript, _first_part())

    class RenamedMeanwhile(ClaudeSessionStore):
        def header_hint(self, info: ForeignSessionInfo) -> HeaderHint | None:
            hint = super().header_hint(info)
            _write(
                transcript, [{"type": "custom-title", "customTitle": "Renamed", "sessionId": SESSION}], "a"
            )
            return hint

    store = RenamedMeanwhile(env={"HOME": str(tmp_path)})
    info = store.info_for(str(transcript))
    path, _, converted = persist_streaming(store, info, session_dir=root / "p")
    assert converted.title == "Renamed"
    with SessionManager.open(path) as session:
        assert session.get_session_name() == "Renamed"
    assert [p.name for p in (root / "p").iterdir()] == [path.name]  # no temp file left behind
    again, _ = persist_new(store.convert(info), info, session_dir=root / "q")
    assert _entries(path) == _entries(again)
    assert path.read_bytes().index(b"\n") == again.read_bytes().index(b"\n") == 255


def test_an_update_gives_a_repeated_uuid_the_id_a_whole_import_gives(tmp_path: Path) -> None:
    transcript, store, root = _setup(tmp_path)
    repeated = {**BASE, "type": "progress", "uuid": "dup", "parentUuid": "u1", "data": {"n": 1}}
    _write(transcript, [_user(1, None, "hi"), repeated])
    first = import_session(store, store.info_for(str(transcript)), root=root, session_dir=root / "p")
    _write(transcript, [{**repeated, "data": {"n": 2}}, _user(3, "dup", "again")], "a")
    grown = import_session(store, store.info_for(str(transcript)), root=root, session_dir=root / "p")
    assert grown.status == "updated" and grown.converted.stats.records == 2
    whole = import_session(store, store.info_for(str(transcript)), root=tmp_path / "fresh")
    assert first.path is not None and whole.path is not None
    assert _entries(first.path) == _entries(whole.path)
    assert "claude-dup-record-2" in {e["id"] for e in _entries(first.path)}
