"""Issue 12 item 5: a lazily opened file's entries are decoded on access, with a bounded cache in a
read-only session, and every read still equals a full load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omp_session import SessionManager
from omp_session.format.codec import encode_line
from omp_session.store._indexed.lazy_index import LazyEntries
from omp_session.store.loading import load_session
from omp_session.store.tuning import DEFAULT_TUNING, Tuning
from tests.perf.tuned import EVERY_FILE, NO_FILE, open_session

from .sessions import HEADER, full_snapshot, is_lazy, opened_cold, session_lines, snapshot

SETTINGS = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _session(path: Path, count: int, text: str = "text") -> Path:
    lines = [encode_line(HEADER)]
    parent = None
    for number in range(count):
        entry = {
            "type": "message",
            "id": f"e{number}",
            "parentId": parent,
            "timestamp": "2025-06-02T14:00:00.000Z",
            "message": {"role": "user", "content": f"{text} {number}", "timestamp": number},
        }
        lines.append(encode_line(entry))
        parent = f"e{number}"
    path.write_bytes(b"".join(lines))
    return path


def _small_cache(budget: int, chunk: int) -> Tuning:
    """A cache of ``budget`` bytes of lines, iteration and read-ahead by ``chunk`` bytes."""
    return replace(EVERY_FILE, entry_cache_bytes=budget, iter_chunk_bytes=chunk, read_ahead_bytes=chunk)


#: What the ``small_cached`` session is read with: a 2,000-byte cache and 500-byte chunks.
SMALL_CACHE = _small_cache(2000, 500)


@pytest.fixture
def small_cached(tmp_path: Path) -> Path:
    """A 400-entry linear session (read with ``SMALL_CACHE``)."""
    return _session(tmp_path / "s.jsonl", 400)


def _lazy(path: Path, *, read_only: bool = True, tuning: Tuning = EVERY_FILE) -> SessionManager:
    open_session(path, read_only=True, tuning=tuning).close()  # writes the index
    manager = open_session(path, read_only=read_only, tuning=tuning)
    assert is_lazy(manager) and not opened_cold(manager)
    return manager


@SETTINGS
@given(lines=session_lines(), budget=st.integers(0, 2000), chunk=st.integers(1, 600), cold=st.booleans())
def test_every_read_with_a_small_cache_equals_a_full_load(
    lines: list[bytes], budget: int, chunk: int, cold: bool
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "session.jsonl"
        path.write_bytes(b"".join(lines))
        expected = full_snapshot(path)
        tuning = _small_cache(budget, chunk)
        if not cold:
            open_session(path, read_only=True, tuning=tuning).close()
        with open_session(path, read_only=True, tuning=tuning) as manager:
            assert snapshot(manager) == expected


def test_a_walk_through_the_entries_loads_none_of_them_for_good(small_cached: Path) -> None:
    path = small_cached
    with _lazy(path, tuning=SMALL_CACHE) as manager:
        entries = manager.get_entries()
        assert isinstance(entries, LazyEntries) and len(entries) == 400
        assert [entry["id"] for entry in entries] == [f"e{n}" for n in range(400)]
        assert [entry["id"] for entry in reversed(entries)] == [f"e{n}" for n in reversed(range(400))]
        index = entries.lazy_index
        assert not index.materialized
        cache = index._store.cache
        assert 0 < len(cache) < 40  # only the last ~2,000 bytes of lines stay decoded
        assert entries == load_session(path).entries and load_session(path).entries == entries
        assert entries[10:13] == load_session(path).entries[10:13] and isinstance(entries[10:13], list)
        assert entries.index(entries[7]) == 7 and entries.count(entries[7]) == 1


def test_a_cached_entry_is_the_same_dict_and_a_dropped_one_an_equal_dict(small_cached: Path) -> None:
    path = small_cached
    with _lazy(path, tuning=SMALL_CACHE) as manager:
        fifth = manager.get_entries()[5]
        assert manager.get_entries()[5] is fifth and manager.get_entry("e5") is fifth
        assert manager.get_branch("e5")[-1] is fifth and manager.get_children("e4") == [fifth]
        for _ in manager.get_entries():  # reads everything after it: the cache drops it
            pass
        again = manager.get_entry("e5")
        assert again == fifth and again is not fifth
        assert manager.get_entry("e5") is again  # cached again


def test_an_entry_changed_in_place_lasts_while_cached_in_a_read_only_session(small_cached: Path) -> None:
    # Documented (docs/performance.md, "Memory"): nothing can write a read-only session, so its
    # entries may be decoded again from the file, which drops a change made to the old dict.
    path = small_cached
    with _lazy(path, tuning=SMALL_CACHE) as manager:
        entry = manager.get_entry("e5")
        assert entry is not None
        entry["mark"] = 1
        assert manager.get_entry("e5") == {**entry}  # the same dict while it stays cached
        for _ in manager.get_entries():
            pass
        assert "mark" not in (manager.get_entry("e5") or {})  # decoded again from the file


def test_a_writable_session_keeps_the_entries_it_handed_out(small_cached: Path) -> None:
    # omp's rewriteEntries contract: the caller changes entries in place, then asks for a rewrite.
    path = small_cached
    with _lazy(path, read_only=False, tuning=SMALL_CACHE) as manager:
        walked = list(manager.get_entries())
        for entry in walked:
            entry["message"]["content"] = "pruned"
        assert all(a is b for a, b in zip(manager.get_entries(), walked, strict=True))
        assert not manager._state.index.materialized  # type: ignore[attr-defined]
        manager.rewrite_entries()
    assert {entry["message"]["content"] for entry in load_session(path).entries} == {"pruned"}


def test_the_view_holds_the_entries_there_were_and_appends_need_no_load(small_cached: Path) -> None:
    path = small_cached
    with _lazy(path, read_only=False, tuning=SMALL_CACHE) as manager:
        before = manager.get_entries()
        manager.append_message({"role": "user", "content": "more", "timestamp": 1})
        after = manager.get_entries()
        assert len(before) == 400 and len(after) == 401 and after[-1]["message"]["content"] == "more"
        assert list(after)[-1] is after[400] and next(reversed(after)) is after[-1]
        assert not manager._state.index.materialized  # type: ignore[attr-defined]
        manager.get_tree()  # loads everything: the views read from the full index from then on
        assert manager._state.index.materialized  # type: ignore[attr-defined]
        assert list(after) == load_session(path).entries and len(before) == 400


def test_appends_after_a_lazy_open_remember_nothing_per_fresh_id(small_cached: Path) -> None:
    # Every append checks a fresh id against the indexed ids (a hash lookup in the index): an
    # agent appending for hours must not grow a set of every id it ever drew.
    with _lazy(small_cached, read_only=False, tuning=SMALL_CACHE) as manager:
        store = manager._state.index._store  # type: ignore[attr-defined]
        for number in range(200):
            manager.append_message({"role": "user", "content": f"more {number}", "timestamp": 1})
        assert not store._absent and not manager._state.index.materialized  # type: ignore[attr-defined]
        assert len(manager.get_entries()) == 600


def test_a_file_changed_in_place_under_a_walk_is_read_again_in_full(small_cached: Path) -> None:
    # Issue 11 item 8: the stale index is noticed by the chunk that reads the changed line; the
    # walk then goes on from the file as it is now.
    path = small_cached
    with _lazy(path, tuning=SMALL_CACHE) as manager:
        entries = manager.get_entries()
        walked = [entries[0]]
        data = path.read_bytes()
        with path.open("r+b") as handle:  # overwrite in place: no tool of ours does this
            handle.write(data.replace(b'"id":"e300"', b'"id":"x300"'))
        walked += entries[1:]
        assert walked == load_session(path).entries
        assert manager._state.index.materialized  # type: ignore[attr-defined]


# Peak RSS from /proc: ``ru_maxrss`` of a child starts at its parent's (a large pytest process),
# while writing 5 to clear_refs resets this process's own high-water mark.
_MEASURE = """
import json, re, sys
from omp_session import Runtime, SessionManager, Tuning
# A small cache: what stays is then clearly not every entry.
runtime = Runtime(tuning=Tuning(entry_cache_bytes=1 << 20))
def status(key):
    text = open("/proc/self/status").read()
    return int(re.search(key + r":\\s+(\\d+) kB", text).group(1)) * 1024
