"""SessionManager persistence (spec §7): deferred writes, migration rewrite with backup, opening
missing/empty/corrupt files, torn-tail repair, read-only and locking (checklist 15–20, 28–31)."""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

import pytest

from omp_session import (
    CorruptSessionError,
    ReadOnlySessionError,
    SessionChangedError,
    SessionManager,
    SessionNotFoundError,
)
from omp_session.format.codec import TORN, encode_line
from omp_session.store.loading import load_session
from tests.helpers import HEADER, assistant, entry, ids, msg, read_lines, user, write_session

CORPUS = Path(__file__).parent / "conformance" / "load"


def copy_case(name: str, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(CORPUS / name, target)
    return target


def file_of(session: SessionManager) -> Path:
    path = session.get_session_file()
    assert path is not None
    return Path(path)


# -- deferred persistence (§7.2) -----------------------------------------------------------------


def test_nothing_is_written_until_the_first_assistant_message(tmp_path: Path) -> None:
    session = SessionManager.create("/proj", tmp_path)
    path = file_of(session)
    assert path.parent == tmp_path and path.name.endswith(f"_{session.get_session_id()}.jsonl")
    session.append_thinking_level_change("high")
    session.append_message(user("u1"))
    assert not path.exists() and list(tmp_path.iterdir()) == []
    session.append_message(assistant("a1"))
    expected = encode_line(session.get_header()) + b"".join(encode_line(e) for e in session.get_entries())
    assert path.read_bytes() == expected
    assert list(session.get_header()) == ["type", "version", "id", "timestamp", "cwd"]
    # later appends are plain appends: old bytes untouched, same inode
    inode = path.stat().st_ino
    session.append_message(user("u2"))
    assert path.read_bytes() == expected + encode_line(session.get_entries()[-1])
    assert path.stat().st_ino == inode
    session.close()


def test_an_assistant_on_another_branch_also_unlocks_writing(tmp_path: Path) -> None:
    session = SessionManager.create("/proj", tmp_path)
    u1 = session.append_message(user("u1"))
    session.append_message(assistant("a1"))
    session.branch(u1)
    session.append_message(user("side"))
    assert len(read_lines(file_of(session))) == 4
    session.close()


def test_ensure_on_disk_writes_now_and_persists_every_later_entry(tmp_path: Path) -> None:
    session = SessionManager.create("/proj", tmp_path)
    session.append_message(user("u1"))
    session.ensure_on_disk()
    path = file_of(session)
    assert [line.get("type") for line in read_lines(path)] == ["session", "message"]
    session.append_message(user("u2"))
    assert [line.get("type") for line in read_lines(path)] == ["session", "message", "message"]
    session.ensure_on_disk()  # already on disk: no rewrite
    assert len(read_lines(path)) == 3
    session.close()


def test_new_session_defers_again_and_keeps_the_old_file(tmp_path: Path) -> None:
    session = SessionManager.create("/proj", tmp_path)
    session.append_message(user("u1"))
    session.append_message(assistant("a1"))
    old = file_of(session)
    old_bytes = old.read_bytes()
    new = session.new_session(parent_session=str(old))
    assert new is not None and Path(new) != old and not Path(new).exists()
    assert session.get_entries() == [] and session.get_leaf_id() is None
    assert session.get_usage_statistics().to_dict()["input"] == 0
    header = session.get_header()
    assert list(header) == ["type", "version", "id", "timestamp", "cwd", "parentSession"]
    session.append_message(user("fresh"))
    assert not Path(new).exists()
    session.append_message(assistant("reply"))
    assert [line.get("type") for line in read_lines(Path(new))] == ["session", "message", "message"]
    assert old.read_bytes() == old_bytes
    session.close()


def test_new_session_without_parent_has_no_parent_key(tmp_path: Path) -> None:
    """Checklist 57 (13.19.0 form: ids are always generated): a fresh id, carried by the header."""
    session = SessionManager.create("/proj", tmp_path)
    old_id = session.get_session_id()
    new = session.new_session()
    assert "parentSession" not in session.get_header()
    assert session.get_session_id() == session.get_header()["id"] != old_id
    assert new is not None and new.endswith(f"_{session.get_session_id()}.jsonl")


# -- set_session_name ----------------------------------------------------------------------------


def test_session_name_before_the_file_exists_is_written_with_the_first_flush(tmp_path: Path) -> None:
    session = SessionManager.create("/proj", tmp_path)
    session.set_session_name("My session")
    assert not file_of(session).exists()
    session.append_message(assistant())
    header = read_lines(file_of(session))[0]
    assert list(header) == ["type", "version", "id", "timestamp", "cwd", "title"]
    assert header["title"] == "My session" == session.get_session_name()
    session.close()


def test_session_name_after_the_file_exists_rewrites_it(tmp_path: Path) -> None:
    session = SessionManager.create("/proj", tmp_path)
    session.append_message(user())
    session.append_message(assistant())
    path = file_of(session)
    lines_before = path.read_bytes().split(b"\n")
    session.set_session_name("line one\nline two")
    lines_after = path.read_bytes().split(b"\n")
    assert lines_after[1:] == lines_before[1:]
    assert read_lines(path)[0]["title"] == "line one\nline two"
    session.append_message(user("after rename"))
    assert read_lines(path)[-1]["message"]["content"] == "after rename"
    session.close()


# -- migration rewrite (§2.3) --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "version"), [("v1-linear-compaction-index.jsonl", 1), ("v2-hookmessage.jsonl", 2)]
)
def test_migrated_file_is_rewritten_on_the_next_write_with_a_backup(
    tmp_path: Path, case: str, version: int
) -> None:
    path = copy_case(case, tmp_path / "s.jsonl")
    original = path.read_bytes()
    session = SessionManager.open(path)
    assert path.read_bytes() == original  # not on open
    entries_in_memory = session.get_entries()
    new_id = session.append_message(user("probe"))
    backup = tmp_path / f"s.jsonl.v{version}.bak"
    assert backup.read_bytes() == original
    lines = read_lines(path)
    assert lines[0]["version"] == 3
    assert ids(lines[1:]) == [*ids(entries_in_memory), new_id]
    assert path.read_bytes() == encode_line(session.get_header()) + b"".join(
        encode_line(e) for e in session.get_entries()
    )
    # the next write is a plain append, with no second backup
    size = path.stat().st_size
    session.append_message(user("second"))
    assert path.read_bytes()[:size] == path.read_bytes()[:size] and path.stat().st_size > size
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl", f"s.jsonl.v{version}.bak"]
    session.close()
    reopened = SessionManager.open(path)
    assert ids(reopened.get_entries())[: len(entries_in_memory)] == ids(entries_in_memory)
    reopened.close()


