"""``check`` with its columns spilled to temporary files (issue 11 item 14, tools/columns.py): the
same output as in memory, no file left behind whatever happens, and memory that does not grow with
the file."""

from __future__ import annotations

import gc
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from omp_session import SessionError
from omp_session.tools import check as check_module
from omp_session.tools.check_stream import EntryCollector
from omp_session.tools.columns import RESIDENT_BUDGET_BYTES, ColumnStore
from omp_session.tools.repair import check

from .durability.fuzz_campaign import mutate

CORPORA = [Path(__file__).resolve().parent / name / "load" for name in ("conformance", "conformance_omp18")]
HEADER = b'{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}\n'


def _chain(path: Path, entries: int, tool_calls: bool = False) -> Path:
    """One long chain of small entries (a path as long as the file), some with tool calls."""
    lines = [HEADER]
    for number in range(entries):
        parent = "null" if number == 0 else f'"{number - 1:08x}"'
        message: dict[str, object] = {"role": "user", "content": "x"}
        if tool_calls and number % 3 == 1:
            message = {
                "role": "assistant",
                "content": [{"type": "toolCall", "id": f"c{number}", "name": "bash"}],
            }
        elif tool_calls and number % 3 == 2 and number % 7:  # every 7th call goes unanswered
            message = {"role": "toolResult", "toolCallId": f"c{number - 1}", "toolName": "bash"}
        body = json.dumps(message, separators=(",", ":"))
        lines.append(
            f'{{"type":"message","id":"{number:08x}","parentId":{parent},"message":{body}}}\n'.encode()
        )
    path.write_bytes(b"".join(lines))
    return path


def _open_descriptors() -> dict[str, str]:
    found = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            found[name] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue  # (the listing's own descriptor, closed already)
    return found


@pytest.fixture
def spill_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The default temporary directory (where spilled columns go) is a fresh, empty one."""
    directory = tmp_path / "tmp"
    directory.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(directory))
    yield directory


@pytest.mark.parametrize(
    "mutations", [500, pytest.param(4000, marks=pytest.mark.slow)], ids=["suite", "long"]
)
def test_spilled_check_equals_the_in_memory_one_on_the_corpus_and_mutations(
    tmp_path: Path, mutations: int
) -> None:
    rng = random.Random(14 + mutations)
    sources = [path.read_bytes() for corpus in CORPORA for path in sorted(corpus.glob("*.jsonl"))]
    cases = sources + [mutate(rng.choice(sources), rng) for _ in range(mutations)]
    compared = 0
    for number, data in enumerate(cases):
        path = tmp_path / f"{number % 50}.jsonl"
        path.write_bytes(data)
        try:
            expected = check(path, spill=False)
        except SessionError as exc:
            with pytest.raises(type(exc)):
                check(path, spill=True)
            continue
        assert check(path, spill=True) == expected, f"case {number}"
        chunk_bytes = rng.choice([64, 1000, 65536])
        assert check(path, spill=True, chunk_bytes=chunk_bytes) == expected, f"case {number} in chunks"
        compared += 1
    # Most mutated files still have a header: their entries were compared.
    assert compared > len(sources) + mutations * 3 // 4


def test_a_forced_spill_on_a_small_file_gives_the_same_result_and_leaves_nothing(
    tmp_path: Path, spill_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _chain(tmp_path / "chain.jsonl", 3000, tool_calls=True)
    expected = check(path, spill=False)
    assert sum(problem.kind == "tool-call-without-result" for problem in expected) > 100
    gc.collect()  # (as below: only this check's descriptors are compared)
    before = _open_descriptors()
    seen_spilled: list[int] = []
    original = EntryCollector.tool_issues

    def watching(self: EntryCollector, roots: set[int]) -> object:
        # The columns really are files in the temporary directory (nameless: "#123 (deleted)").
        seen_spilled.append(sum(target.startswith(str(spill_dir)) for target in _open_descriptors().values()))
        return original(self, roots)

    monkeypatch.setattr(EntryCollector, "tool_issues", watching)
    assert check(path, spill=True) == expected
    monkeypatch.setenv(check_module.SPILL_ABOVE_VARIABLE, "0")  # the knob: every file spills
    assert check(path) == expected
    assert seen_spilled[0] > 10 and seen_spilled[1] > 10
    assert list(spill_dir.iterdir()) == []
    assert _open_descriptors() == before


@pytest.mark.parametrize("interruption", [KeyboardInterrupt, RuntimeError])
def test_an_exception_mid_check_leaves_no_temporary_file_open(
    tmp_path: Path, spill_dir: Path, monkeypatch: pytest.MonkeyPatch, interruption: type[BaseException]
) -> None:
    path = _chain(tmp_path / "chain.jsonl", 3000, tool_calls=True)
    # What earlier tests of this worker left for the collector is closed now, not mid-test (the
    # comparison below is of this check's own descriptors).
    gc.collect()
    before = _open_descriptors()
    calls = 0
    original = EntryCollector.add

    def interrupted(self: EntryCollector, entry: dict[str, object], line: int) -> None:
        nonlocal calls
        calls += 1
        if calls == 2000:
            raise interruption("stop")
        original(self, entry, line)

    monkeypatch.setattr(EntryCollector, "add", interrupted)
    try:
        check(path, spill=True, chunk_bytes=4096)
    except interruption:
        pass
    else:
        pytest.fail("the interruption did not reach the caller")
    gc.collect()
    assert calls == 2000
    assert list(spill_dir.iterdir()) == []
    assert _open_descriptors() == before


_CHECK_ONE = "import sys; from omp_session.tools.repair import check; check(sys.argv[1])"


def test_a_killed_check_leaves_no_temporary_file(tmp_path: Path, spill_dir: Path) -> None:
    # The spilled columns are nameless from the start: kill -9 cannot leave one behind.
    path = _chain(tmp_path / "chain.jsonl", 200_000)
    child = subprocess.Popen(
        [sys.executable, "-c", _CHECK_ONE, path],
        env={**os.environ, "TMPDIR": str(spill_dir), check_module.SPILL_ABOVE_VARIABLE: "0"},
    )
    try:
        deadline = time.monotonic() + 60
        spilled = 0
        while not spilled and time.monotonic() < deadline and child.poll() is None:
            targets = []
            for name in os.listdir(f"/proc/{child.pid}/fd"):
                try:
                    targets.append(os.readlink(f"/proc/{child.pid}/fd/{name}"))
                except OSError:
                    continue
            spilled = sum(target.startswith(str(spill_dir)) for target in targets)
            time.sleep(0.01)
        assert spilled, "the check never spilled"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL
    assert list(spill_dir.iterdir()) == []


# VmHWM, the peak RSS of this process's own memory: ru_maxrss of a child of a large process
# starts at the parent's size (Linux keeps the high-water mark of the memory before exec).
_LIMITED = """
import resource, sys
from omp_session import PersistenceError
from omp_session.tools.repair import check
resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))  # no file may pass 1 MB
try:
    check(sys.argv[1], spill=True)
