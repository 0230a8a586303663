"""Crash injection with real processes and SIGKILL: no acknowledged entry is ever lost."""

from __future__ import annotations

import random
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from omp_session import SessionManager
from omp_session.format.codec import decode_lines

from .conftest import REPO, kill_after, start_child

V1_FIXTURE = REPO / "tests" / "conformance" / "load" / "v1-linear-compaction-index.jsonl"


def _kill_loop(path: Path, kills: int, seed: int, policy: str = "os") -> tuple[list[str], int]:
    rng = random.Random(seed)
    acknowledged: list[str] = []
    for _ in range(kills):
        child = start_child("append", str(path), policy)
        # Kill after a random number of acknowledged appends plus a random pause, so the kill
        # lands anywhere: before the first write, between writes, or inside one.
        acknowledged += kill_after(child, rng.randint(0, 20), rng.choice([0, 0, 0.0005, 0.002]))
    return acknowledged, kills


def _assert_all_present(path: Path, acknowledged: list[str]) -> None:
    session = SessionManager.open(path, read_only=True)
    ids = [entry["id"] for entry in session.get_entries()]
    assert set(acknowledged) <= set(ids), f"lost {len(set(acknowledged) - set(ids))} acknowledged entries"
    # Every child appended to the last entry of the file, so the whole file is one chain.
    chain = session.get_branch()
    assert [entry["id"] for entry in chain] == ids
    # SIGKILL can interrupt a write(2) between pages, leaving a torn line of an entry that was never
    # acknowledged; the next writer puts a newline after it, so it stays one unreadable line.
    skipped = decode_lines(path.read_bytes()).skipped
    assert all(issue.reason == "malformed JSON" for issue in skipped)


def test_sigkill_during_appends_loses_nothing(session_file: Callable[[], Path]) -> None:
    path = session_file()
    acknowledged, kills = _kill_loop(path, kills=60, seed=20261130)  # (1000 a policy: the slow one)
    assert kills == 60 and len(acknowledged) > 150
    _assert_all_present(path, acknowledged)
    # And appending continues cleanly afterwards.
    with SessionManager.open(path) as session:
        last = session.append_message({"role": "user", "content": "after the storm", "timestamp": 1})
    assert SessionManager.open(path, read_only=True).get_leaf_id() == last


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["os", "fsync", "batch"])
def test_sigkill_many_more_times(session_file: Callable[[], Path], policy: str) -> None:
    path = session_file()
    acknowledged, _ = _kill_loop(path, kills=1000, seed=7, policy=policy)
    _assert_all_present(path, acknowledged)


def test_sigkill_during_full_rewrites_never_damages_the_file(session_file: Callable[[], Path]) -> None:
    path = session_file()
    before = SessionManager.open(path, read_only=True).get_entries()
    rng = random.Random(5)
    names: list[str] = []
    for _ in range(40):
        names += kill_after(
            start_child("rename", str(path)), rng.randint(0, 5), rng.choice([0, 0.001, 0.003])
        )
        session = SessionManager.open(path, read_only=True)  # the file is always complete
        assert session.get_entries() == before
        title = session.get_session_name()
        assert title is None or title.startswith("name ")
    assert names, "the child never finished a rewrite"
    final = SessionManager.open(path)  # takes the lock: stale temp files are removed
    final.close()
    assert not list(path.parent.glob(".*.tmp"))
    number = int(str(final.get_session_name()).split()[1])
    assert number >= int(names[-1].split()[1])


def test_sigkill_during_migration_rewrite_keeps_old_or_new(tmp_path: Path) -> None:
    original = V1_FIXTURE.read_bytes()
    rng = random.Random(11)
    outcomes = set()
    for attempt in range(30):
        path = tmp_path / f"v1-{attempt}.jsonl"
        shutil.copyfile(V1_FIXTURE, path)
        # Every third child is killed only after it acknowledged its append: then the migrated
        # file must hold that entry. The others die at random moments, before or during the rewrite.
        wait_for = 1 if attempt % 3 == 0 else 0
        delay = 0 if attempt % 3 == 1 else rng.choice([0.02, 0.05, 0.08, 0.2])
        acknowledged = kill_after(start_child("append-once", str(path)), wait_for, delay)
        data = path.read_bytes()
        if data == original:
            assert not acknowledged, "an acknowledged append is missing from the file"
            outcomes.add("original")
            continue
        session = SessionManager.open(path, read_only=True)
        assert session.get_header()["version"] == 3
        assert len(session.get_entries()) >= len(decode_lines(original).records) - 1
        backup = path.with_name(path.name + ".v1.bak")
        assert backup.read_bytes() == original
        if acknowledged:
            assert acknowledged[0] in {e["id"] for e in session.get_entries()}
        outcomes.add("migrated")
    # Children killed at once never get as far as writing; acknowledged ones always did.
    assert outcomes == {"original", "migrated"}


def test_sigkill_during_branched_session_leaves_source_untouched(session_file: Callable[[], Path]) -> None:
    path = session_file()
    original = path.read_bytes()
    rng = random.Random(3)
    created: list[str] = []
    for _ in range(20):
        created += kill_after(start_child("branch", str(path)), rng.randint(0, 3), rng.choice([0, 0.001]))
        assert path.read_bytes() == original
    for new_file in created:
        assert SessionManager.open(new_file, read_only=True).get_entries()[0]["message"]["content"] == "first"


def test_a_move_killed_between_its_two_renames_is_completed_on_the_next_open(tmp_path: Path) -> None:
    from omp_session.store.paths import default_session_dir

    root = tmp_path / "sessions"
    with SessionManager.create("/work/old", default_session_dir("/work/old", root)) as session:
        session.append_message({"role": "user", "content": "q", "timestamp": 0})
        session.ensure_on_disk()
        session.save_artifact("log", "bash")
        old_file = Path(str(session.get_session_file()))
    child = start_child("move-and-die", str(old_file), "/work/new")
    child.wait(timeout=60)
    assert child.returncode == -9  # killed itself between the file's and the artifacts' renames
    new_file = default_session_dir("/work/new", root) / old_file.name
    assert new_file.exists() and old_file.with_suffix("").is_dir()  # split, as the kill left it
    with SessionManager.open(new_file) as reopened:  # the next writable open completes the move
        assert (new_file.with_suffix("") / "0.bash.log").read_text() == "log"
        assert not old_file.with_suffix("").exists()
        reopened.append_message({"role": "user", "content": "after", "timestamp": 1})
    assert not list(new_file.parent.glob(".*.moving"))
