"""check() and repair() on hand-made damage, one kind at a time."""

from __future__ import annotations

import errno
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from omp_session import PersistenceError, SessionError, SessionManager
from omp_session.tools.repair import check, migrate_file, repair

from .conftest import start_child

HEADER = b'{"type":"session","version":3,"id":"r","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}\n'
V1 = Path(__file__).resolve().parents[1] / "conformance" / "load" / "v1-linear-compaction-index.jsonl"


def entry(entry_id: str, parent: str | None, extra: str = "") -> bytes:
    parent_json = "null" if parent is None else f'"{parent}"'
    body = extra or '"message":{"role":"user","content":"x","timestamp":1}'
    return (
        f'{{"type":"message","id":"{entry_id}","parentId":{parent_json},"timestamp":"t",{body}}}\n'.encode()
    )


def write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    return path


def kinds(path: Path) -> list[str]:
    return [problem.kind for problem in check(path)]


def test_clean_file_has_no_problems_and_repair_does_nothing(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER + entry("a", None) + entry("b", "a"))
    before = path.read_bytes()
    assert check(path) == []
    report = repair(path)
    assert report.changes == [] and report.backup is None and path.read_bytes() == before


def test_torn_tail_goes_to_the_sidecar_byte_for_byte(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER + entry("a", None) + b'{"type":"message","id":"b","par')
    problem = check(path)[0]
    assert (problem.kind, problem.line) == ("torn-tail", 3)
    report = repair(path)
    assert report.sidecar is not None and report.sidecar.read_bytes() == b'{"type":"message","id":"b","par\n'
    assert path.read_bytes() == HEADER + entry("a", None)  # untouched lines keep their bytes
    assert report.backup is not None and report.backup.read_bytes().endswith(b'"par')


def test_orphans_missing_kept_entry_and_label_targets_are_reported(tmp_path: Path) -> None:
    compaction = '"summary":"s","firstKeptEntryId":"gone","tokensBefore":1'
    label = '"targetId":"nobody","label":"x"'
    path = write(
        tmp_path,
        HEADER
        + entry("a", "lost")
        + entry("c", "a", compaction)
        .replace(b'"message"', b'"message"')
        .replace(b'"type":"message"', b'"type":"compaction"')
        + entry("l", "c", label).replace(b'"type":"message"', b'"type":"label"'),
    )
    found = {(p.kind, p.entry_id) for p in check(path)}
    assert found == {("orphan", "a"), ("missing-kept-entry", "c"), ("label-target-missing", "l")}
    assert all(p.line for p in check(path))


def test_tool_calls_and_results_that_do_not_pair_up(tmp_path: Path) -> None:
    call = (
        '"message":{"role":"assistant","content":[{"type":"toolCall","id":"call-1","name":"bash","arguments":{}}],'
        '"provider":"p","model":"m","timestamp":1}'
    )
    result = (
        '"message":{"role":"toolResult","toolCallId":"call-9","toolName":"read","content":[],"timestamp":2}'
    )
    path = write(tmp_path, HEADER + entry("a", None, call) + entry("b", "a", result))
    messages = {p.kind: p.message for p in check(path)}
    assert "call-1" in messages["tool-call-without-result"]
    assert "call-9" in messages["tool-result-without-call"]


def test_duplicates_and_cycles_are_fixed_keeping_omps_view(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER + entry("a", None) + entry("a", "z") + entry("z", "a") + entry("s", "s"))
    assert sorted(kinds(path)) == ["cycle", "duplicate-id", "self-parent"]
    report = repair(path)
    assert len(report.changes) == 3
    session = SessionManager.open(path, read_only=True)
    ids = [e["id"] for e in session.get_entries()]
    assert ids[1:] == ["a", "z", "s"] and ids[0] != "a"
    assert check(path) == []
    assert repair(path).changes == []


def test_old_version_is_upgraded_with_a_backup(tmp_path: Path) -> None:
    path = write(tmp_path, V1.read_bytes())
    assert "old-version" in kinds(path)
    assert migrate_file(path, dry_run=True) == 1 and path.read_bytes() == V1.read_bytes()
    assert migrate_file(path) == 1
    assert path.with_name("s.jsonl.v1.bak").read_bytes() == V1.read_bytes()
    assert SessionManager.open(path, read_only=True).get_header()["version"] == 3
    assert migrate_file(path) is None


