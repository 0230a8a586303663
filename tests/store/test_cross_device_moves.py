"""``move_to`` onto another filesystem (omp 18.3 survives ``EXDEV``: copy, fsync, link, unlink):
the session file and its artifact directory cross from the test's disk to a tmpfs mounted for the
test, with the writer lock and append descriptor following the copy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from omp_session import SessionManager
from omp_session.store.blobs import MemoryBlobStore
from omp_session.store.file import FileStorage
from omp_session.store.moves import move_directory
from tests.helpers import assistant, contents, user


@pytest.fixture
def other_filesystem(tmp_path: Path) -> Iterator[Path]:
    """A directory on a tmpfs mounted for this test (``mount -t tmpfs``, as root), else on
    ``/dev/shm``: in either case on another device than ``tmp_path``."""
    mount_point = Path(tempfile.mkdtemp(prefix="omp-tmpfs-"))
    mounted = (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount_point)], capture_output=True
        ).returncode
        == 0
    )
    root = mount_point if mounted else Path(tempfile.mkdtemp(dir="/dev/shm"))
    assert os.stat(root).st_dev != os.stat(tmp_path).st_dev, "need a second filesystem"
    try:
        yield root
    finally:
        if mounted:
            if subprocess.run(["umount", str(mount_point)]).returncode != 0:
                subprocess.run(["umount", "-l", str(mount_point)], check=True)  # a leaked descriptor
            mount_point.rmdir()
        else:
            subprocess.run(["rm", "-rf", str(root)], check=True)


def test_move_to_another_filesystem_moves_file_and_artifacts(tmp_path: Path, other_filesystem: Path) -> None:
    with SessionManager.create("/work/old", tmp_path / "old", dialect="18.3") as session:
        session.append_message(user("q"))
        session.append_message(assistant("a"))
        session.save_artifact("log line", "bash")
        (Path(str(session.get_artifacts_dir())) / "nested").mkdir()
        (Path(str(session.get_artifacts_dir())) / "nested" / "deep.txt").write_text("deep")
        old_file = Path(str(session.get_session_file()))
        before = old_file.read_bytes()
        session.move_to("/work/new", other_filesystem / "new")
        new_file = Path(str(session.get_session_file()))
        assert new_file.parent == other_filesystem / "new" and new_file.name == old_file.name
        assert not old_file.exists() and not old_file.with_suffix("").exists()
        artifacts = new_file.with_suffix("")
        assert (artifacts / "0.bash.log").read_text() == "log line"
        assert (artifacts / "nested" / "deep.txt").read_text() == "deep"
        assert not [p for p in new_file.parent.iterdir() if p.name.endswith(".move")]  # no staging left
        header = json.loads(new_file.read_bytes().split(b"\n")[1])
        assert header["cwd"] == "/work/new" and header["previousSessionFiles"] == [str(old_file)]
        assert (
            len(new_file.read_bytes()) > 0
            and before.split(b"\n")[2:] == new_file.read_bytes().split(b"\n")[2:]
        )
        # the writer lock followed the copy (another process cannot take it); appends land there
        probe = "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDONLY)\n"
        probe += "try: fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\nexcept OSError: sys.exit(3)"
        assert subprocess.run([sys.executable, "-c", probe, str(new_file)]).returncode == 3
        session.append_message(user("after the move"))
    with SessionManager.open(new_file, read_only=True) as reloaded:
        assert contents(reloaded.build_session_context().messages) == ["q", "A:a", "after the move"]


def test_storage_move_across_devices_never_replaces_a_file(tmp_path: Path, other_filesystem: Path) -> None:
    source = tmp_path / "s.jsonl"
    source.write_bytes(b'{"type":"session","version":3,"id":"x","timestamp":"t","cwd":"/"}\n')
    storage = FileStorage(source, MemoryBlobStore())
    storage.read()
    storage.lock()
    occupied = other_filesystem / "s.jsonl"
    occupied.write_bytes(b"someone else's\n")
    with pytest.raises(Exception, match="exists"):
        storage.move(occupied)
    assert occupied.read_bytes() == b"someone else's\n" and source.exists()
    target = other_filesystem / "sub" / "s.jsonl"
    storage.move(target)
    storage.append(b'{"type":"custom","id":"a","parentId":null,"timestamp":"t","customType":"x"}\n')
    storage.close()
    assert not source.exists() and target.read_bytes().count(b"\n") == 2


def test_move_directory_across_devices(tmp_path: Path, other_filesystem: Path) -> None:
    source = tmp_path / "artifacts"
    (source / "a").mkdir(parents=True)
    (source / "a" / "1.log").write_text("one")
    (source / "2.log").write_text("two")
    move_directory(source, other_filesystem / "artifacts")
    assert not source.exists()
    assert (other_filesystem / "artifacts" / "a" / "1.log").read_text() == "one"
    assert (other_filesystem / "artifacts" / "2.log").read_text() == "two"
    (tmp_path / "again").mkdir()
    with pytest.raises(FileExistsError):
        move_directory(tmp_path / "again", other_filesystem / "artifacts")
    assert (tmp_path / "again").is_dir()  # a refused move leaves the source alone