def test_migrated_file_opened_and_closed_without_writes_stays_as_it_was(tmp_path: Path) -> None:
    path = copy_case("v1-model-change-legacy.jsonl", tmp_path / "s.jsonl")
    original = path.read_bytes()
    with SessionManager.open(path) as session:
        session.branch(session.get_entries()[0]["id"])
        session.build_session_context()
    assert path.read_bytes() == original
    assert [p.name for p in tmp_path.iterdir()] == ["s.jsonl"]


def test_existing_backup_is_never_overwritten(tmp_path: Path) -> None:
    path = copy_case("v2-hookmessage.jsonl", tmp_path / "s.jsonl")
    original = path.read_bytes()
    (tmp_path / "s.jsonl.v2.bak").write_bytes(b"older backup")
    with SessionManager.open(path) as session:
        session.append_message(user())
    assert (tmp_path / "s.jsonl.v2.bak").read_bytes() == b"older backup"
    backups = sorted(p for p in tmp_path.iterdir() if p.name.startswith("s.jsonl.v2.bak."))
    assert len(backups) == 1 and backups[0].read_bytes() == original


def test_v3_file_is_only_appended_to(tmp_path: Path) -> None:
    path = copy_case("malformed-middle-line.jsonl", tmp_path / "s.jsonl")
    original = path.read_bytes()
    with SessionManager.open(path) as session:
        new_id = session.append_message(user("probe"))
        assert len(session.get_load_issues()) == 3
    data = path.read_bytes()
    assert data.startswith(original)  # malformed lines stay on disk
    assert read_lines_tail(path)["id"] == new_id
    assert [p.name for p in tmp_path.iterdir()] == ["s.jsonl"]