def test_a_repair_keeps_a_newer_version_as_written(tmp_path: Path) -> None:
    # A file from a format newer than ours is loaded as it is (omp migrates only older ones), so a
    # repair of its damage must not relabel it as version 3 (found by the fuzz test in CI).
    header = HEADER.replace(b'"version":3', b'"version":4')
    path = write(tmp_path, header + b'\x00"torn\n' + entry("a", None))
    report = repair(path)
    assert report.changes and not any("upgraded" in change for change in report.changes)
    assert path.read_bytes().startswith(header)
    assert SessionManager.open(path, read_only=True).get_header()["version"] == 4


def test_corrupt_header_is_rebuilt_and_the_old_line_kept(tmp_path: Path) -> None:
    path = write(tmp_path, b"garbage header\n" + entry("a", None))
    assert kinds(path)[0] == "header"
    report = repair(path)
    assert report.sidecar is not None and report.sidecar.read_bytes() == b"garbage header\n"
    session = SessionManager.open(path, read_only=True)
    assert [e["id"] for e in session.get_entries()] == ["a"]


def test_check_applies_opens_header_rule(tmp_path: Path) -> None:
    """A JSON value before the header makes open() refuse the file; check() must say so too."""
    path = write(tmp_path, b"42\n" + HEADER + entry("a", None))
    problem = check(path)[0]
    assert (problem.kind, problem.line) == ("header", 1)
    report = repair(path)  # the stray value goes to the sidecar; the header is first again
    assert report.sidecar is not None and report.sidecar.read_bytes() == b"42\n"
    assert check(path) == []


def _damaged(tmp_path: Path) -> tuple[Path, bytes]:
    rejected = b'{"type":"message","id":"torn'
    path = write(tmp_path, HEADER + entry("a", None) + rejected + b"\n" + entry("b", "a"))
    return path, rejected


