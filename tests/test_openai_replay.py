"""OpenAI Responses replay history per dialect (omp18-differences.md §5.5, reference §6.6).

omp 13.19 drops an assistant message's ``providerPayload`` (``openaiResponsesHistory``) and its
thinking signatures on load; omp 18 keeps them (only a ``github-copilot`` message loses them, and
that makes its next write a full rewrite) and, on every write, leaves out a thinking signature
whose reasoning item the payload already carries. The recorded omp 18.2.3 case is in
tests/omp1823_recorded (``openai-signature-1319-under-18``); these cover the paths around it: the
lazy and cold opens of large files, auto mode, the copilot rewrite and the write rule on appends.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from omp_session import SessionManager
from omp_session.format.title_slot import SLOT_BYTES

HEADER = {"type": "session", "version": 3, "id": "r1", "timestamp": "2026-02-10T14:45:00.000Z", "cwd": "/w"}
REASONING = {"type": "reasoning", "id": "rs_1", "encrypted_content": "blob-1", "summary": []}


def assistant(
    entry_id: str, parent: str | None, provider: str = "openai", covered: bool = True
) -> dict[str, Any]:
    other = {**REASONING, "id": "rs_x", "encrypted_content": "other"}
    signature = json.dumps(REASONING if covered else other)
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-02-10T14:45:02.000Z",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hm", "thinkingSignature": signature},
                {"type": "text", "text": "answer"},
            ],
            "api": "openai-responses",
            "provider": provider,
            "model": "gpt-5",
            "stopReason": "stop",
            "timestamp": 1,
            "providerPayload": {"type": "openaiResponsesHistory", "provider": provider, "items": [REASONING]},
        },
    }


def user(entry_id: str, parent: str | None, text: str = "q") -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-02-10T14:45:01.000Z",
        "message": {"role": "user", "content": text, "timestamp": 1},
    }


def write(path: Path, entries: list[dict[str, Any]], *, big: bool = False, slot: bool = False) -> Path:
    lines = [json.dumps(HEADER, separators=(",", ":"))]
    if big:  # past the offset index's threshold: opened cold, then through the index
        parent = entries[-1]["id"]
        for number in range(600):
            entries = [*entries, user(f"pad{number}", parent, "x" * 500)]
            parent = f"pad{number}"
    lines += [json.dumps(entry, separators=(",", ":")) for entry in entries]
    data = "\n".join(lines) + "\n"
    if slot:
        title = (
            '{"type":"title","v":1,"title":"t","source":"user","updatedAt":"2026-02-10T14:45:00.000Z","pad":"'
        )
        data = title + " " * (SLOT_BYTES - len(title) - 3) + '"}\n' + data
    path.write_text(data, encoding="utf-8")
    return path


def first_assistant(session: SessionManager) -> dict[str, Any]:
    message: dict[str, Any] = session.get_entries()[1]["message"]
    return message


@pytest.mark.parametrize("big", [False, True], ids=["small", "indexed"])
@pytest.mark.parametrize(("dialect", "kept"), [("13", False), ("18.2", True), ("18.3", True)])
def test_replay_is_kept_on_load_by_omp18_only(tmp_path: Path, dialect: str, kept: bool, big: bool) -> None:
    path = write(tmp_path / "s.jsonl", [user("u1", None), assistant("a1", "u1")], big=big)
    for _open in range(2):  # (a large file: the cold open, then the open through its index)
        message = first_assistant(SessionManager.open(path, read_only=True, dialect=dialect))
        assert ("providerPayload" in message) is kept
        assert ("thinkingSignature" in message["content"][0]) is kept


@pytest.mark.parametrize("big", [False, True], ids=["small", "indexed"])
def test_auto_mode_keeps_replay_in_a_file_with_a_title_slot_only(tmp_path: Path, big: bool) -> None:
    entries = [user("u1", None), assistant("a1", "u1")]
    with_slot = write(tmp_path / "slot.jsonl", entries, big=big, slot=True)
    without = write(tmp_path / "plain.jsonl", entries, big=big)
    assert "providerPayload" in first_assistant(SessionManager.open(with_slot, read_only=True))
    assert "providerPayload" not in first_assistant(SessionManager.open(without, read_only=True))


def test_omp18_writes_a_covered_signature_once_and_memory_keeps_it(tmp_path: Path) -> None:
    path = tmp_path / "new.jsonl"
    session = SessionManager.open(path, dialect="18.2")
    session.append_message(user("u", None)["message"])
    for covered in (True, False):
        session.append_message(assistant("x", None, covered=covered)["message"])
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]
    written = [line["message"] for line in lines if line.get("type") == "message"][1:]
    assert "thinkingSignature" not in written[0]["content"][0]  # the payload carries its item
    assert "thinkingSignature" in written[1]["content"][0]  # another item: kept
    assert all("providerPayload" in message for message in written)
    assert all("thinkingSignature" in e["message"]["content"][0] for e in session.get_entries()[1:])


def test_omp13_writes_what_it_is_given(tmp_path: Path) -> None:
    path = tmp_path / "new.jsonl"
    session = SessionManager.open(path, dialect="13")
    session.append_message(user("u", None)["message"])
    session.append_message(assistant("x", None)["message"])
    last = json.loads(path.read_text(encoding="utf-8").splitlines()[-1])
    assert "thinkingSignature" in last["message"]["content"][0]


@pytest.mark.parametrize("big", [False, True], ids=["small", "indexed"])
def test_a_dropped_copilot_replay_makes_the_next_omp18_write_a_rewrite_with_a_backup(
    tmp_path: Path, big: bool
) -> None:
    path = write(
        tmp_path / "s.jsonl",
        [user("u1", None), assistant("a1", "u1", provider="github-copilot"), assistant("a2", "a1")],
        big=big,
    )
    original = path.read_bytes()
    if big:  # index it first: the open through the index must still see the copilot rule
        SessionManager.open(path, read_only=True, dialect="18.2")
    session = SessionManager.open(path, dialect="18.2")
    copilot, other = session.get_entries()[1]["message"], session.get_entries()[2]["message"]
    assert "providerPayload" not in copilot and "thinkingSignature" not in copilot["content"][0]
    assert "providerPayload" in other
    session.append_message({"role": "user", "content": "next", "timestamp": 2})
    session.close()
    assert path.with_name("s.jsonl.replay.bak").read_bytes() == original  # we keep what omp drops
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    messages = {line["id"]: line["message"] for line in lines if line.get("type") == "message"}
    assert "providerPayload" not in messages["a1"]
    assert "providerPayload" in messages["a2"] and "thinkingSignature" not in messages["a2"]["content"][0]


def test_a_copilot_file_under_omp13_is_appended_to_as_before(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", [user("u1", None), assistant("a1", "u1", provider="github-copilot")])
    original = path.read_bytes()
    session = SessionManager.open(path, dialect="13")
    session.append_message({"role": "user", "content": "next", "timestamp": 2})
    session.close()
    assert path.read_bytes().startswith(original)  # 13.19 strips in memory only: no rewrite
    assert not path.with_name("s.jsonl.replay.bak").exists()


def test_a_fork_keeps_the_replay_under_omp18(tmp_path: Path) -> None:
    source = write(tmp_path / "src.jsonl", [user("u1", None), assistant("a1", "u1")])
    for dialect, kept in (("18.2", True), ("13", False)):
        fork = SessionManager.fork_from(source, tmp_path / "cwd", tmp_path / dialect, dialect=dialect)
        message = [e for e in fork.get_entries() if e.get("type") == "message"][1]["message"]
        assert ("providerPayload" in message) is kept


@pytest.mark.parametrize(("dialect", "kept"), [("13", False), ("18.2", True)])
def test_a_followers_refresh_reads_appended_lines_as_an_open_would(
    tmp_path: Path, dialect: str, kept: bool
) -> None:
    path = write(tmp_path / "s.jsonl", [user("u1", None)])
    follower = SessionManager.open(path, read_only=True, dialect=dialect)
    with path.open("ab") as handle:  # omp appends a turn
        handle.write(json.dumps(assistant("a1", "u1"), separators=(",", ":")).encode() + b"\n")
    (added,) = follower.refresh()
    assert ("providerPayload" in added["message"]) is kept
    reopened = first_assistant(SessionManager.open(path, read_only=True, dialect=dialect))
    assert added["message"] == reopened