def read_lines_tail(path: Path) -> dict[str, object]:
    import json

    tail: dict[str, object] = json.loads(path.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1])
    return tail


# -- open(): missing, empty, corrupt (checklist 15–20, 28–31 and §9 #1) ---------------------------


def test_open_missing_path_writes_a_header_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "sub" / "explicit-name.jsonl"
    path.parent.mkdir()
    session = SessionManager.open(path)
    assert file_of(session) == path  # checklist 30: explicit path kept
    (header,) = read_lines(path)
    assert list(header) == ["type", "version", "id", "timestamp", "cwd"]
    assert header["id"] == session.get_session_id() and header["cwd"] == str(tmp_path)
    assert session.get_session_dir() == str(path.parent)
    session.close()
    again = SessionManager.open(path)  # checklist 31: same id on re-open
    assert again.get_session_id() == header["id"]
    again.close()


@pytest.mark.parametrize("content", [b"", b"\n", b"  \n\t\r\n"])
def test_open_empty_or_blank_file_starts_a_session_there(tmp_path: Path, content: bytes) -> None:
    """Checklist 28: exactly one valid header whose id is the session id."""
    path = tmp_path / "empty.jsonl"
    path.write_bytes(content)
    with SessionManager.open(path) as session:
        (header,) = read_lines(path)
        assert header["id"] == session.get_session_id() and header["version"] == 3
        assert session.get_entries() == []