with open("/proc/self/clear_refs", "w") as handle:
    handle.write("5")
baseline = status("VmRSS")
manager = SessionManager.open(sys.argv[1], read_only=True, runtime=runtime)
entries = manager.get_entries()
if sys.argv[2] == "keep":
    kept = list(entries)
else:
    count = sum(1 for _ in entries)
print(json.dumps({"grown": status("VmHWM") - baseline, "lazy": type(entries).__name__}))
"""


def _grown(path: Path, mode: str, agent: Path) -> dict[str, object]:
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(agent)}
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path), mode], env=env, capture_output=True, check=True
    )
    found: dict[str, object] = orjson.loads(done.stdout.splitlines()[-1])
    return found


def test_a_walk_through_a_large_session_stays_within_the_memory_budget(tmp_path: Path) -> None:
    # A fresh process per measurement (peak RSS); the control keeps every entry (what a full
    # load holds), so the test fails if the walk kept them too.
    path = _session(tmp_path / "big.jsonl", 40_000, text="some words of a message " * 16)
    size = path.stat().st_size
    # An index written within ``Tuning.racy_ns`` of the file's last change makes the open check
    # the file's CRC in 8 MB blocks (a peak of its own, store/_indexed/trust.py): index a settled
    # file.
    time.sleep(DEFAULT_TUNING.racy_ns / 1e9 + 0.1)
    agent = tmp_path / "agent"
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(agent)}
    subprocess.run(  # the offset index, built in another process
        [sys.executable, "-c", "import sys; from omp_session import SessionManager as M; "
         "M.open(sys.argv[1], read_only=True).close()", str(path)],
        env=env, check=True,
    )  # fmt: skip
    walked, kept = _grown(path, "walk", agent), _grown(path, "keep", agent)
    assert walked["lazy"] == kept["lazy"] == "LazyEntries"
    assert int(kept["grown"]) > 2.5 * size  # type: ignore[call-overload]  # every entry as a dict
    # What a walk keeps: the id column decoded (a string per entry, to check each chunk's links),
    # the 1 MiB cache (about 5 MB of dicts), a chunk being decoded: about 0.6× this file.
    assert int(walked["grown"]) < 0.75 * size, json.dumps(walked)  # type: ignore[call-overload]


def test_a_context_of_a_small_share_of_the_file_does_not_decode_the_id_column(tmp_path: Path) -> None:
    # The bulk link check compares with the whole id column (about 70 ns an entry of the file to
    # decode): a walk pays it, a context of a few hundred lines of a large file must not (it made
    # the warm open + context of the 100 MB bench session 12 → 21 ms).
    path = _session(tmp_path / "s.jsonl", 6000)
    with _lazy(path) as manager:
        manager.branch("e300")
        context = manager.build_session_context()
        assert len(context.messages) == 301
        assert manager._state.index._store._ids_padded is None  # type: ignore[attr-defined]
        assert sum(1 for _ in manager.get_entries()) == 6000  # a walk: the column then pays
        assert manager._state.index._store._ids_padded is not None  # type: ignore[attr-defined]


@pytest.mark.parametrize("with_empty_id", [True, False])
def test_an_empty_parent_id_is_a_root_yet_a_child_of_the_empty_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_empty_id: bool
) -> None:
    # omp lists an entry among the children of its raw parentId (13.19's loop, omp 18's children
    # map), even when that parentId is "" and so makes a root of the tree. Found by the property
    # test above: the lazy index's parent column stores "" as a root, SessionIndex skipped it.
    def message(entry_id: str, parent: str | None) -> dict[str, object]:
        return {
            "type": "message",
            "id": entry_id,
            "parentId": parent,
            "timestamp": "2025-06-02T14:00:00Z",
            "message": {"role": "user", "content": entry_id, "timestamp": 1},
        }

    path = tmp_path / "s.jsonl"
    lines = [HEADER, message("a", None), message("" if with_empty_id else "b", "a"), message("c", "")]
    path.write_bytes(b"".join(encode_line(line) for line in lines))
    with _lazy(path) as lazy:
        assert [entry["id"] for entry in lazy.get_children("")] == ["c"]
        assert "c" in [node.entry["id"] for node in lazy.get_tree()]
    with open_session(path, read_only=True, tuning=NO_FILE) as full:
        assert not is_lazy(full)
        assert [entry["id"] for entry in full.get_children("")] == ["c"]
        assert "c" in [node.entry["id"] for node in full.get_tree()]