except PersistenceError as exc:
    print("PersistenceError", exc)
"""


def test_a_spill_that_cannot_grow_raises_the_librarys_own_error(tmp_path: Path, spill_dir: Path) -> None:
    # A full temporary directory (here a 1 MB file size limit): an error naming it, never SIGBUS
    # from a write through the mapping nor a raw OSError; the command line says it in one line.
    path = _chain(tmp_path / "chain.jsonl", 200_000)
    env = {**os.environ, "TMPDIR": str(spill_dir)}
    result = subprocess.run(
        [sys.executable, "-c", _LIMITED, str(path)], capture_output=True, text=True, timeout=120, env=env
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"PersistenceError {spill_dir}: write failed:"), result.stdout
    assert list(spill_dir.iterdir()) == []


_MEASURE = """
import sys
from omp_session.tools.repair import check
def peak():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
check(sys.argv[1] + ".warm", spill=sys.argv[2] == "spill")  # imports, first allocations
before = peak()
problems = check(sys.argv[1], spill=sys.argv[2] == "spill")
print(len(problems), (peak() - before) // 1024)
"""


def _growth_mb(path: Path, mode: str) -> tuple[int, int]:
    """Problems found, and MB the peak RSS of a fresh process grew by during the check."""
    result = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path), mode], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr
    problems, growth = result.stdout.split()
    return int(problems), int(growth)


def test_a_spilled_check_stays_under_a_memory_bound_the_in_memory_one_exceeds(tmp_path: Path) -> None:
    # 400,000 entries in one chain (39 MB): in memory, their columns, id table and the tool walk's
    # stack (as deep as the file) cost ~90 bytes an entry; spilled, the resident pages stay under
    # the store's budget (16 MB) and only the decoding of a 256 KiB chunk remains. Measured: in
    # memory the peak grows by ~80 MB, spilled by ~20 MB.
    path = _chain(tmp_path / "chain.jsonl", 400_000)
    _chain(Path(f"{path}.warm"), 2000)
    memory_problems, in_memory = _growth_mb(path, "memory")
    spill_problems, spilled = _growth_mb(path, "spill")
    assert memory_problems == spill_problems == 0
    bound = 36
    assert spilled < bound < in_memory, (spilled, in_memory)


def test_the_store_drops_resident_pages_past_its_budget() -> None:
    # The mechanism itself: columns far larger than the budget, written and read through, leave
    # the process's file-backed resident set near where it started.
    with ColumnStore(spill=True) as store:
        start = store._file_pages()
        column = store.column("q")
        for number in range(4_000_000):  # 32 MB
            store.step()
            column.append(number)
        total = 0
        for place in range(0, len(column), 64):  # a read on every other page
            store.step()
            total += column.cells[place]
        assert total == sum(range(0, 4_000_000, 64))
        grown_kb = (store._file_pages() - start) * os.sysconf("SC_PAGESIZE") // 1024
        assert grown_kb < RESIDENT_BUDGET_BYTES // 1024 + 4096, grown_kb
