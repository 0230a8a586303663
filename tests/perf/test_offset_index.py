"""The offset index and the lazy open on concrete files: the corpus, damaged or stale indexes,
appends by others, rewrites, and what the index may never change."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omp_session import Runtime
from omp_session.errors import SessionError
from omp_session.format.codec import encode_line
from omp_session.store._indexed import offsets as offset_index
from omp_session.store._indexed.offsets import index_path, read_index
from omp_session.store._indexed.stored_ids import StoredIdPositions
from omp_session.store.loading import load_session
from omp_session.store.tuning import DEFAULT_TUNING, Tuning
from tests.perf.tuned import EVERY_FILE, open_session

from .sessions import HEADER, full_snapshot, is_lazy, opened_cold, session_lines, snapshot, tree_shape

#: Never racy: the recorded times alone decide whether a file changed.
NEVER_RACY = replace(EVERY_FILE, racy_ns=0)

CORPUS = sorted((Path(__file__).parents[1] / "conformance" / "load").glob("*.jsonl"))
#: omp 18's corpus: files with the title slot ahead of the header, and its new entry types.
CORPUS_18 = sorted((Path(__file__).parents[1] / "conformance_omp18" / "load").glob("*.jsonl"))


def _entry(number: int, parent: str | None, **fields: object) -> dict[str, object]:
    base = {
        "type": "message",
        "id": f"e{number}",
        "parentId": parent,
        "timestamp": "2025-06-02T14:00:00.000Z",
    }
    message = {"role": "user", "content": f"text {number}", "timestamp": number}
    return {**base, "message": message, **fields}


def _session(path: Path, count: int, *, compaction_at: int | None = None) -> Path:
    lines = [encode_line(HEADER)]
    parent = None
    for number in range(count):
        if number == compaction_at:
            entry: dict[str, object] = {
                "type": "compaction",
                "id": f"e{number}",
                "parentId": parent,
                "timestamp": "2025-06-02T14:00:00.000Z",
            }
            entry.update(summary="sum", firstKeptEntryId=f"e{number - 2}", tokensBefore=1)
        else:
            entry = _entry(number, parent)
        lines.append(encode_line(entry))
        parent = f"e{number}"
    path.write_bytes(b"".join(lines))
    return path


@pytest.mark.parametrize("source", CORPUS + CORPUS_18, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_conformance_corpus_reads_the_same_through_the_index(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / source.name
    shutil.copy(source, path)
    try:
        expected = full_snapshot(path)
    except SessionError as exc:  # a file a read-only open refuses is refused the same way
        with pytest.raises(type(exc)):
            open_session(path, read_only=True)
        return
    with open_session(path, read_only=True) as manager:  # the cold open (or a full load)
        assert snapshot(manager) == expected
    with open_session(path, read_only=True) as manager:  # through the index it wrote
        assert snapshot(manager) == expected


def test_the_context_of_a_long_session_reads_only_the_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _session(tmp_path / "s.jsonl", 500, compaction_at=480)
    expected = full_snapshot(path)
    open_session(path, read_only=True).close()
    with open_session(path, read_only=True) as manager:
        assert is_lazy(manager)
        context = manager.build_session_context()
        store = manager._state.index._store  # type: ignore[attr-defined]
        assert len(store._cache) < 30  # the kept entries, the compaction and what follows it
        assert context.to_dict() == expected["context"]
        assert [m.get("content") for m in context.messages[1:3]] == ["text 478", "text 479"]


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.write_bytes(b"garbage"),
        lambda p: p.write_bytes(p.read_bytes()[:-10]),
        lambda p: p.write_bytes(
            p.read_bytes()[:200] + bytes([p.read_bytes()[200] ^ 1]) + p.read_bytes()[201:]
        ),
        lambda p: p.unlink(),
    ],
    ids=["garbage", "truncated", "one-bit-flipped", "deleted"],
)
def test_a_damaged_or_missing_index_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: Callable[[Path], object]
) -> None:
    path = _session(tmp_path / "s.jsonl", 50, compaction_at=40)
    expected = full_snapshot(path)
    open_session(path, read_only=True).close()
    damage(index_path(path))
    with open_session(path, read_only=True) as manager:
        assert opened_cold(manager)  # the damaged index was not used: every line was decoded
        assert snapshot(manager) == expected
    assert read_index(path) is not None  # rebuilt by that cold open


def test_the_tree_after_a_lazy_open_is_built_from_the_columns(tmp_path: Path) -> None:
    # Issue 26 item 2: ids, parent positions and labels come from the index; only the children of
    # a fork (sorted by time) and the labels are decoded until someone reads a node's entry.
    lines = [encode_line(HEADER)]
    parent = None
    for number in range(400):
        fields: dict[str, object] = {}
        if number in (150, 300):  # a fork: a sibling of the previous entry, stamped earlier
            parent = f"e{number - 2}"
            fields["timestamp"] = "2025-06-02T13:00:00.000Z"
        lines.append(encode_line(_entry(number, parent, **fields)))
        parent = f"e{number}"
    label = {"type": "label", "id": "l1", "parentId": parent, "timestamp": "2025-06-02T14:00:00.000Z"}
    lines.append(encode_line({**label, "targetId": "e10", "label": "start"}))
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(lines))
    open_session(path, read_only=True).close()  # the cold open writes the index
    expected = tree_shape(open_session(path, read_only=True, runtime=Runtime(offset_index=False)).get_tree())
    with open_session(path) as manager:  # (read-only: the full index, see get_tree)
        assert is_lazy(manager)
        roots = manager.get_tree()
        store = manager._state.index._store  # type: ignore[attr-defined]
        assert len(store._cache) < 20  # the forks' children, the label (and the leaf)
        assert not manager._state.index.materialized  # type: ignore[attr-defined]
        assert tree_shape(roots) == expected  # (reading every node decodes its entry)
        entries = manager.get_entries()  # the very objects the nodes hold (the views rely on it)
        messages = [node.entry for node, _depth in roots[0].walk() if node.entry["type"] == "message"]
        assert len(messages) == 400
        assert all(entry is entries[int(entry["id"][1:])] for entry in messages)


@pytest.mark.parametrize(
    "change",
    [
        lambda meta: meta.pop("usage"),
        lambda meta: meta.update(kept="not a list"),
        lambda meta: meta.update(has_assistant=None),
        lambda meta: meta.update(header=[1]),
    ],
    ids=["key-missing", "wrong-type", "null", "short-header"],
)
def test_an_index_of_another_shape_with_a_good_checksum_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: Callable[[dict[str, object]], object]
) -> None:
    # The fast path no longer turns its own KeyError or TypeError into a silent full load (issue 23):
    # an index that another version of this code wrote (its checksum fine) is refused when read.
    path = _session(tmp_path / "s.jsonl", 50, compaction_at=40)
    expected = full_snapshot(path)
    open_session(path, read_only=True).close()
    index = read_index(path)
    assert index is not None
    change(index.meta)
    index_path(path).write_bytes(index.to_bytes())
    assert read_index(path) is None
    with open_session(path, read_only=True) as manager:
        assert opened_cold(manager)
        assert snapshot(manager) == expected


def test_an_index_for_other_content_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _session(tmp_path / "s.jsonl", 50)
    open_session(path, read_only=True).close()
    data = path.read_bytes()
    path.write_bytes(data.replace(b"text 17", b"text 71"))  # same size, same mtime second
    os.utime(path, ns=(os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns))
    changed = data.replace(b'"e30","parentId":"e29"', b'"e30","parentId":"e28"')
    path.write_bytes(changed)  # a parent link changed in place, same size
    expected = full_snapshot(path)
    with open_session(path, read_only=True) as manager:
        assert snapshot(manager) == expected


def test_lines_appended_by_another_writer_extend_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _session(tmp_path / "s.jsonl", 40)
    open_session(path, read_only=True).close()
    covered = read_index(path).covered  # type: ignore[union-attr]
    with path.open("ab") as handle:  # omp (which does not know the index) appends two entries
        handle.write(encode_line(_entry(40, "e39")) + encode_line(_entry(41, "e40")))
    expected = full_snapshot(path)
    with open_session(path, read_only=True) as manager:
        assert is_lazy(manager)
        assert snapshot(manager) == expected
    index = read_index(path)
    assert index is not None and index.covered == path.stat().st_size > covered and len(index) == 42


def test_a_last_line_without_newline_and_a_torn_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _session(tmp_path / "s.jsonl", 20)
    open_session(path, read_only=True).close()
    with path.open("ab") as handle:
        handle.write(encode_line(_entry(20, "e19")).rstrip(b"\n"))
    expected = full_snapshot(path)
    with open_session(path, read_only=True) as manager:
        assert is_lazy(manager) and manager.get_leaf_id() == "e20"
        assert snapshot(manager) == expected
    path.write_bytes(path.read_bytes() + b'\n{"type":"mess')
    expected = full_snapshot(path)
    with open_session(path, read_only=True) as manager:
        assert snapshot(manager) == expected
        assert manager.get_load_issues()[-1].reason.startswith("incomplete last line")


def test_writing_after_a_lazy_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _session(tmp_path / "s.jsonl", 60, compaction_at=50)
    open_session(path, read_only=True).close()
    with open_session(path) as manager:
        assert is_lazy(manager)
        first = manager.get_branch()[0]
        reply = {"role": "assistant", "content": [], "provider": "p", "model": "m", "timestamp": 1}
        new_id = manager.append_message(reply)
        assert manager.get_entry(new_id) is not None and manager.get_leaf_id() == new_id
        assert manager.get_entries()[0] is first  # entries handed out stay the live objects
        manager.set_session_name("renamed")  # a full rewrite: the file must count as unchanged
    expected = full_snapshot(path)
    assert expected["name"] == "renamed" and expected["leaf"] == new_id
    with open_session(path, read_only=True) as manager:
        assert snapshot(manager) == expected


def test_a_read_only_follower_refreshes(tmp_path: Path) -> None:
    path = _session(tmp_path / "s.jsonl", 30)
    open_session(path, read_only=True).close()
    with open_session(path, read_only=True) as follower, open_session(path) as writer:
        assert is_lazy(follower)
        added = writer.append_message({"role": "user", "content": "new", "timestamp": 1})
        assert [entry["id"] for entry in follower.refresh()] == [added]
        assert follower.get_leaf_id() == added
        assert follower.build_session_context().messages[-1]["content"] == "new"


def test_the_index_lives_in_the_agent_dir_not_beside_the_session(
    tmp_path: Path, isolated_agent_dir: Path
) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    path = _session(sessions / "s.jsonl", 10)
    before = sorted(os.listdir(sessions))
    open_session(path, read_only=True).close()
    assert sorted(os.listdir(sessions)) == before
    assert index_path(path).is_relative_to(isolated_agent_dir) and index_path(path).exists()


def test_small_files_get_no_index(tmp_path: Path) -> None:
    path = _session(tmp_path / "s.jsonl", 10)
    open_session(path, read_only=True, tuning=replace(EVERY_FILE, min_indexed_bytes=1 << 20)).close()
    assert not index_path(path).exists()


def test_files_the_index_does_not_model_are_loaded_in_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _session(tmp_path / "s.jsonl", 10)
    with path.open("ab") as handle:  # a duplicate id
        handle.write(encode_line(_entry(3, "e9")))
    expected = full_snapshot(path)
    open_session(path, read_only=True).close()
    assert read_index(path).meta["complex"]  # type: ignore[union-attr]
    with open_session(path, read_only=True) as manager:
        assert not is_lazy(manager)
        assert snapshot(manager) == expected


def test_a_replaced_file_is_still_read_from_what_was_opened(tmp_path: Path) -> None:
    path = _session(tmp_path / "s.jsonl", 40, compaction_at=30)
    open_session(path, read_only=True).close()
    with open_session(path, read_only=True) as manager:
        context = manager.build_session_context().to_dict()
        replacement = tmp_path / "other.jsonl"
        _session(replacement, 5)
        os.replace(replacement, path)  # what a rewrite by another process does
        assert manager.build_session_context().to_dict() == context
        assert len(manager.get_entries()) == 40


def test_a_file_changed_in_place_under_a_lazy_reader_is_read_again_in_full(tmp_path: Path) -> None:
    # Issue 11 item 8: a stale index never gives an error or a stale answer for a valid file.
    path = _session(tmp_path / "s.jsonl", 40, compaction_at=35)
    open_session(path, read_only=True).close()
    with open_session(path, read_only=True) as manager:
        manager.build_session_context()
        data = path.read_bytes()
        with path.open("r+b") as handle:  # overwrite in place: no tool of ours does this
            handle.write(data.replace(b'"id":"e3"', b'"id":"x3"'))
        assert manager.get_entries() == load_session(path).entries
        assert manager.get_entry("x3") is not None and manager.get_entry("e3") is None
    assert read_index(path) is None  # dropped: the next open rebuilds it


def test_usage_totals_follow_a_file_read_again_in_full(tmp_path: Path) -> None:
    # Issue 11 item 8: after the fallback to a full read (here an id changed in place), usage totals
    # describe the file as it is now, not the content the stale offset index counted.
    path = _session(tmp_path / "s.jsonl", 40, compaction_at=35)
    usage = {
        "input": 11,
        "output": 22,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 33,
        "cost": {"input": 0.25, "output": 0.5, "cacheRead": 0, "cacheWrite": 0, "total": 0.75},
    }
    answer = {
        "type": "message",
        "id": "a1",
        "parentId": "e39",
        "timestamp": "2025-06-02T14:00:00.000Z",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "ok"}],
            "api": "x",
            "provider": "p",
            "model": "m",
            "usage": usage,
            "stopReason": "stop",
            "timestamp": 1,
        },
    }
    with path.open("ab") as handle:
        handle.write(encode_line(answer))
    open_session(path, read_only=True).close()  # writes the index
    with open_session(path, read_only=True) as manager:
        assert manager.get_usage_statistics().cost == 0.75
        edited = (
            path.read_bytes()
            .replace(b'"id":"e3"', b'"id":"x3"')
            .replace(b'"parentId":"e3"', b'"parentId":"x3"')
        )
        edited = edited.replace(b'"total":0.75', b'"total":0.95').replace(b'"output":22', b'"output":99')
        with path.open("r+b") as handle:  # same size, in place: an id, the cost and the output change
            handle.write(edited)
        assert manager.get_entries() == load_session(path).entries  # the fallback read
        with open_session(path, read_only=True, runtime=Runtime(offset_index=False)) as full:
            expected = full.get_usage_statistics()
        assert manager.get_usage_statistics() == expected
        assert expected.cost == 0.95 and expected.output == 99


def test_appends_after_a_lazy_open_never_decode_every_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _session(tmp_path / "s.jsonl", 60, compaction_at=50)
    open_session(path, read_only=True).close()  # writes the index

    def every_id(self: offset_index.OffsetIndex) -> list[object]:
        raise AssertionError("every id was decoded")

    monkeypatch.setattr(offset_index.OffsetIndex, "all_ids", every_id)
    with open_session(path) as manager:
        assert is_lazy(manager) and not opened_cold(manager)
        added = [
            manager.append_message({"role": "user", "content": f"m{n}", "timestamp": n}) for n in range(5)
        ]
        assert manager.get_entry("e3") is not None  # an old id not decoded yet: found by its hash
        assert manager.get_entry("nope") is None
        parents = [manager.get_entry(entry_id)["parentId"] for entry_id in added]  # type: ignore[index]
        assert parents == ["e59", *added[:-1]]


@pytest.mark.parametrize("odd_id", ["a,b", 'q"uote', "é-ü", "back\\slash", "x"])
def test_the_id_column_finds_every_id_and_only_those(tmp_path: Path, odd_id: str) -> None:
    path = _session(tmp_path / "s.jsonl", 30)
    data = path.read_bytes().replace(b'"id":"e7"', encode_line({"id": odd_id})[1:-2])
    path.write_bytes(data.replace(b'"parentId":"e7"', b'"parentId":' + encode_line(odd_id).rstrip(b"\n")))
    open_session(path, read_only=True).close()
    index = read_index(path)
    assert index is not None and not index.meta["complex"]
    ids = index.all_ids()
    assert odd_id in ids
    for position, entry_id in enumerate(ids):
        assert index.may_hold_id(entry_id) and index.find_id(entry_id) == position
    for missing in ("e", "e70", '"e1"', "e1,e2", odd_id + "x"):
        assert index.find_id(missing) is None


@pytest.mark.parametrize("chunk", [1, 150, 1000, 1 << 30])
def test_the_cold_open_decodes_in_chunks_of_any_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    path = _session(tmp_path / "s.jsonl", 40, compaction_at=30)
    with path.open("ab") as handle:
        handle.write(encode_line(_entry(40, "e39"))[:-1])  # a last line without its newline
    expected = full_snapshot(path)
    with open_session(path, read_only=True, tuning=replace(EVERY_FILE, decode_chunk_bytes=chunk)) as manager:
        assert opened_cold(manager)
        assert snapshot(manager) == expected


def _with_answers(path: Path, count: int) -> Path:
    # ``count`` entries with an assistant answer at entry 200, whose usage the test edits: far
    # from every block the fingerprint samples, and the line keeps its id and links, so no read
    # through the index can tell the difference.
    lines = [encode_line(HEADER)]
    for number in range(count):
        entry = _entry(number, f"e{number - 1}" if number else None)
        if number == 200:
            entry["message"] = {
                "role": "assistant",
                "content": [],
                "provider": "p",
                "model": "m",
                "usage": {"input": 11, "output": 22, "cost": {"total": 0.75}},
                "timestamp": 1,
            }
        lines.append(encode_line(entry))
    path.write_bytes(b"".join(lines))
    return path


def _edit_usage_in_place(path: Path) -> None:
    data = path.read_bytes()
    edited = data.replace(b'"output":22', b'"output":99').replace(b'"total":0.75', b'"total":0.95')
    assert len(edited) == len(data) and edited != data
    with path.open("r+b") as handle:  # same size, in place, ids and links untouched
        handle.write(edited)


def _full_usage(path: Path) -> dict[str, float | None]:
    with open_session(path, read_only=True, runtime=Runtime(offset_index=False)) as full:
        return full.get_usage_statistics().to_dict()


def _assert_edit_seen_then_index_trusted(path: Path, tuning: Tuning) -> None:
    """The next open reads the edited file as a full load does; the one after trusts the rebuilt index."""
    with open_session(path, read_only=True, tuning=tuning) as manager:
        assert manager.get_usage_statistics().to_dict() == _full_usage(path)
        assert manager.get_usage_statistics().cost == 0.95
        assert manager.get_entries() == load_session(path).entries
    with open_session(path, read_only=True, tuning=tuning) as manager:  # the index rebuilt, then trusted
        assert is_lazy(manager) and manager.get_usage_statistics().cost == 0.95


def test_an_edit_in_place_that_keeps_ids_and_links_is_noticed_by_the_times(
    tmp_path: Path,
) -> None:
    # Issue 11 item 8, the stale usage totals: the edit is far from the sampled blocks and changes
    # no id or link, so only the file's recorded times (size equal, mtime not) tell.
    tuning = NEVER_RACY  # never racy: the times alone decide
    path = _with_answers(tmp_path / "s.jsonl", 12000)
    open_session(path, read_only=True, tuning=tuning).close()  # writes the index
    with open_session(path, read_only=True, tuning=tuning) as manager:
        assert is_lazy(manager) and manager.get_usage_statistics().cost == 0.75
    recorded = os.stat(path)
    _edit_usage_in_place(path)
    later = recorded.st_mtime_ns + 1_000_000_000  # another tick of the clock, whatever its granularity
    os.utime(path, ns=(later, later))
    _assert_edit_seen_then_index_trusted(path, tuning)


def test_an_edit_in_place_right_after_indexing_is_noticed(tmp_path: Path) -> None:
    # The same edit within the same clock tick as the indexing (the times may not change): the
    # index of a file modified that recently carries a CRC of what it covers.
    path = _with_answers(tmp_path / "s.jsonl", 12000)
    open_session(path, read_only=True).close()
    index = read_index(path)
    assert index is not None and index.meta["racy_crc"] is not None
    _edit_usage_in_place(path)
    with open_session(path, read_only=True) as manager:
        assert manager.get_usage_statistics().to_dict() == _full_usage(path)
        assert manager.get_usage_statistics().cost == 0.95


_EDIT_AND_APPEND = """
import sys
path, line = sys.argv[1], sys.argv[2].encode()
data = open(path, "rb").read()
edited = data.replace(b'"output":22', b'"output":99').replace(b'"total":0.75', b'"total":0.95')
assert len(edited) == len(data) and edited != data
with open(path, "r+b") as handle:  # same size, in place, ids and links untouched
    handle.write(edited)
