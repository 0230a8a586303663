"""The pi store, persisting imports, and idempotent re-imports (real files throughout)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from omp_session import SessionManager
from omp_session.errors import ForeignSessionError
from omp_session.format.title_slot import SLOT_BYTES
from omp_session.importers.persist import find_imports, import_session
from omp_session.importers.pi import PiSessionStore
from omp_session.importers.stores import make_store
from tests.importers import corpus
from tests.importers.helpers import write_pi_session


def test_pi_listing_reads_the_header(tmp_path: Path) -> None:
    path = write_pi_session(tmp_path)
    (path.parent / "notes.jsonl").write_text('{"not":"a session"}\n')
    infos = PiSessionStore(tmp_path / ".pi" / "agent").list()
    assert [(i.id, i.cwd, i.path) for i in infos] == [
        ("3f1c2a9e-5b7d-4c1e-9a2b-0d4e6f8a1b2c", "/home/carol/notes", str(path))
    ]


def test_pi_import_keeps_entries_and_reads_models_and_names(tmp_path: Path) -> None:
    path = write_pi_session(tmp_path)
    store = PiSessionStore(tmp_path / ".pi" / "agent")
    converted = store.convert(store.info_for(str(path)))
    original = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    assert [e["id"] for e in converted.entries] == [e["id"] for e in original]
    model_change = converted.entries[0]
    assert model_change["model"] == "anthropic/claude-sonnet-4-5"
    assert (model_change["provider"], model_change["modelId"]) == ("anthropic", "claude-sonnet-4-5")
    assert converted.entries[1:] == original[1:]  # every other entry verbatim, unknown types included
    assert converted.title == "Garden notes" and converted.title_source == "user"
    context = converted.context()
    assert context.models == {"default": "anthropic/claude-sonnet-4-5"}
    assert [m["content"][0]["text"] for m in context.messages if m["role"] == "assistant"] == [
        "A second answer."
    ]


def test_pi_file_without_header_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "x.jsonl"
    bad.write_text('{"type":"message"}\n')
    store = PiSessionStore(tmp_path)
    with pytest.raises(ForeignSessionError, match="no session header"):
        store.convert(store.info_for(str(bad)))


def test_persisted_import_opens_as_an_omp_session(tmp_path: Path) -> None:
    staged, _ = corpus.stage("claude", "titles_custom_wins", tmp_path)
    store = make_store("claude", env={"HOME": str(tmp_path)})
    outcome = import_session(
        store,
        store.info_for(str(staged)),
        root=tmp_path / "sessions",
        session_dir=tmp_path / "sessions" / "p",
    )
    assert outcome.status == "imported" and outcome.path is not None
    data = outcome.path.read_bytes()
    assert data.index(b"\n") + 1 == SLOT_BYTES
    with SessionManager.open(outcome.path) as session:
        assert session.get_session_name() == "My CI session"
        entries = session.get_entries()
        assert entries[-1]["customType"] == "foreign_session_import"
        assert entries[-1]["data"]["sourcePath"] == str(staged)
        assert session.get_leaf_id() == entries[-1]["id"]


def test_import_is_idempotent_and_appends_only_what_is_new(tmp_path: Path) -> None:
    staged, _ = corpus.stage("claude", "plain_chat", tmp_path)
    store = make_store("claude", env={"HOME": str(tmp_path)})
    root = tmp_path / "sessions"
    first = import_session(store, store.info_for(str(staged)), root=root, session_dir=root / "p")
    assert first.status == "imported"
    before = first.path.read_bytes() if first.path else b""
    again = import_session(store, store.info_for(str(staged)), root=root, session_dir=root / "p")
    assert (again.status, again.added, again.path) == ("unchanged", 0, first.path)
    assert len(list((root / "p").iterdir())) == 1
    assert first.path is not None and first.path.read_bytes() == before
    # the source grows by one turn
    last = json.loads(staged.read_text().splitlines()[-1])
    turn = {
        **last,
        "type": "user",
        "uuid": "c1a0de01-0000-4000-8000-0000000000ff",
        "parentUuid": last["uuid"],
        "message": {"role": "user", "content": "And the tests?"},
    }
    with open(staged, "a") as handle:
        handle.write(json.dumps(turn) + "\n")
    grown = import_session(store, store.info_for(str(staged)), root=root, session_dir=root / "p")
    assert (grown.status, grown.path) == ("updated", first.path)
    after = first.path.read_bytes()
    assert after.startswith(before)
    added = [json.loads(line) for line in after[len(before) :].splitlines()]
    assert added[0].get("id") == "claude-c1a0de01-0000-4000-8000-0000000000ff-message-5"
    assert added[-1]["customType"] == "foreign_session_import"
    assert added[0]["parentId"] == "claude-c1a0de01-0000-4000-8000-000000000004-message-4"
    with SessionManager.open(first.path) as session:
        assert session.build_session_context().messages[-1]["content"] == "And the tests?"


def test_a_rewritten_source_is_imported_afresh(tmp_path: Path) -> None:
    """A later Codex rollback renumbers omp's ids: the earlier import is left as it is."""
    staged, _ = corpus.stage("codex", "rollback", tmp_path)
    full = staged.read_text()
    staged.write_text("".join(full.splitlines(keepends=True)[:9]))  # before the first rollback
    store = make_store("codex", env={"HOME": str(tmp_path)})
    root = tmp_path / "sessions"
    first = import_session(store, store.info_for(str(staged)), root=root, session_dir=root / "p")
    staged.write_text(full)
    again = import_session(store, store.info_for(str(staged)), root=root, session_dir=root / "p")
    assert (
        again.status == "reimported" and again.path != first.path and "converts differently" in again.reason
    )
    assert first.path is not None and first.path.exists()
    assert find_imports(root)[("codex", str(staged))] == again.path


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    staged, _ = corpus.stage("claude", "plain_chat", tmp_path)
    store = make_store("claude", env={"HOME": str(tmp_path)})
    outcome = import_session(
        store, store.info_for(str(staged)), root=tmp_path / "s", session_dir=tmp_path / "s", dry_run=True
    )
    assert outcome.status == "imported" and outcome.dry_run
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("case", corpus.cases("claude"))
def test_streaming_conversion_hands_over_exactly_the_entries(tmp_path: Path, case: str) -> None:
    """Draining after every record gives the same entries, in the same order, as a whole conversion."""
    from omp_session.errors import ForeignSessionError
    from omp_session.importers.base import file_mtime_ms
    from omp_session.importers.claude_convert import convert_claude

    staged, _ = corpus.stage("claude", case, tmp_path)
    store = make_store("claude", env={"HOME": str(tmp_path)})
    info = store.info_for(str(staged))
    streamed: list[dict] = []  # type: ignore[type-arg]
    try:
        whole = convert_claude(info, mtime_ms=file_mtime_ms(str(staged)))
    except ForeignSessionError:
        with pytest.raises(ForeignSessionError):
            convert_claude(info, mtime_ms=file_mtime_ms(str(staged)), sink=streamed.extend, drain_every=1)
        return
    result = convert_claude(info, mtime_ms=file_mtime_ms(str(staged)), sink=streamed.extend, drain_every=1)
    assert result.entries == []
    assert streamed == whole.entries
    assert (result.leaf_id, result.title, result.cwd) == (whole.leaf_id, whole.title, whole.cwd)


