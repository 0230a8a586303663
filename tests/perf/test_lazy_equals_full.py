"""Property tests: a session opened through its offset index reads exactly like a full load,
whichever strategy opened it (each example draws one: ``auto``, a cold open, the warm one)."""

from __future__ import annotations

import itertools
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omp_session import Runtime, SessionManager
from omp_session.store._indexed.offsets import index_path
from omp_session.store.tuning import ReadStrategy
from tests.perf.tuned import EVERY_FILE, NO_FILE, open_session
from tests.store.read_paths import COLD_READS, read_by, tuning_for

from .sessions import full_snapshot, is_lazy, jump_back_lines, opened_cold, ordered, session_lines, snapshot

SETTINGS = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _write(directory: str, lines: list[bytes]) -> Path:
    path = Path(directory) / "session.jsonl"
    path.write_bytes(b"".join(lines))
    return path


@SETTINGS
@given(lines=session_lines(), run=st.sampled_from([1, 3, 16]))
def test_any_session_reads_the_same_through_the_index(
    lines: list[bytes], run: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    tuning = replace(EVERY_FILE, run_lines=run)  # consecutive lines read as one run
    with tempfile.TemporaryDirectory() as directory:
        path = _write(directory, lines)
        expected = full_snapshot(path)
        open_session(path, read_only=True, tuning=tuning).close()  # a full load that writes the index
        assert index_path(path).exists()
        with open_session(path, read_only=True, tuning=tuning) as manager:
            assert snapshot(manager) == expected
        index_path(path).unlink()  # the index is a cache: without it, nothing changes
        with open_session(path, read_only=True, tuning=tuning) as manager:
            assert snapshot(manager) == expected


@SETTINGS
@given(lines=session_lines(weird=False))
def test_well_formed_sessions_are_opened_lazily(lines: list[bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = _write(directory, lines)
        expected = full_snapshot(path)
        open_session(path, read_only=True).close()
        with open_session(path, read_only=True) as manager:
            assert is_lazy(manager)
            assert ordered(manager.build_session_context().to_dict()) == expected["context_order"]
            assert not manager._state.index.materialized  # type: ignore[attr-defined]  # the context read only a few lines
            assert snapshot(manager) == expected


def _cold_by(read: ReadStrategy, manager: SessionManager) -> bool:
    """Whether ``manager`` was opened cold by ``read`` (``auto``: by one of the cold opens)."""
    return opened_cold(manager) and (read is ReadStrategy.AUTO or read_by(manager) is read)


@SETTINGS
@given(lines=session_lines(weird=False), read=st.sampled_from(COLD_READS))
def test_well_formed_sessions_are_opened_cold_in_one_pass(lines: list[bytes], read: ReadStrategy) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = _write(directory, lines)
        expected = full_snapshot(path)
        with open_session(
            path, read_only=True, tuning=tuning_for(read, EVERY_FILE)
        ) as manager:  # no index yet
            assert _cold_by(read, manager)
            assert ordered(manager.build_session_context().to_dict()) == expected["context_order"]
            assert snapshot(manager) == expected
        assert index_path(path).exists()  # written by that open


@SETTINGS
@given(lines=jump_back_lines(), read=st.sampled_from(COLD_READS))
def test_branches_that_jump_back_before_a_compaction(lines: list[bytes], read: ReadStrategy) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = _write(directory, lines)
        expected = full_snapshot(path)
        for opening, tuning in (("cold", tuning_for(read, EVERY_FILE)), ("through the index", EVERY_FILE)):
            with open_session(path, read_only=True, tuning=tuning) as manager:
                assert is_lazy(manager) and opened_cold(manager) == (opening == "cold")
                assert opening != "cold" or _cold_by(read, manager)
                # The context first (only the lines it needs), then every other read.
                assert ordered(manager.build_session_context().to_dict()) == expected["context_order"]
                assert snapshot(manager) == expected
        for leaf_id in ("m0", "b0", "m-last"):  # the leaf moved to each line's end, lazily
            with open_session(path, read_only=True) as manager:
                if manager.get_entry(leaf_id) is not None:
                    manager.branch(leaf_id)
                    context = manager.build_session_context().to_dict()
                    assert ordered(context) == ordered(_full_context_at(path, leaf_id))


def _full_context_at(path: Path, leaf_id: str) -> dict[str, Any]:
    with open_session(path, read_only=True, tuning=NO_FILE) as manager:
        manager.branch(leaf_id)
        return manager.build_session_context().to_dict()


Operation = tuple[str, int]
OPERATIONS = st.lists(
    st.tuples(
        st.sampled_from(["user", "assistant", "branch", "compact", "label", "reset", "model"]),
        st.integers(0, 99),
    ),
    max_size=10,
)


def _apply(manager: SessionManager, operations: list[Operation], known: list[str]) -> list[dict[str, Any]]:
    """Run ``operations`` and return the context after each one."""
    contexts = []
    for kind, number in operations:
        target = known[number % len(known)] if known else None
        if kind == "user":
            known.append(
                manager.append_message({"role": "user", "content": f"u{number}", "timestamp": number})
            )
        elif kind == "assistant":
            message = {
                "role": "assistant",
                "content": [],
                "provider": "p",
                "model": f"m{number}",
                "timestamp": 1,
            }
            known.append(manager.append_message(message))
        elif kind == "branch" and target is not None:
            manager.branch(target)
        elif kind == "compact":
            known.append(manager.append_compaction(f"s{number}", None, target, number))
        elif kind == "label" and target is not None:
            known.append(manager.append_label_change(target, f"L{number}"))
        elif kind == "reset":
            manager.reset_leaf()
        elif kind == "model":
            known.append(manager.append_model_change(f"p/m{number}", "smol" if number % 2 else None))
        contexts.append(manager.build_session_context().to_dict())
    return contexts


@SETTINGS
@given(
    lines=session_lines(weird=False),
    operations=OPERATIONS,
    read=st.sampled_from([*COLD_READS, ReadStrategy.WARM]),
)
def test_appends_and_branches_after_a_lazy_open(
    lines: list[bytes], operations: list[Operation], read: ReadStrategy
) -> None:
    cold = read is not ReadStrategy.WARM  # (the warm open reads the index it has built)
    counter = itertools.count()
    runtime = Runtime(
        now=lambda: "2025-06-03T00:00:00.000Z", new_entry_id=lambda existing: f"new{next(counter)}"
    )
    with tempfile.TemporaryDirectory() as directory:
        lazy_path = _write(directory, lines)
        full_path = lazy_path.with_name("copy.jsonl")
        full_path.write_bytes(lazy_path.read_bytes())
        known = [line.split(b'"id": "')[1].split(b'"')[0].decode() for line in lines[1:]]
        full = open_session(full_path, runtime=runtime, tuning=NO_FILE)
        with open_session(lazy_path, runtime=runtime, tuning=tuning_for(read, EVERY_FILE)) as lazy, full:
            assert is_lazy(lazy) and opened_cold(lazy) == cold
            assert read is ReadStrategy.AUTO or read_by(lazy) is read
            counter = itertools.count()
            lazy_contexts = _apply(lazy, operations, list(known))
            counter = itertools.count()
            full_contexts = _apply(full, operations, list(known))
            assert ordered(lazy_contexts) == ordered(full_contexts)
            assert snapshot(lazy) == snapshot(full)
        # And the grown file, reopened (the index is extended by the appended lines), still agrees.
        expected = full_snapshot(lazy_path)
        with open_session(lazy_path, read_only=True) as reopened:
            assert snapshot(reopened) == expected


@SETTINGS
@given(
    lines=session_lines(),
    where=st.integers(0, 1 << 20),
    byte=st.sampled_from([b"b", b"1", b" ", b"}"]),
    run=st.sampled_from([1, 3, 16]),
)
def test_an_edit_in_place_after_indexing_reads_like_a_full_load(
    lines: list[bytes], where: int, byte: bytes, run: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 11 item 8: one byte after the header changed in place (same size: a letter of a text,
    # a key, a keyword; the line may turn malformed), right after the index was written. Whatever
    # it hits, the next open reads what a full load of the edited file reads. The fingerprint's
    # sampled blocks shrunk to a byte each: these small files would otherwise be sampled whole.
    tuning = replace(
        EVERY_FILE,
        fingerprint_sample_bytes=1,
        fingerprint_tail_bytes=1,
        run_lines=run,  # the edit found in a run of lines too
    )
    with tempfile.TemporaryDirectory() as directory:
        path = _write(directory, lines)
        open_session(path, read_only=True, tuning=tuning).close()  # a load that writes the index
        data = bytearray(path.read_bytes())
        start = len(lines[0])
        if len(data) <= start:
            return
        at = start + where % (len(data) - start)
        if data[at] == 10:
            at = max(start, at - 1)  # keep the line structure: the edit stays inside a line
        data[at : at + 1] = byte
        with path.open("r+b") as handle:
            handle.write(bytes(data))
        expected = full_snapshot(path)
        with open_session(path, read_only=True, tuning=tuning) as manager:
            assert snapshot(manager) == expected


@SETTINGS
@given(
    lines=jump_back_lines() | session_lines(weird=False),
    chunk=st.sampled_from([1, 200, 4096]),
    read=st.sampled_from(COLD_READS),
)
def test_cold_opens_that_keep_only_the_tail_read_like_a_full_load(
    lines: list[bytes], chunk: int, read: ReadStrategy
) -> None:
    # Issue 12 item 5: once a compaction is indexed, the cold open keeps only the entries from its
    # first kept entry on (and the state entries and labels before it), chunk by chunk; the rest
    # is read through the index when asked for, including on a branch that jumps back before it.
    with tempfile.TemporaryDirectory() as directory:
        path = _write(directory, lines)
        expected = full_snapshot(path)
        tuning = replace(EVERY_FILE, decode_chunk_bytes=chunk, read_strategy=read)
        with open_session(path, read_only=True, tuning=tuning) as manager:
            assert _cold_by(read, manager)
            assert ordered(manager.build_session_context().to_dict()) == expected["context_order"]
            assert snapshot(manager) == expected
        for leaf_id in ("m0", "b0", "e3"):
            index_path(path).unlink(missing_ok=True)
            with open_session(path, read_only=True, tuning=tuning) as manager:
                if manager.get_entry(leaf_id) is not None:
                    manager.branch(leaf_id)
                    context = manager.build_session_context().to_dict()
                    assert ordered(context) == ordered(_full_context_at(path, leaf_id))


def test_entries_read_ahead_in_a_run_include_those_without_a_string_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Reading position after position decodes the lines ahead as one run (their links checked
    # as lists): an entry whose id is no string is read too, and names nothing.
    header = {"type": "session", "version": 3, "id": "s", "timestamp": "2025-06-02T14:00:00.000Z", "cwd": "/"}
    lines = [orjson.dumps(header)]
    odd = {700: 7, 701: None, 702: ["e0"]}
    for number in range(10_000):  # enough that a read ahead is a small share of the file
        entry_id = odd.get(number, f"e{number}")
        parent = None if number == 0 else f"e{number - 1}" if number - 1 not in odd else "e699"
        message = {"role": "user", "content": f"message {number}", "timestamp": 1}
        record = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2025-06-02T14:00:01Z"}
        lines.append(orjson.dumps({**record, "message": message}))
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    expected = full_snapshot(path)["entries"]
    open_session(path, read_only=True).close()  # writes the index
    with open_session(path, read_only=True) as manager:
        assert is_lazy(manager)
        entries = manager.get_entries()
        read = [entries[position] for position in range(690, 720)]  # one after the other: ahead
        assert read == expected[690:720]
        assert manager.get_entry("e703") == expected[703]
        assert [entry["id"] for entry in manager.get_branch("e703")[-3:]] == ["e698", "e699", "e703"]