@pytest.mark.parametrize(
    ("content", "line"),
    [
        (b'{"type":"message","id":"m","parentId":null}\n', 1),  # headerless (checklist 29)
        (b'{"type":"session","id":42}\n', 1),  # non-string id
        (b'{"type":"session","version":3,"id":"x",\n{"type":"message"}\n', 1),  # malformed header
        (b"not json at all\n", 1),
        (b"\n\n[1,2]\n" + encode_line(HEADER), 3),  # a scalar before the header
    ],
)
def test_open_corrupt_header_raises_and_never_touches_the_file(
    tmp_path: Path, content: bytes, line: int
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    stat = path.stat()
    with pytest.raises(CorruptSessionError) as info:
        SessionManager.open(path)
    assert info.value.path == path and info.value.line == line
    assert str(path) in str(info.value)
    assert path.read_bytes() == content and path.stat().st_mtime_ns == stat.st_mtime_ns
    assert [p.name for p in tmp_path.iterdir()] == ["bad.jsonl"]


def test_garbage_line_before_the_header_is_skipped_like_omp(tmp_path: Path) -> None:
    # Bun's lenient parser skips an unparseable first line; the header is then the first value.
    path = tmp_path / "s.jsonl"
    content = b"garbage\n" + encode_line(HEADER) + encode_line(msg("u1", None, user()))
    path.write_bytes(content)
    with SessionManager.open(path, read_only=True) as session:
        assert session.get_session_id() == "sess-1" and ids(session.get_entries()) == ["u1"]
        assert [(i.line, i.reason) for i in session.get_load_issues()] == [(1, "malformed JSON")]
    assert path.read_bytes() == content


def test_open_directory_raises_corrupt(tmp_path: Path) -> None:
    directory = tmp_path / "dir.jsonl"
    directory.mkdir()
    with pytest.raises(CorruptSessionError, match="directory"):
        SessionManager.open(directory)


def test_load_session_variants(tmp_path: Path) -> None:
    """Checklist 15–20 for the loader (we raise where omp silently returns [])."""
    with pytest.raises(FileNotFoundError):
        load_session(tmp_path / "missing.jsonl")
    (tmp_path / "empty.jsonl").write_bytes(b"")
    with pytest.raises(CorruptSessionError):
        load_session(tmp_path / "empty.jsonl")
    good = write_session(
        tmp_path / "good.jsonl",
        [msg("u", None, user()), entry("t", "u", "thinking_level_change", thinkingLevel="low")],
    )
    loaded = load_session(good)
    assert [e["type"] for e in loaded.entries] == ["message", "thinking_level_change"]
    data = good.read_bytes().split(b"\n")
    good.write_bytes(b"\n".join([data[0], b"{broken", *data[1:]]))
    loaded = load_session(good)
    assert ids(loaded.entries) == ["u", "t"] and [i.line for i in loaded.issues] == [2]


# -- torn tails (§9 #2) --------------------------------------------------------------------------


def test_truncated_last_line_then_append_keeps_the_new_entry(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.jsonl", [msg("u1", None, user("u1")), msg("a1", "u1", assistant())])
    torn = b'{"type":"message","id":"u2","parentId":"a1","mess'
    path.write_bytes(path.read_bytes() + torn)
    with SessionManager.open(path) as session:
        (issue,) = session.get_load_issues()
        assert (issue.line, issue.reason) == (4, TORN)
        assert session.get_leaf_id() == "a1"
        new_id = session.append_message(user("after crash"))
    data = path.read_bytes()
    assert torn + b"\n" + encode_line(session.get_entries()[-1]) in data
    with SessionManager.open(path) as reopened:
        assert ids(reopened.get_branch()) == ["u1", "a1", new_id]
        assert [i.reason for i in reopened.get_load_issues()] == ["malformed JSON"]


def test_complete_last_line_without_newline_is_kept_and_separated(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.jsonl", [msg("u1", None, user("u1"))])
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    with SessionManager.open(path) as session:
        assert session.get_load_issues() == []
        new_id = session.append_message(assistant())
    with SessionManager.open(path) as reopened:
        assert ids(reopened.get_entries()) == ["u1", new_id]
        assert reopened.get_load_issues() == []


# -- leaf restore, unicode, BOM, duplicates ------------------------------------------------------


def test_leaf_after_reload_is_the_last_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with SessionManager.open(path) as session:
        u1 = session.append_message(user("u1"))
        session.append_message(assistant("a1"))
        session.branch(u1)
        side = session.append_message(assistant("side"))
        session.branch(u1)  # not persisted
    with SessionManager.open(path) as reopened:
        assert reopened.get_leaf_id() == side


def test_line_separators_stay_raw_and_survive_reload(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    text = "a\u2028b\u2029c\x85d"
    with SessionManager.open(path) as session:
        session.append_message(user(text))
    assert text.encode() in path.read_bytes()
    assert path.read_bytes().count(b"\n") == 2
    with SessionManager.open(path) as reopened:
        assert reopened.get_entries()[0]["message"]["content"] == text


def test_bom_file_loads_and_keeps_its_bom_on_append(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + encode_line(HEADER) + encode_line(msg("u1", None, user())))
    with SessionManager.open(path) as session:
        assert session.get_session_id() == "sess-1"
        session.append_message(assistant())
    assert path.read_bytes().startswith(b"\xef\xbb\xbf" + encode_line(HEADER))
    with SessionManager.open(path) as reopened:
        assert len(reopened.get_entries()) == 2


def test_duplicate_ids_load_and_append(tmp_path: Path) -> None:
    path = write_session(
        tmp_path / "s.jsonl",
        [msg("x", None, user("first")), msg("y", "x", user("y")), msg("x", "y", user("second"))],
    )
    with SessionManager.open(path) as session:
        assert len(session.get_entries()) == 3
        assert session.get_entry("x")["message"]["content"] == "second"  # type: ignore[index]
        # the last "x" points at y and y at "x": a cycle whose first member in file order ("x")
        # is treated as a root, so the walk ends there instead of hanging as in omp
        new_id = session.append_message(user("next"))
        assert new_id not in ("x", "y") and ids(session.get_branch()) == ["x", new_id]


# -- read-only, locking, external changes --------------------------------------------------------


def test_read_only_open_never_writes(tmp_path: Path) -> None:
    path = copy_case("v1-linear-compaction-index.jsonl", tmp_path / "s.jsonl")
    original = path.read_bytes()
    with SessionManager.open(path) as writer:  # a read-only reader ignores the writer's lock
        reader = SessionManager.open(path, read_only=True)
        assert len(reader.get_entries()) == len(writer.get_entries())
        with pytest.raises(ReadOnlySessionError):
            reader.append_message(user())
        with pytest.raises(ReadOnlySessionError):
            reader.set_session_name("x")
        reader.close()
    assert path.read_bytes() == original and [p.name for p in tmp_path.iterdir()] == ["s.jsonl"]
    with pytest.raises(SessionNotFoundError):
        SessionManager.open(tmp_path / "missing.jsonl", read_only=True)
    assert not (tmp_path / "missing.jsonl").exists()


def _kernel_lock_is_held(path: Path) -> bool:
    """Whether some open file description holds the ``flock`` of ``path`` (ours or another's)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def test_managers_of_one_process_share_the_lock_until_the_last_closes(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.jsonl", [msg("u1", None, user())])
    first = SessionManager.open(path)
    second = SessionManager.open(path)  # the same process may reopen its session (issue 11 item 9)
    second.append_message(user("second writer"))
    first.close()
    assert _kernel_lock_is_held(path)
    second.close()
    assert not _kernel_lock_is_held(path)
    assert len(read_lines(path)) == 3


def test_lock_survives_a_full_rewrite(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.jsonl", [msg("u1", None, user())])
    with SessionManager.open(path) as session:
        session.set_session_name("renamed")  # atomic rewrite: a new inode
        assert _kernel_lock_is_held(path)
    assert not _kernel_lock_is_held(path)


def test_rewrite_refuses_when_another_program_changed_the_file(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.jsonl", [msg("u1", None, user())])
    with SessionManager.open(path) as session:
        with open(path, "ab") as other:  # a writer that ignores the lock
            other.write(encode_line(msg("foreign", "u1", user("foreign"))))
        changed = path.read_bytes()
        with pytest.raises(SessionChangedError):
            session.set_session_name("would lose the foreign line")
        assert path.read_bytes() == changed


def test_refresh_reads_lines_appended_by_the_writer(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.jsonl", [msg("u1", None, user())])
    with SessionManager.open(path) as writer:
        reader = SessionManager.open(path, read_only=True)
        a1 = writer.append_message(assistant())
        assert ids(reader.refresh()) == [a1]
        assert reader.get_leaf_id() == a1 and reader.refresh() == []
        reader.close()


def test_flush_and_close_are_safe_to_repeat(tmp_path: Path) -> None:
    session = SessionManager.create("/proj", tmp_path)
    session.flush()  # nothing written yet
    session.append_message(assistant())
    session.flush()
    session.close()
    session.close()
    assert os.path.exists(file_of(session))


def test_read_only_open_of_an_empty_file_raises(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    with pytest.raises(CorruptSessionError, match="empty session file"):
        SessionManager.open(path, read_only=True)
    assert path.read_bytes() == b""


def test_repr_and_refresh_in_memory(tmp_path: Path) -> None:
    memory = SessionManager.in_memory("/p")
    leaf = memory.append_message(user())
    assert repr(memory) == f"<SessionManager {memory.get_session_id()} in memory leaf={leaf}>"
    assert memory.refresh() == []
    with SessionManager.open(tmp_path / "s.jsonl") as session:
        assert (
            repr(session) == f"<SessionManager {session.get_session_id()} {tmp_path / 's.jsonl'} leaf=None>"
        )