def test_streaming_persist_writes_what_persist_new_writes(tmp_path: Path) -> None:
    from omp_session.importers.persist import persist_new, persist_streaming

    staged, _ = corpus.stage("claude", "split_blocks_shared_message_id", tmp_path)
    store = make_store("claude", env={"HOME": str(tmp_path)})
    info = store.info_for(str(staged))
    fallback = str(tmp_path)
    one, _ = persist_new(store.convert(info), info, session_dir=tmp_path / "a", fallback_cwd=fallback)
    two, _, _ = persist_streaming(store, info, session_dir=tmp_path / "b", fallback_cwd=fallback)

    def body(path: Path) -> list[str]:  # everything but the slot, the header and the fresh marker id/time
        lines = path.read_text().splitlines()
        return [*lines[2:-1], json.dumps(json.loads(lines[-1])["data"])]

    assert body(one) == body(two)
    assert one.read_bytes().index(b"\n") == two.read_bytes().index(b"\n") == 255


def test_pi_listing_shows_the_last_session_name_as_title(tmp_path: Path) -> None:
    path = write_pi_session(tmp_path)
    store = PiSessionStore(tmp_path / ".pi" / "agent")
    assert [i.title for i in store.list()] == ["Garden notes"]
    last = json.loads(path.read_text().splitlines()[-1])["id"]

    def append(entry: dict) -> None:  # type: ignore[type-arg]
        with open(path, "a") as handle:
            handle.write(json.dumps(entry, separators=(",", ":")) + "\n")

    named = {
        "type": "session_info",
        "id": "ab12cd34",
        "parentId": last,
        "timestamp": "2026-01-02T00:00:00.000Z",
    }
    append({**named, "name": "Renamed garden"})
    append({**named, "id": "ab12cd35", "name": ""})  # an empty name is no name
    text = {"role": "user", "content": '{"type":"session_info","name":"not a rename"}'}
    append(
        {
            "type": "message",
            "id": "ab12cd36",
            "parentId": "ab12cd35",
            "timestamp": named["timestamp"],
            "message": text,
        }
    )
    [info] = store.list()
    assert info.title == "Renamed garden"
    assert info.title == store.convert(info).title  # the listing and the import agree
    path.write_text(path.read_text().splitlines()[0] + "\n")  # a header alone: no title
    assert [i.title for i in store.list()] == [None]


@pytest.mark.parametrize("case", corpus.cases("claude"))
def test_the_header_hint_is_what_the_conversion_finds(tmp_path: Path, case: str) -> None:
    from omp_session.errors import ForeignSessionError

    staged, _ = corpus.stage("claude", case, tmp_path)
    store = make_store("claude", env={"HOME": str(tmp_path)})
    info = store.info_for(str(staged))
    hint = store.header_hint(info)
    try:
        converted = store.convert(info)
    except ForeignSessionError:
        return
    if hint is not None:
        title_source = converted.title_source if converted.title else hint.title_source
        assert (hint.cwd, hint.title, hint.title_source) == (converted.cwd, converted.title, title_source)
