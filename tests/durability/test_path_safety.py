"""Nothing built from file content or arguments can escape the sessions root."""

from __future__ import annotations

from pathlib import Path

import pytest

from omp_session import SessionManager
from omp_session.store.paths import default_session_dir, is_within, safe_child, session_file_path


@pytest.mark.parametrize(
    "name", ["../x", "..", ".", "a/b", "a\\b", "/etc/passwd", "nul\0byte", "x" * 300, ""]
)
def test_unsafe_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError):
        safe_child(tmp_path, name)


@pytest.mark.parametrize("session_id", ["../../escape", "/abs", "a/b", "bad\0id", "y" * 300])
def test_session_ids_never_escape_their_directory(tmp_path: Path, session_id: str) -> None:
    with pytest.raises(ValueError):
        session_file_path(tmp_path, "2025-01-01T00:00:00.000Z", session_id)


@pytest.mark.parametrize("cwd", ["/a/../../../etc", "../../..", "/x/..%2f..", "/tmp/a:b\\c", "/"])
def test_cwd_encodings_stay_inside_the_sessions_root(tmp_path: Path, cwd: str) -> None:
    root = tmp_path / "sessions"
    directory = default_session_dir(cwd, root)
    assert is_within(root, directory) and directory.parent == root


def test_a_malicious_header_id_does_not_steer_file_names(tmp_path: Path) -> None:
    path = tmp_path / "evil.jsonl"
    path.write_bytes(
        b'{"type":"session","version":3,"id":"../../../../tmp/pwned","timestamp":"2025-01-01T00:00:00.000Z",'
        b'"cwd":"/w"}\n'
        b'{"type":"message","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z",'
        b'"message":{"role":"user","content":"hi","timestamp":1}}\n'
    )
    session = SessionManager.open(path)
    fork = session.fork()
    assert fork is not None and Path(fork.new_session_file).parent == tmp_path
    branched = session.create_branched_session("a")
    assert branched is not None and Path(branched).parent == tmp_path
    session.close()
    assert sorted(p.parent for p in tmp_path.rglob("*.jsonl")) == [tmp_path] * 3


def test_symlinks_leaving_the_root_are_outside(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "link").symlink_to(tmp_path)
    assert not is_within(root, root / "link" / "x")
