"""Whole-session operations (spec §6.5, §6.6): create_branched_session, fork, fork_from, with the
exact file contents and header key orders they write (checklist 36, 37, 55, 56)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from omp_session import CorruptSessionError, SessionManager, SessionNotFoundError
from omp_session.format.codec import encode_line
from omp_session.store.paths import default_session_dir
from tests.helpers import assistant, contents, ids, read_lines, user

CORPUS = Path(__file__).parent / "conformance" / "load"
IMAGE = {"type": "image", "data": "QUFB" * 300, "mimeType": "image/png"}


def file_of(session: SessionManager) -> Path:
    path = session.get_session_file()
    assert path is not None
    return Path(path)


@pytest.fixture
def named(tmp_path: Path) -> SessionManager:
    """A persisted, named session: u1 a1 u2 a2 with a side branch and labels."""
    session = SessionManager.create("/proj", tmp_path)
    u1 = session.append_message(user("u1"))
    a1 = session.append_message(assistant("a1"))
    session.append_message(user("u2"))
    session.append_message(assistant("a2"))
    session.branch(u1)
    side = session.append_message(assistant("side"))
    session.append_label_change(a1, "on path")
    session.append_label_change(side, "off path")
    session.set_session_name("The name")
    return session


# -- create_branched_session ---------------------------------------------------------------------


def test_branched_session_file_contents(named: SessionManager, tmp_path: Path) -> None:
    old = file_of(named)
    old_bytes = old.read_bytes()
    u1, a1, u2, a2 = ids(named.get_entries()[:4])
    new = named.create_branched_session(a2)
    assert new is not None and Path(new) == file_of(named) and Path(new).parent == tmp_path
    lines = read_lines(Path(new))
    header = lines[0]
    assert list(header) == ["type", "version", "id", "timestamp", "cwd", "parentSession"]
    assert header["parentSession"] == str(old) and header["id"] == named.get_session_id()
    assert "title" not in header and named.get_session_name() == "The name"
    assert ids(lines[1:5]) == [u1, a1, u2, a2]
    (label,) = lines[5:]
    assert (label["type"], label["targetId"], label["label"], label["parentId"]) == (
        "label",
        a1,
        "on path",
        a2,
    )
    assert Path(new).read_bytes() == encode_line(named.get_header()) + b"".join(
        encode_line(e) for e in named.get_entries()
    )
    assert old.read_bytes() == old_bytes  # the old file is untouched
    named.close()


def test_branched_session_without_assistant_is_written_at_once_then_defers(tmp_path: Path) -> None:
    """Checklist 55 (13.19.0: written at once) and §7.2 (held again until an assistant arrives)."""
    session = SessionManager.create("/proj", tmp_path)
    u1 = session.append_message(user("u1"))
    session.append_message(assistant("a1"))
    new = Path(session.create_branched_session(u1) or "")
    assert [line["type"] for line in read_lines(new)] == ["session", "message"]
    session.append_message(user("held"))
    assert len(read_lines(new)) == 2
    session.append_message(assistant("now"))
    lines = read_lines(new)
    assert [line["type"] for line in lines] == ["session", "message", "message", "message"]
    assert len({line["id"] for line in lines}) == 4  # one header, unique ids
    session.close()


def test_branched_session_with_assistant_on_path_keeps_appending(tmp_path: Path) -> None:
    """Checklist 56."""
    session = SessionManager.create("/proj", tmp_path)
    session.append_message(user("u1"))
    a1 = session.append_message(assistant("a1"))
    new = Path(session.create_branched_session(a1) or "")
    session.append_message(user("u2"))
    assert [line["type"] for line in read_lines(new)] == ["session", "message", "message", "message"]
    session.close()


def test_branched_session_applies_the_persistence_transform(tmp_path: Path) -> None:
    # omp writes the branched file raw (§9 #15); we externalise images like every other write.
    session = SessionManager.create("/proj", tmp_path)
    u1 = session.append_message({"role": "user", "content": [IMAGE], "timestamp": 1})
    session.append_message(assistant())
    new = Path(session.create_branched_session(u1) or "")
    (image,) = read_lines(new)[1]["message"]["content"]
    assert image["data"].startswith("blob:sha256:")
    session.close()


def test_branched_session_of_an_opened_file_persists_every_append(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = SessionManager.open(path)
    u1 = session.append_message(user("u1"))
    new = Path(session.create_branched_session(u1) or "")
    session.append_message(user("u2"))  # no assistant anywhere, but loaded sessions are on disk
    assert len(read_lines(new)) == 3
    session.close()


# -- fork ----------------------------------------------------------------------------------------


def test_fork_copies_every_branch_into_a_new_file(named: SessionManager) -> None:
    old = file_of(named)
    old_bytes = old.read_bytes()
    old_id = named.get_session_id()
    entries = named.get_entries()
    result = named.fork()
    assert result is not None and result.old_session_file == str(old)
    new = Path(result.new_session_file)
    assert new != old and new.parent == old.parent and file_of(named) == new
    lines = read_lines(new)
    assert list(lines[0]) == ["type", "version", "id", "title", "timestamp", "cwd", "parentSession"]
    assert lines[0]["parentSession"] == old_id and lines[0]["title"] == "The name"
    assert lines[0]["id"] == named.get_session_id() != old_id
    assert lines[1:] == entries  # same ids, every branch, labels included
    assert old.read_bytes() == old_bytes
    extra = named.append_message(user("after fork"))
    assert read_lines(new)[-1]["id"] == extra and old.read_bytes() == old_bytes
    named.close()


def test_fork_without_title_and_before_any_write(tmp_path: Path) -> None:
    session = SessionManager.create("/proj", tmp_path)
    session.append_message(user("only a prompt"))
    result = session.fork()
    assert result is not None
    lines = read_lines(Path(result.new_session_file))
    assert list(lines[0]) == ["type", "version", "id", "timestamp", "cwd", "parentSession"]
    assert [line["type"] for line in lines] == ["session", "message"]  # written even without assistant
    assert not Path(result.old_session_file or "").exists()
    session.close()


def test_fork_in_memory_returns_none() -> None:
    session = SessionManager.in_memory("/proj")
    session.append_message(user())
    assert session.fork() is None and session.get_session_file() is None


# -- fork_from -----------------------------------------------------------------------------------


def test_fork_from_copies_a_source_file(named: SessionManager, tmp_path: Path) -> None:
    source = file_of(named)
    named.close()
    source_bytes = source.read_bytes()
    target_dir = tmp_path / "elsewhere"
    forked = SessionManager.fork_from(source, "/other/cwd", target_dir)
    new = file_of(forked)
    assert new.parent == target_dir and forked.get_cwd() == "/other/cwd"
    lines = read_lines(new)
    assert list(lines[0]) == ["type", "version", "id", "timestamp", "cwd", "parentSession", "title"]
    assert lines[0]["parentSession"] == read_lines(source)[0]["id"]
    assert lines[0]["title"] == "The name" and lines[0]["cwd"] == "/other/cwd"
    assert lines[1:] == read_lines(source)[1:]
    assert source.read_bytes() == source_bytes
    forked.append_message(user("more"))  # the fork is on disk: appended at once
    assert read_lines(new)[-1]["message"]["content"] == "more"
    forked.close()


def test_fork_from_a_v1_source_writes_v3_and_leaves_the_source(tmp_path: Path) -> None:
    source = tmp_path / "v1.jsonl"
    shutil.copyfile(CORPUS / "v1-linear-compaction-index.jsonl", source)
    source_bytes = source.read_bytes()
    forked = SessionManager.fork_from(source, "/p", tmp_path / "out")
    lines = read_lines(file_of(forked))
    assert lines[0]["version"] == 3 and all(isinstance(line.get("id"), str) for line in lines)
    assert "title" not in lines[0]
    assert source.read_bytes() == source_bytes
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "v1.jsonl"]  # no backup of the source
    forked.close()


def test_fork_from_default_directory_of_the_cwd(tmp_path: Path) -> None:
    source = tmp_path / "s.jsonl"
    with SessionManager.open(source) as session:
        session.append_message(user())
    cwd = tmp_path / "project"
    forked = SessionManager.fork_from(source, cwd)
    assert file_of(forked).parent == default_session_dir(cwd)
    forked.close()


def test_fork_from_missing_or_corrupt_source_raises(tmp_path: Path) -> None:
    # omp silently creates an empty session here (§9 #19).
    with pytest.raises(SessionNotFoundError):
        SessionManager.fork_from(tmp_path / "missing.jsonl", "/p", tmp_path / "out")
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"not a header\n")
    with pytest.raises(CorruptSessionError):
        SessionManager.fork_from(bad, "/p", tmp_path / "out")
    assert bad.read_bytes() == b"not a header\n"
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


def test_fork_from_keeps_images_by_reference(tmp_path: Path) -> None:
    source = tmp_path / "s.jsonl"
    with SessionManager.open(source) as session:
        session.append_message({"role": "user", "content": [IMAGE], "timestamp": 1})
    ref = read_lines(source)[1]["message"]["content"][0]["data"]
    forked = SessionManager.fork_from(source, "/p", tmp_path / "out")
    assert forked.get_entries()[0]["message"]["content"][0]["data"] == IMAGE["data"]
    assert read_lines(file_of(forked))[1]["message"]["content"][0]["data"] == ref
    forked.close()


def test_context_after_fork_is_unchanged(named: SessionManager) -> None:
    before = named.build_session_context().to_dict()
    named.fork()
    assert named.build_session_context().to_dict() == before
    assert contents(named.build_session_context().messages) == ["u1", "A:side"]
    named.close()


def test_whole_session_operations_refuse_on_a_read_only_session(tmp_path: Path) -> None:
    from omp_session import ReadOnlySessionError

    with SessionManager.create("/p", tmp_path) as writer:
        first = writer.append_message({"role": "user", "content": "q", "timestamp": 1})
        writer.ensure_on_disk()
        path = writer.get_session_file()
    assert path is not None
    before = Path(path).read_bytes()
    reader = SessionManager.open(path, read_only=True)
    for attempt in (
        lambda: reader.create_branched_session(first),
        reader.fork,
        reader.new_session,
        lambda: reader.set_session_name("x"),
        reader.ensure_on_disk,
        lambda: reader.append_message({"role": "user", "content": "no", "timestamp": 2}),
    ):
        with pytest.raises(ReadOnlySessionError):
            attempt()
    assert reader.get_session_file() == path and reader.get_session_name() is None
    assert sorted(p.name for p in tmp_path.iterdir()) == [Path(path).name]
    assert Path(path).read_bytes() == before


def test_a_failed_fork_leaves_the_session_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno
    import os

    from omp_session import PersistenceError

    with SessionManager.create("/p", tmp_path) as session:
        session.append_message({"role": "user", "content": "q", "timestamp": 1})
        session.ensure_on_disk()
        path = session.get_session_file()

        def no_space(*args: object) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(os, "replace", no_space)
        monkeypatch.setattr(os, "link", no_space)  # a new file is created by link, never replaced
        with pytest.raises(PersistenceError):
            session.fork()
        with pytest.raises(PersistenceError):
            session.set_session_name("new")
        monkeypatch.undo()
        assert session.get_session_file() == path and session.get_session_name() is None
        assert "title" not in session.get_header()
        session.append_message({"role": "user", "content": "still here", "timestamp": 2})
    assert [p.name for p in tmp_path.glob("*.jsonl")] == [Path(str(path)).name]


def test_move_to_renames_file_and_artifacts_into_the_new_project(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    old_dir = default_session_dir("/work/old", root)
    with SessionManager.create("/work/old", old_dir) as session:
        session.append_message(user("q"))
        session.append_message(assistant("a"))
        session.save_artifact("log", "bash")
        old_file = Path(str(session.get_session_file()))
        session.move_to("/work/new")
        new_file = Path(str(session.get_session_file()))
        assert new_file.parent == default_session_dir("/work/new", root) and new_file.name == old_file.name
        assert not old_file.exists() and not old_file.with_suffix("").exists()
        assert (new_file.with_suffix("") / "0.bash.log").read_text() == "log"
        assert session.get_cwd() == "/work/new" and session.get_header()["cwd"] == "/work/new"
        session.append_message(user("after the move"))
        session.move_to("/work/new/")  # the same directory: nothing happens
        assert session.get_session_file() == str(new_file)
    reloaded = SessionManager.open(new_file, read_only=True)
    assert reloaded.get_header()["cwd"] == "/work/new"
    assert contents(reloaded.build_session_context().messages) == ["q", "A:a", "after the move"]


def test_move_to_before_anything_was_written_only_changes_the_place(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    with SessionManager.create("/work/old", default_session_dir("/work/old", root)) as session:
        session.append_message(user("held"))
        session.move_to("/work/elsewhere")
        session.append_message(assistant("now written"))
        path = Path(str(session.get_session_file()))
    assert path.parent == default_session_dir("/work/elsewhere", root)
    assert SessionManager.open(path, read_only=True).get_header()["cwd"] == "/work/elsewhere"