with open(path, "ab") as handle:  # then an append: the file grows, as it does by appends alone
    handle.write(line + b"\\n")
"""


def test_an_edit_in_place_and_an_append_by_another_process_are_noticed(
    tmp_path: Path,
) -> None:
    # Issue 11 item 8's last hole: another program edits a line in place (far from the sampled
    # blocks, ids and links kept) and appends, so the file grows as by an append alone. The usage
    # totals after the next open must be those of a full load, not the index's.
    tuning = NEVER_RACY  # never racy: no CRC from the racy rule
    path = _with_answers(tmp_path / "s.jsonl", 12000)
    open_session(path, read_only=True, tuning=tuning).close()  # writes the index
    with open_session(path, read_only=True, tuning=tuning) as manager:
        assert is_lazy(manager) and manager.get_usage_statistics().cost == 0.75
    appended = encode_line(_entry(12000, "e11999"))[:-1].decode()
    subprocess.run([sys.executable, "-c", _EDIT_AND_APPEND, str(path), appended], check=True)
    _assert_edit_seen_then_index_trusted(path, tuning)


def test_appends_alone_keep_the_index_and_carry_its_crc(tmp_path: Path) -> None:
    # The CRC of the covered part goes on over the appended lines (no second read of the file).
    path = _with_answers(tmp_path / "s.jsonl", 12000)
    open_session(path, read_only=True).close()
    with path.open("ab") as handle:
        handle.write(encode_line(_entry(12000, "e11999")))
    with open_session(path, read_only=True) as manager:
        assert is_lazy(manager) and manager.get_usage_statistics().cost == 0.75
    index = read_index(path)
    assert index is not None and index.covered == path.stat().st_size
    assert index.meta["prefix_crc"] == zlib.crc32(path.read_bytes())


def test_changed_in_place_by_times_size_and_crc(tmp_path: Path) -> None:
    # The rule itself, on the file's real stat: appends allowed, equal size with other times or a
    # shorter file not, and a racy index checked against its CRC.
    path = tmp_path / "f"
    path.write_bytes(b"0123456789\n")
    stat = os.stat(path)
    content = path.read_bytes()
    read = lambda n, at: content[at : at + n]  # noqa: E731
    meta = {"covered": 11, **offset_index.file_state(stat, zlib.crc32(content), DEFAULT_TUNING)}
    assert not offset_index.changed_in_place(meta, stat, read)
    assert meta["racy_crc"] is not None  # just written
    assert offset_index.changed_in_place(meta, stat, lambda n, at: b"x" * n)
    settled = {**meta, "racy_crc": None}
    assert not offset_index.changed_in_place(settled, stat, lambda n, at: b"x" * n)  # only the times
    with path.open("ab") as handle:
        handle.write(b"appended\n")
    assert not offset_index.changed_in_place(settled, os.stat(path), read)
    # Appended and edited in place as well: the covered part no longer has the recorded CRC.
    assert offset_index.changed_in_place(settled, os.stat(path), lambda n, at: b"x" * n)
    no_crc = {key: value for key, value in settled.items() if key != "prefix_crc"}
    assert offset_index.changed_in_place(no_crc, os.stat(path), read)  # an older index: rebuilt once
    path.write_bytes(b"0123")
    assert offset_index.changed_in_place(settled, os.stat(path), read)
    path.write_bytes(b"9876543210\n")
    os.utime(path, ns=(stat.st_mtime_ns + 10**9, stat.st_mtime_ns + 10**9))
    assert offset_index.changed_in_place(settled, os.stat(path), read)
    assert offset_index.changed_in_place({"covered": 11}, stat, read)  # an index without the record


def test_a_cold_open_drops_entries_of_any_shape_before_a_compaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The cold open keeps the state entries before the latest compaction by their type, which may
    # be any JSON value in a damaged (but valid) file: a list is dropped like any other entry.
    path = _session(tmp_path / "s.jsonl", 40, compaction_at=30)
    data = path.read_bytes().replace(b'"type":"message","id":"e5"', b'"type":["message"],"id":"e5"')
    path.write_bytes(data)
    expected = full_snapshot(path)
    with open_session(path, read_only=True, tuning=replace(EVERY_FILE, decode_chunk_bytes=64)) as manager:
        assert opened_cold(manager)
        assert snapshot(manager) == expected


def test_a_racy_index_is_checked_in_full_once_then_settled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An index of a file modified right before indexing carries a CRC, checked by the next open;
    # once the file is no longer recent, that open writes the index again without it.
    path = _with_answers(tmp_path / "s.jsonl", 3000)
    open_session(path, read_only=True).close()
    index = read_index(path)
    assert index is not None and index.meta["racy_crc"] is not None
    # From here on as if 2 s had passed: NEVER_RACY.
    with open_session(path, read_only=True, tuning=NEVER_RACY) as manager:
        assert is_lazy(manager) and not opened_cold(manager)
        assert manager.get_usage_statistics().cost == 0.75
    settled = read_index(path)
    assert settled is not None and settled.meta["racy_crc"] is None
    assert settled.meta["stat"] == index.meta["stat"] and list(settled.offsets) == list(index.offsets)
    with open_session(path, read_only=True, tuning=NEVER_RACY) as manager:
        assert is_lazy(manager) and not opened_cold(manager)
        assert snapshot(manager) == full_snapshot(path)


_COMPARED_COLUMNS = ("offsets", "lengths", "parents", "state_ids", "defaults", "id_ends", "id_hashes")
_VOLATILE_META = {"stat", "racy_crc", "fingerprint"}  # the file's times; recomputed either way


def _comparable(index: offset_index.OffsetIndex) -> tuple[object, ...]:
    meta = {key: value for key, value in index.meta.items() if key not in _VOLATILE_META}
    columns = [list(getattr(index, name)) for name in _COMPARED_COLUMNS]
    return (meta, columns, bytes(index.id_blob), bytes(index.state_blob))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=session_lines(weird=False), data=st.data())
def test_an_index_extended_by_appends_equals_one_built_from_scratch(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], data: st.DataObject
) -> None:
    # Indexing the lines another writer appended extends the stored id column (no dict of every
    # id, no hashing every id again): the result must be the index a full build gives.
    path = tmp_path_factory.mktemp("extend") / "s.jsonl"
    cut = data.draw(st.integers(1, len(lines)))
    path.write_bytes(b"".join(lines[:cut]))
    open_session(path, read_only=True).close()
    first = read_index(path)
    with path.open("ab") as handle:
        handle.write(b"".join(lines[cut:]))
    open_session(path, read_only=True).close()
    extended = read_index(path)
    index_path(path).unlink()
    open_session(path, read_only=True).close()
    rebuilt = read_index(path)
    assert (extended is None) == (rebuilt is None)
    if extended is not None and rebuilt is not None:
        assert _comparable(extended) == _comparable(rebuilt)
        if first is not None and not first.meta.get("complex") and cut < len(lines):
            assert len(extended) >= len(first)


def test_an_append_that_branches_off_many_stored_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every appended entry names a stored parent: past a few searches of the stored id column, the
    # extension looks them up in one dict of the stored ids; the index is the same either way.
    monkeypatch.setattr(StoredIdPositions, "SEARCHES", 3)
    path = _session(tmp_path / "s.jsonl", 40)
    open_session(path, read_only=True).close()
    with path.open("ab") as handle:
        for number in range(40, 50):
            handle.write(encode_line(_entry(number, f"e{number - 35}")))
    expected = full_snapshot(path)
    with open_session(path, read_only=True) as manager:
        assert is_lazy(manager) and snapshot(manager) == expected
    extended = read_index(path)
    index_path(path).unlink()
    open_session(path, read_only=True).close()
    rebuilt = read_index(path)
    assert extended is not None and rebuilt is not None and len(extended) == 50
    assert _comparable(extended) == _comparable(rebuilt)


@pytest.mark.parametrize("parallel_crc_bytes", [0, 1 << 40])
def test_a_cold_open_records_the_file_s_crc_whichever_thread_computes_it(
    tmp_path: Path, parallel_crc_bytes: int
) -> None:
    # (A big cold open computes the CRC on a thread of its own while it scans; a small one inline.)
    path = _with_answers(tmp_path / "s.jsonl", 3000)
    tuning = replace(EVERY_FILE, parallel_crc_bytes=parallel_crc_bytes)
    with open_session(path, read_only=True, tuning=tuning) as manager:
        assert is_lazy(manager)
    index = read_index(path)
    assert index is not None and index.meta["prefix_crc"] == zlib.crc32(path.read_bytes())