def test_repair_on_a_full_disk_raises_its_own_error_and_leaves_no_half_sidecar(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _rejected = _damaged(tmp_path)
    sidecar = path.with_name(path.name + ".rejected")
    sidecar.write_bytes(b"kept from before\n")
    original = path.read_bytes()
    real_write = os.write

    def half_then_full(fd: int, data: Any) -> int:
        if len(data) > 4:
            real_write(fd, bytes(data[:4]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(PersistenceError, match="No space left"):
        repair(path)
    monkeypatch.undo()
    assert path.read_bytes() == original
    assert sidecar.read_bytes() == b"kept from before\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl", "s.jsonl.rejected"]


def test_a_repair_killed_after_its_sidecar_never_duplicates_the_rejected_lines(tmp_path: Path) -> None:
    rng = random.Random(12)
    for trial in range(12):
        directory = tmp_path / f"t{trial}"
        directory.mkdir()
        path, rejected = _damaged(directory)
        child = start_child("repair-on-go", str(path), stdin=True)
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline() == b"ready\n"
        child.stdin.write(b"go\n")
        child.stdin.flush()
        time.sleep(rng.choice([0, 0.0005, 0.001, 0.002, 0.004, 0.008]))
        child.send_signal(signal.SIGKILL)
        child.wait()
        repair(path)  # the re-run after the crash
        sidecar = path.with_name(path.name + ".rejected")
        assert sidecar.read_bytes() == rejected + b"\n"
        assert check(path) == []


def test_normal_omp_output_is_information_not_a_problem(tmp_path: Path) -> None:
    # A version 1 file, and a turn that ended in an error with a tool call omp never answered.
    old = write(tmp_path, V1.read_bytes())
    assert [(p.kind, p.severity) for p in check(old)] == [("old-version", "info")]
    assert repair(old).changes == [] and old.read_bytes() == V1.read_bytes()  # check and repair agree
    terminated = (
        '"message":{"role":"assistant","content":[{"type":"toolCall","id":"call-1","name":"bash",'
        '"arguments":{}}],"provider":"p","model":"m","stopReason":"error","errorMessage":"terminated",'
        '"timestamp":1}'
    )
    (tmp_path / "t").mkdir()
    path = write(tmp_path / "t", HEADER + entry("a", None) + entry("b", "a", terminated))
    assert [(p.kind, p.severity) for p in check(path)] == [("tool-call-without-result", "info")]
    assert repair(path).changes == []
    for target in (old, path):
        result = subprocess.run(
            [str(Path(sys.executable).with_name("omp-session")), "check", str(target)],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PI_CODING_AGENT_DIR": str(tmp_path / "agent")},
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert "information, not a problem" in result.stdout


CORPORA = [
    Path(__file__).resolve().parents[1] / name / "load" for name in ("conformance", "conformance_omp18")
]


@pytest.mark.parametrize("chunk_bytes", [64, 1000, 65536])
def test_checking_in_chunks_finds_exactly_what_a_whole_read_finds(tmp_path: Path, chunk_bytes: int) -> None:
    from .fuzz_campaign import mutate

    rng = random.Random(chunk_bytes)
    sources = [path.read_bytes() for corpus in CORPORA for path in sorted(corpus.glob("*.jsonl"))]
    cases = sources + [mutate(rng.choice(sources), rng) for _ in range(150)]
    for number, data in enumerate(cases):
        path = tmp_path / f"{number}.jsonl"
        path.write_bytes(data)
        try:
            expected = check(path)
        except SessionError as exc:
            with pytest.raises(type(exc)):
                check(path, chunk_bytes=chunk_bytes)
            continue
        assert check(path, chunk_bytes=chunk_bytes) == expected, f"case {number}"


@pytest.mark.parametrize("damage", ["none", "duplicates", "orphans", "cycle"])
def test_a_branched_session_with_tool_calls_checks_the_same_in_chunks(tmp_path: Path, damage: str) -> None:
    # A generated session of many branches, tool calls and results, compactions and labels: the
    # compact streamed walk (tools/check_stream.py) must find what the full index finds.
    from bench.generate import Shape, generate

    path = tmp_path / "branched.jsonl"
    generate(path, Shape(400_000, branch_every=40, compaction_every=300))
    lines = path.read_bytes().split(b"\n")
    ids = [line.split(b'"id":"', 1)[1].split(b'"', 1)[0] for line in lines[1:] if b'"id":"' in line]
    rng = random.Random(damage)
    if damage == "duplicates":
        # (Each duplicate attaches its id's subtree once more; the tool walk enters it once.)
        for _ in range(5):
            lines.insert(rng.randrange(2, len(lines) - 1), rng.choice(lines[1:-1]))
    elif damage == "orphans":
        for number in rng.sample(range(2, len(lines) - 1), 30):
            lines[number] = lines[number].replace(b'"parentId":"', b'"parentId":"gone', 1)
    elif damage == "cycle":  # an early entry's parent becomes a later one: a loop
        first, second = ids[10], ids[400]
        lines = [
            re.sub(rb'"parentId":(null|"[^"]*")', b'"parentId":"' + second + b'"', line, count=1)
            if b'"id":"' + first + b'"' in line
            else line
            for line in lines
        ]
    path.write_bytes(b"\n".join(lines))
    expected = check(path)
    assert any(problem.kind.startswith("tool-") for problem in expected)
    if damage != "none":
        assert any(problem.kind.replace("-", "").startswith(damage[:5]) for problem in expected)
    for chunk_bytes in (4096, 1 << 20):
        assert check(path, chunk_bytes=chunk_bytes) == expected
        assert check(path, chunk_bytes=chunk_bytes, spill=True) == expected  # columns in files
    assert check(path, spill=True) == expected


def test_duplicated_ids_never_make_the_tool_walk_exponential(tmp_path: Path) -> None:
    # A chain of 60 ids each written twice: omp's tree attaches every id's node under its parent
    # once per occurrence, 2^60 paths. Walking each path would never end; the walk enters each
    # node once, in a whole read and in chunks, and still finds every unanswered call.
    lines = [b'{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/x"}']
    parent = "null"
    for number in range(60):
        call = {"type": "toolCall", "id": f"c{number}", "name": "bash", "arguments": {}}
        entry = {
            "type": "message",
            "id": f"d{number}",
            "parentId": None if parent == "null" else parent,
            "timestamp": "2025-01-01T00:00:00.000Z",
            "message": {"role": "assistant", "content": [call]},
        }
        lines += [json.dumps(entry).encode()] * 2
        parent = f"d{number}"
    path = tmp_path / "duplicated.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    script = (
        "import sys; from pathlib import Path; from omp_session.tools.repair import check; "
        "p = Path(sys.argv[1]); whole = check(p); "
        "assert check(p, chunk_bytes=4096) == whole; "
        "assert check(p, chunk_bytes=4096, spill=True) == whole; "
        "print(sum(x.kind == 'duplicate-id' for x in whole), "
        "sum(x.kind == 'tool-call-without-result' for x in whole))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["60", "60"]
