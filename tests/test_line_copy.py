"""Whole-file rewrites copy the lines of unchanged entries byte for byte (issue 11 item 6).

Each test writes lines in a form our encoder would *not* produce (spaces, ``1.0``, escaped
letters, invalid UTF-8, nesting deeper than orjson writes), runs a rewrite and checks that those
exact bytes are still there, while what the rewrite changed is encoded.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from omp_session import Runtime, SessionManager, Tuning
from omp_session.store._indexed.lazy_index import LazySessionIndex
from tests.helpers import HEADER, assistant, user

# Lines our encoder writes differently: a space after the colons, a float written as ``1.0``,
# an ASCII letter escaped, invalid UTF-8 (read with U+FFFD), a lone surrogate escape.
ODD_LINES = [
    b'{"type": "message", "id": "a1", "parentId": null, "timestamp": "2025-01-01T00:00:01.000Z",'
    b' "message": {"role": "user", "content": "spaced", "timestamp": 1}}',
    b'{"type":"custom","customType":"x","data":{"n":1.0,"e":1E5},"id":"a2","parentId":"a1",'
    b'"timestamp":"2025-01-01T00:00:02.000Z"}',
    b'{"type":"custom","customType":"\\u0078","data":null,"id":"a3","parentId":"a2",'
    b'"timestamp":"2025-01-01T00:00:03.000Z"}',
    b'{"type":"custom","customType":"bytes","data":"caf\xe9","id":"a4","parentId":"a3",'
    b'"timestamp":"2025-01-01T00:00:04.000Z"}',
    b'{"type":"custom","customType":"cut","data":"\\ud83d","id":"a5","parentId":"a4",'
    b'"timestamp":"2025-01-01T00:00:05.000Z"}',
]


def _write(path: Path, lines: list[bytes]) -> None:
    path.write_bytes(json.dumps(HEADER, separators=(",", ":")).encode() + b"\n" + b"\n".join(lines) + b"\n")


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")


def test_set_session_name_keeps_every_unchanged_line_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "odd.jsonl"
    _write(path, ODD_LINES)
    with SessionManager.open(path) as session:
        session.set_session_name("renamed")
    lines = _lines(path)
    assert b'"title":"renamed"' in lines[0]  # the header changed: encoded
    assert lines[1:-1] == ODD_LINES
    entries = SessionManager.open(path, read_only=True).get_entries()
    assert [entry["id"] for entry in entries] == ["a1", "a2", "a3", "a4", "a5"]


def test_appended_lines_and_lines_after_a_previous_rewrite_are_copied_too(tmp_path: Path) -> None:
    path = tmp_path / "odd.jsonl"
    _write(path, ODD_LINES)
    with SessionManager.open(path) as session:
        session.append_message(user("first"))
        session.set_session_name("one")  # copies ODD_LINES and the appended line
        session.append_message(assistant("second"))
        before = _lines(path)
        session.set_session_name("two")  # copies from the file the first rename wrote
    after = _lines(path)
    assert after[1:] == before[1:]
    assert after[1:6] == ODD_LINES
    assert len(after) == 9 and b'"title":"two"' in after[0]


def test_move_to_and_fork_copy_unchanged_lines(tmp_path: Path) -> None:
    path = tmp_path / "sessions" / "a" / "odd.jsonl"
    path.parent.mkdir(parents=True)
    _write(path, ODD_LINES)
    with SessionManager.open(path) as session:
        session.move_to(str(tmp_path / "elsewhere"))
        moved = Path(str(session.get_session_file()))
        assert moved != path and _lines(moved)[1:-1] == ODD_LINES
        assert b'"cwd":"' + str(tmp_path / "elsewhere").encode() + b'"' in _lines(moved)[0]
        session.fork()
        forked = Path(str(session.get_session_file()))
        assert forked != moved
        assert _lines(forked)[1:-1] == ODD_LINES
        session.set_session_name("after the fork")  # the fork's own table: copies again
        assert _lines(forked)[1:-1] == ODD_LINES


@pytest.mark.parametrize("depth", [300, 1000])
def test_deep_nesting_rewrites_byte_identically(tmp_path: Path, depth: int) -> None:
    path = tmp_path / "deep.jsonl"
    deep = b'{"type":"custom","customType":"deep","data":' + b"[" * depth + b"]" * depth
    deep += b',"id":"d1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z"}'
    _write(path, [deep])
    with SessionManager.open(path) as session:
        assert len(session.get_entries()) == 1
        session.set_session_name("renamed")
        session.move_to(str(tmp_path / "other"))
        moved = Path(str(session.get_session_file()))
    assert _lines(moved)[1] == deep


def test_rewrite_entries_writes_entries_changed_in_place(tmp_path: Path) -> None:
    path = tmp_path / "odd.jsonl"
    _write(path, ODD_LINES)
    with SessionManager.open(path) as session:
        entry = session.get_entry("a1")
        assert entry is not None
        entry["message"]["content"] = "pruned"  # omp's rewriteEntries contract
        session.rewrite_entries()
    lines = _lines(path)
    assert b'"content":"pruned"' in lines[1] and b"spaced" not in path.read_bytes()
    # rewrite_entries encodes every entry (any of them may have been changed in place)
    assert b'"data":{"n":1,"e":100000}' in lines[2]
    pruned = SessionManager.open(path, read_only=True).get_entry("a1")
    assert pruned is not None and pruned["message"]["content"] == "pruned"


def test_a_discarded_entry_rechains_its_children_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "chain.jsonl"
    lines = [
        b'{"type":"message","id":"m1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z",'
        b'"message":{"role":"user","content":"q","timestamp":1}}',
        b'{"type":"service_tier_change","id":"t1","parentId":"m1","timestamp":"2025-01-01T00:00:02.000Z",'
        b'"serviceTier":"flex"}',
        b'{"type":"service_tier_change", "id":"t2","parentId":"t1","timestamp":"2025-01-01T00:00:03.000Z",'
        b'"serviceTier":null}',
    ]
    _write(path, lines)
    with SessionManager.open(path) as session:
        session.discard_entry_durably("t1")
    reloaded = SessionManager.open(path, read_only=True)
    child = reloaded.get_entry("t2")
    assert child is not None and child["parentId"] == "m1"  # the re-chained child was encoded
    assert "t1" not in {entry["id"] for entry in reloaded.get_entries()}


def test_lines_a_transform_may_change_are_encoded(tmp_path: Path) -> None:
    # A scratch field the persistence transform drops, and a CRLF line (rewrites write LF).
    scratch = (
        b'{"type":"message","id":"p1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z",'
        b'"message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"n",'
        b'"arguments":{},"partialJson":"{"}],"stopReason":"stop","timestamp":1}}'
    )
    crlf = (
        b'{"type":"custom","customType":"x","data":1,"id":"p2","parentId":"p1",'
        b'"timestamp":"2025-01-01T00:00:02.000Z"}\r'
    )
    _write(path := tmp_path / "marked.jsonl", [scratch, crlf, ODD_LINES[1].replace(b'"a1"', b'"p2"')])
    with SessionManager.open(path) as session:
        session.set_session_name("renamed")
    lines = _lines(path)
    assert b"partialJson" not in lines[1]
    assert lines[2] == crlf[:-1]
    assert lines[3] == ODD_LINES[1].replace(b'"a1"', b'"p2"')  # its neighbours are still copied


def test_the_lazy_open_through_the_offset_index_copies_too(tmp_path: Path) -> None:
    runtime = Runtime(tuning=Tuning(min_indexed_bytes=256))  # a small file takes the fast path
    path = tmp_path / "indexed.jsonl"
    _write(path, ODD_LINES[:3])
    SessionManager.open(path, read_only=True, runtime=runtime).close()  # the cold open writes the index
    with SessionManager.open(path, runtime=runtime) as session:  # the warm open reads through it
        session.append_message(user("tail"))
        session.set_session_name("renamed")
        index = session._state.index
        assert isinstance(index, LazySessionIndex) and not index.materialized  # lines not decoded
        session.append_message(user("after"))
        session.set_session_name("again")
        assert [entry["id"] for entry in session.get_entries()][:3] == ["a1", "a2", "a3"]
        assert len(session.get_entries()) == 5
    assert _lines(path)[1:4] == ODD_LINES[:3]
    reloaded = SessionManager.open(path, read_only=True, runtime=runtime).get_entries()
    assert [entry["id"] for entry in reloaded][:3] == ["a1", "a2", "a3"]


def test_a_file_changed_by_another_program_is_still_never_overwritten(tmp_path: Path) -> None:
    from omp_session.errors import SessionChangedError

    path = tmp_path / "odd.jsonl"
    _write(path, ODD_LINES)
    with SessionManager.open(path) as session:
        data = path.read_bytes()
        path.write_bytes(data.replace(b"spaced", b"SPACED"))  # same size, in place
        with pytest.raises(SessionChangedError):
            session.set_session_name("renamed")
    assert b"SPACED" in path.read_bytes()
