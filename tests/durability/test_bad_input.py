"""Every kind of bad input has a decided outcome (docs/durability.md, "Bad input"): a SessionError
naming the file and line, or a lenient rule with a recorded issue. Never a hang, a bare traceback,
or a changed user file."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from omp_session import CorruptSessionError, SessionManager, SessionNotFoundError
from omp_session.tools.repair import check
from tests.helpers import within

HEADER = (
    b'{"type":"session","version":3,"id":"bad-input","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}\n'
)


def _line(entry_id: str, parent: str | None, content: str = "x", role: str = "user") -> bytes:
    parent_json = "null" if parent is None else f'"{parent}"'
    message = f'{{"role":"{role}","content":"{content}","timestamp":1}}'
    return (
        f'{{"type":"message","id":"{entry_id}","parentId":{parent_json},'
        f'"timestamp":"2025-01-01T00:00:01.000Z","message":{message}}}\n'
    ).encode()


def _write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "input.jsonl"
    path.write_bytes(data)
    return path


def _open_unchanged(path: Path) -> SessionManager:
    before = path.read_bytes()
    session: SessionManager = within(10, lambda: SessionManager.open(path))
    within(10, session.build_session_context)
    within(10, session.get_tree)
    assert path.read_bytes() == before
    return session


def test_parent_cycle_first_member_becomes_root(tmp_path: Path) -> None:
    path = _write(tmp_path, HEADER + _line("a", "b") + _line("b", "a", "second"))
    session = _open_unchanged(path)
    assert [e["id"] for e in session.get_branch("b")] == ["a", "b"]
    assert [n.entry["id"] for n in session.get_tree()] == ["a"]
    assert [m["content"] for m in session.build_session_context().messages] == ["x", "second"]
    assert [p.kind for p in check(path)] == ["cycle"]


def test_self_parent_is_a_root(tmp_path: Path) -> None:
    path = _write(tmp_path, HEADER + _line("a", None) + _line("s", "s", "self"))
    session = _open_unchanged(path)
    assert [e["id"] for e in session.get_branch()] == ["s"]
    assert [m["content"] for m in session.build_session_context().messages] == ["self"]
    assert "self-parent" in [p.kind for p in check(path)]


def test_duplicate_ids_keep_every_line_and_index_the_last(tmp_path: Path) -> None:
    path = _write(tmp_path, HEADER + _line("a", None, "one") + _line("a", None, "two") + _line("c", "a"))
    session = _open_unchanged(path)
    assert len(session.get_entries()) == 3
    assert session.get_entry("a")["message"]["content"] == "two"  # type: ignore[index]
    assert "duplicate-id" in [p.kind for p in check(path)]


@pytest.mark.parametrize("line", [b"null", b"42", b'"text"', b"[1,2]", b"true"])
def test_non_object_lines_are_skipped_and_recorded(tmp_path: Path, line: bytes) -> None:
    path = _write(tmp_path, HEADER + _line("a", None) + line + b"\n" + _line("b", "a"))
    session = _open_unchanged(path)
    assert [e["id"] for e in session.get_entries()] == ["a", "b"]
    issue = next(i for i in session.get_load_issues() if i.skipped)
    assert (issue.line, issue.reason) == (3, "not a JSON object")


def test_assistant_without_usage_counts_as_zero(tmp_path: Path) -> None:
    assistant = (
        b'{"type":"message","id":"b","parentId":"a","timestamp":"2025-01-01T00:00:02.000Z","message":'
        b'{"role":"assistant","content":[],"provider":"p","model":"m","stopReason":"stop","timestamp":2}}\n'
    )
    session = _open_unchanged(_write(tmp_path, HEADER + _line("a", None) + assistant))
    assert session.get_usage_statistics().to_dict() == {
        "input": 0,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "premiumRequests": 0,
        "cost": 0,
    }


def test_invalid_utf8_is_read_with_replacement_and_recorded(tmp_path: Path) -> None:
    path = _write(tmp_path, HEADER + _line("a", None, "caf\xe9").replace("é".encode(), b"\xe9"))
    session = _open_unchanged(path)
    assert session.get_entry("a")["message"]["content"] == "caf\ufffd"  # type: ignore[index]
    assert [i.reason for i in session.get_load_issues()] == [
        "invalid UTF-8 (decoded with replacement characters)"
    ]


def test_bom_is_stripped_on_read_and_kept_on_disk(tmp_path: Path) -> None:
    path = _write(tmp_path, b"\xef\xbb\xbf" + HEADER + _line("a", None))
    session = _open_unchanged(path)
    session.append_message({"role": "user", "content": "more", "timestamp": 2})
    session.close()
    assert path.read_bytes().startswith(b"\xef\xbb\xbf" + HEADER)
    assert "bom" in [p.kind for p in check(path)]


@pytest.mark.parametrize("bad", [b"NaN", b"Infinity", b"-Infinity"])
def test_nan_and_infinity_make_a_line_malformed(tmp_path: Path, bad: bytes) -> None:
    line = (
        b'{"type":"custom","customType":"c","data":' + bad + b',"id":"n","parentId":null,"timestamp":"t"}\n'
    )
    session = _open_unchanged(_write(tmp_path, HEADER + line + _line("a", None)))
    assert [e["id"] for e in session.get_entries()] == ["a"]
    assert [i.reason for i in session.get_load_issues()] == ["malformed JSON"]


def test_deeply_nested_json_is_a_malformed_line(tmp_path: Path) -> None:
    deep = b'{"type":"custom","customType":"c","data":' + b"[" * 200_000 + b"]" * 200_000 + b"}\n"
    session = _open_unchanged(_write(tmp_path, HEADER + deep + _line("a", None)))
    assert [e["id"] for e in session.get_entries()] == ["a"]
    assert [i.line for i in session.get_load_issues()] == [2]


def test_a_100_mb_single_line_loads(tmp_path: Path) -> None:
    big = "y" * (100 * 1024 * 1024)
    path = _write(tmp_path, HEADER + _line("a", None, big))
    session = within(60, lambda: SessionManager.open(path, read_only=True))
    entry = session.get_entry("a")
    assert entry is not None and len(entry["message"]["content"]) == len(big)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SessionNotFoundError, match="no such session file"):
        SessionManager.open(tmp_path / "missing.jsonl", read_only=True)
    session = SessionManager.open(tmp_path / "missing.jsonl")  # as omp: a new session at that path
    session.close()
    assert (tmp_path / "missing.jsonl").read_bytes().count(b"\n") == 1


def test_empty_file_gets_a_header_but_only_when_opened_for_writing(tmp_path: Path) -> None:
    path = _write(tmp_path, b"")
    with pytest.raises(CorruptSessionError, match="empty session file"):
        SessionManager.open(path, read_only=True)
    SessionManager.open(path).close()
    assert path.read_bytes().startswith(b'{"type":"session","version":3,')


@pytest.mark.parametrize(
    "first_line",
    [b"{not json", b'{"type":"message","id":"a"}', b'{"type":"session","id":42}', b"\xef\xbb\xbf\xff"],
)
def test_corrupt_header_raises_and_never_touches_the_file(tmp_path: Path, first_line: bytes) -> None:
    path = _write(tmp_path, first_line + b"\n" + _line("a", None))
    before = path.read_bytes()
    with pytest.raises(
        CorruptSessionError, match=r"input\.jsonl:\d+: the first line is not a session header"
    ):
        SessionManager.open(path)
    assert path.read_bytes() == before


def test_path_is_a_directory(tmp_path: Path) -> None:
    with pytest.raises(CorruptSessionError, match="is a directory"):
        SessionManager.open(tmp_path)


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, HEADER)
    real_open = os.open

    def denied(file: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if Path(file) == path:
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_open(file, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(CorruptSessionError, match="cannot be opened: Permission denied"):
        SessionManager.open(path)
