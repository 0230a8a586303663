"""Artifacts, blobs and the small §5/§6.6 helpers of the manager."""

from __future__ import annotations

from pathlib import Path

import pytest

from omp_session import PersistenceError, SessionError, SessionManager, UnsafeNameError


def test_artifacts_are_numbered_in_the_session_directory(tmp_path: Path) -> None:
    with SessionManager.create("/p", tmp_path) as session:
        session.append_message({"role": "user", "content": "q", "timestamp": 1})
        session.ensure_on_disk()
        directory = Path(str(session.get_artifacts_dir()))
        assert directory == Path(str(session.get_session_file())).with_suffix("")
        directory.mkdir()
        (directory / "7.bash.log").write_text("old")
        first = session.save_artifact("output one", "bash")
        slot = session.allocate_artifact_path("python")
        assert first == "8" and slot is not None and slot.id == "9"
        assert slot.path == directory / "9.python.log"
        assert Path(str(session.get_artifact_path("8"))).read_text() == "output one"
        assert session.get_artifact_path("42") is None
        with pytest.raises(ValueError):
            session.allocate_artifact_path("../../escape")


@pytest.mark.parametrize("tool_type", ["../../escape", "a/b", "nul\0", "x" * 300])
def test_save_artifact_refuses_an_unsafe_tool_type_with_the_library_error(
    tmp_path: Path, tool_type: str
) -> None:
    with SessionManager.create("/p", tmp_path) as session:
        session.append_message({"role": "user", "content": "q", "timestamp": 1})
        session.ensure_on_disk()
        directory = Path(str(session.get_artifacts_dir()))
        with pytest.raises(UnsafeNameError, match="unsafe file name") as caught:
            session.save_artifact("output", tool_type)
        assert isinstance(caught.value, SessionError) and isinstance(caught.value, ValueError)
        assert not directory.exists()  # refused before anything was created
        assert sorted(p.name for p in tmp_path.rglob("*")) == [Path(str(session.get_session_file())).name]
        assert session.save_artifact("fine", "bash") == "0"  # the refused call used no number


def test_save_artifact_write_failure_is_a_persistence_error(tmp_path: Path) -> None:
    with SessionManager.create("/p", tmp_path) as session:
        session.append_message({"role": "user", "content": "q", "timestamp": 1})
        session.ensure_on_disk()
        directory = Path(str(session.get_artifacts_dir()))
        directory.write_text("a file where the artifact directory should be")
        with pytest.raises(PersistenceError, match=str(directory)):
            session.save_artifact("output", "bash")


def test_save_artifact_writes_surrogates_as_javascript_does(tmp_path: Path) -> None:
    with SessionManager.create("/p", tmp_path) as session:
        session.append_message({"role": "user", "content": "q", "timestamp": 1})
        session.ensure_on_disk()
        artifact_id = session.save_artifact("lone \udc80 pair \ud83d\ude00", "bash")
        written = Path(str(session.get_artifact_path(artifact_id))).read_bytes()
        assert written == "lone \ufffd pair \U0001f600".encode()


def test_in_memory_artifacts_stay_in_memory(tmp_path: Path) -> None:
    session = SessionManager.in_memory("/p")
    assert session.get_artifacts_dir() is None and session.allocate_artifact_path("bash") is None
    assert [session.save_artifact("a", "bash"), session.save_artifact("b", "bash")] == ["0", "1"]
    assert session.get_artifact_path("0") is None


def test_put_blob_is_content_addressed(isolated_agent_dir: Path) -> None:
    session = SessionManager.in_memory("/p")
    blob = session.put_blob(b"\x89PNG data")
    assert blob.ref == f"blob:sha256:{blob.hash}" and blob.path.read_bytes() == b"\x89PNG data"
    assert blob.path.parent == isolated_agent_dir / "blobs"


def test_ttsr_rules_and_last_model_change_role() -> None:
    session = SessionManager.in_memory("/p")
    assert session.get_injected_ttsr_rules() == [] and session.get_last_model_change_role() is None
    session.append_ttsr_injection(["b", "a"])
    session.append_model_change("openai/gpt-5", "smol")
    session.append_ttsr_injection(["a", "c", "b"])
    assert session.get_injected_ttsr_rules() == ["b", "a", "c"]
    assert session.get_last_model_change_role() == "smol"
    session.append_model_change("anthropic/claude")
    assert session.get_last_model_change_role() == "default"


def test_rewrite_entries_persists_in_place_changes(tmp_path: Path) -> None:
    with SessionManager.create("/p", tmp_path) as session:
        session.append_message({"role": "user", "content": "q", "timestamp": 1})
        result = session.append_message(
            {
                "role": "toolResult",
                "toolCallId": "c",
                "toolName": "bash",
                "isError": False,
                "timestamp": 2,
                "content": [{"type": "text", "text": "x" * 1000}],
            }
        )
        session.ensure_on_disk()
        entry = session.get_entry(result)
        assert entry is not None
        entry["message"]["prunedAt"] = 3
        entry["message"]["content"] = [{"type": "text", "text": "pruned"}]
        session.rewrite_entries()
        path = session.get_session_file()
    reloaded = SessionManager.open(str(path), read_only=True).get_entry(result)
    assert reloaded is not None and reloaded["message"]["prunedAt"] == 3
