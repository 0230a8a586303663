"""The omp 18 SessionManager API (omp18-differences §9) beyond what the corpus pins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from omp_session import SessionManager
from omp_session.format.ids import iso_to_ms
from omp_session.format.title_slot import SLOT_BYTES
from omp_session.manager.workspace import WorkspaceError
from tests.helpers import assistant, usage, user


def _session(tmp_path: Path) -> SessionManager:
    session = SessionManager.create("/work/app", tmp_path, dialect="18")
    session.append_message(user("q"))
    session.append_message(assistant("a", usage=usage(10, 5, 0.01)))
    return session


def test_create_empty_session_file_and_peek_session_init(tmp_path: Path) -> None:
    path = Path(SessionManager.create_empty_session_file("/work/app", tmp_path, dialect="18"))
    lines = path.read_bytes().split(b"\n")
    assert len(lines[0]) + 1 == SLOT_BYTES and json.loads(lines[0])["title"] == ""
    assert list(json.loads(lines[1])) == ["type", "version", "id", "timestamp", "cwd"]
    with SessionManager.open(path, dialect="18") as session:
        session.append_session_init("one", "task 1", ["read"])
        session.append_session_init("two", "task 2", ["grep"], agent="scout", read_only=True)
    peeked = SessionManager.peek_session_init(path)
    assert peeked is not None and peeked["cwd"] == "/work/app"
    assert peeked["init"]["task"] == "task 2" and peeked["init"]["agent"] == "scout"
    assert list(peeked["init"])[-3:] == ["tools", "agent", "readOnly"]


def test_atomic_batch_is_one_rewrite_and_rolls_back_on_failure(tmp_path: Path) -> None:
    session = _session(tmp_path)
    path = Path(str(session.get_session_file()))
    before, entries = path.read_bytes(), session.get_entries()

    def failing() -> None:
        session.append_custom_entry("batch", {"i": 1})
        assert path.read_bytes() == before  # nothing written during the batch
        raise RuntimeError("tool failed")

    with pytest.raises(RuntimeError):
        session.append_entries_atomically(failing)
    assert session.get_entries() == entries and path.read_bytes() == before
    ids = session.append_entries_atomically(
        lambda: [session.append_custom_entry("batch", {"i": 2}), session.append_reset_boundary()]
    )
    on_disk = [json.loads(line) for line in path.read_bytes().splitlines()[2:]]
    assert [e["id"] for e in on_disk[-2:]] == ids and session.get_leaf_id() == ids[-1]
    session.close()


def test_capture_and_restore_state(tmp_path: Path) -> None:
    session = _session(tmp_path)
    state = session.capture_state()
    session.set_session_name("Named", "user")
    session.append_message(user("later"))
    session.restore_state(state)
    assert session.get_session_name() is None and len(session.get_entries()) == 2
    assert "title" not in session.get_header()
    session.close()


def test_discard_entry_keeps_other_children(tmp_path: Path) -> None:
    session = _session(tmp_path)
    question = session.get_entries()[0]["id"]
    session.discard_entry_durably(question)  # it has an assistant child: kept
    marker = session.get_leaf_entry()
    assert marker is not None and marker["type"] == "branch_summary" and marker["summary"] == ""
    assert marker["details"] == {"kind": "discarded-entry-branch", "discardedEntryId": question}
    assert question in {e["id"] for e in session.get_entries()}
    session.close()


def test_workspace_directories(tmp_path: Path) -> None:
    session = _session(tmp_path)
    with pytest.raises(WorkspaceError):
        session.add_workspace_directory("/work/app")
    assert session.add_workspace_directory("../lib") == "/work/lib"
    assert session.add_workspace_directory("/work/lib") is None
    path = Path(str(session.get_session_file()))
    assert json.loads(path.read_bytes().split(b"\n")[1])["additionalDirectories"] == ["/work/lib"]
    assert session.remove_workspace_directory("/work/lib") == "/work/lib"
    assert "additionalDirectories" not in json.loads(path.read_bytes().split(b"\n")[1])
    session.close()


def test_credential_pins_follow_the_branch(tmp_path: Path) -> None:
    session = _session(tmp_path)
    session.append_credential_pin("anthropic", "h1")
    session.append_message(assistant("b", timestamp=9_000_000_000_000))
    pins = session.get_credential_pins()
    assert pins["anthropic"]["hash"] == "h1" and pins["anthropic"]["lastUsedAt"] == 9_000_000_000_000
    session.reset_leaf()
    assert session.get_credential_pins() == {}
    session.close()


def test_sealed_session_drops_appends_and_renames(tmp_path: Path) -> None:
    session = _session(tmp_path)
    path = Path(str(session.get_session_file()))
    before = path.read_bytes()
    session.seal()
    session.append_message(user("dropped"))
    assert session.set_session_name("ignored") is False
    assert path.read_bytes() == before
    session.close()


def test_signed_blocks_are_written_verbatim_only_under_18(tmp_path: Path) -> None:
    long_thinking = "t" * 600_000
    message = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": long_thinking, "thinkingSignature": "sig"},
            {"type": "text", "text": long_thinking},
        ],
        "provider": "anthropic",
        "model": "m",
        "stopReason": "stop",
        "timestamp": 1,
    }
    written = {}
    for dialect in ("13", "18"):
        session = SessionManager.create("/work/app", tmp_path / dialect, dialect=dialect)
        session.append_message(message)
        path = Path(str(session.get_session_file()))
        session.close()
        last = json.loads(path.read_bytes().splitlines()[-1])
        written[dialect] = last["message"]["content"]
    assert written["18"][0]["thinking"] == long_thinking  # signed: never cut
    assert len(written["13"][0]["thinking"]) < len(long_thinking)
    for dialect in ("13", "18"):  # an unsigned block is cut by both
        assert written[dialect][1]["text"].endswith("[Session persistence truncated large content]")


def test_omp18_works_in_the_process_cwd_when_the_recorded_one_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    gone = str(tmp_path / "deleted-project")
    path = tmp_path / "s.jsonl"
    with SessionManager.create(gone, tmp_path, dialect="18") as session:
        session.append_message(user("q"))
        session.append_message(assistant("a"))
        path = Path(str(session.get_session_file()))
    with SessionManager.open(path, dialect="18") as session:
        assert session.get_cwd() == str(tmp_path) and session.get_recorded_cwd() == gone
    with SessionManager.open(path, dialect="13") as session:
        assert session.get_cwd() == gone


@pytest.mark.parametrize("dialect", ["18.2", "18.3"])
def test_anthropic_server_compaction_and_context_rollover_replay(dialect: str) -> None:
    session = SessionManager.in_memory("/work/app", dialect=dialect)
    session.append_message(user("the request"))
    kept = session.append_message(assistant("working"))
    state = {"anthropicCompaction": {"provider": "anthropic", "content": "summary", "encryptedContent": "x"}}
    rollover = {"kind": "experimental-context-rollover"}
    compaction = session.append_compaction("S", None, kept, 100, rollover, None, state)
    messages = session.build_session_context().messages
    summary = messages[0]
    assert summary["providerPayload"] == {
        "type": "anthropicCompaction",
        "provider": "anthropic",
        "content": "summary",
        "encryptedContent": "x",
    }
    kept_entry = session.get_entry(kept)
    assert kept_entry is not None
    kept_ms = iso_to_ms(kept_entry["timestamp"])
    assert kept_ms is not None
    compaction_entry = session.get_entry(compaction)
    assert compaction_entry is not None
    if dialect == "18.2":
        assert summary["timestamp"] == kept_ms - 1  # just before the kept tail
        assert "historyRewriteAt" not in summary
    else:  # omp 18.3: the summary keeps its own time; the marker predates the kept tail
        assert summary["timestamp"] == iso_to_ms(compaction_entry["timestamp"])
        assert summary["historyRewriteAt"] == kept_ms - 1
    # omp's key order: ... tokensBefore, providerPayload, [historyRewriteAt,] timestamp
    assert list(summary)[-3:] == (
        ["tokensBefore", "providerPayload", "timestamp"]
        if dialect == "18.2"
        else ["providerPayload", "historyRewriteAt", "timestamp"]
    )
    # the rollover re-sends the user request the kept tail starts after, then the kept tail
    assert [m["role"] for m in messages] == ["compactionSummary", "user", "assistant"]
    assert messages[1]["content"] == "the request"
    legacy = SessionManager.in_memory("/work/app", dialect="13")
    for entry in session.get_entries():
        legacy._persistence.append(dict(entry))
    assert [m["role"] for m in legacy.build_session_context().messages] == ["compactionSummary", "assistant"]
