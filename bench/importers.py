"""Import benchmark: a generated ~100 MB Claude Code transcript, against its orjson parse floor.

    python -m bench.importers [--mb 100] [--runs 3]

Each measurement runs in a fresh process (so peak RSS is that of one job). The floor is the same
file read line by line with ``orjson.loads`` on every line (nothing kept), in the same run. The
import is ``convert`` + ``persist_new`` into a temporary sessions directory, both in omp mode and in
the default lossless mode. Results go to stdout and bench/IMPORT_RESULTS.md.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
PHASE_REPEATS = 3
SESSION = "5e551011-0000-4000-8000-00000000b001"
WORDS = [
    "the",
    "router",
    "maps",
    "paths",
    "to",
    "handlers",
    "and",
    "the",
    "tests",
    "cover",
    "every",
    "branch",
    "of",
    "the",
    "parser",
]


def _text(rng: random.Random, size: int) -> str:
    out: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(WORDS)
        out.append(word)
        length += len(word) + 1
    return " ".join(out)


def generate(path: Path, megabytes: int, seed: int = 7) -> int:
    """A Claude Code transcript shaped like real ones: split responses, tool results, noise records."""
    rng = random.Random(seed)
    base = {
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/dev/app",
        "sessionId": SESSION,
        "version": "2.0.14",
        "gitBranch": "main",
    }
    target = megabytes * 1024 * 1024
    written, turn, parent = 0, 0, None
    ms = 1756720800000
    with open(path, "wb") as out:

        def put(record: dict) -> None:  # type: ignore[type-arg]
            nonlocal written
            line = orjson.dumps(record) + b"\n"
            out.write(line)
            written += len(line)

        while written < target:
            turn += 1
            uid = f"u{turn:07d}-0000-4000-8000-000000000000"
            put({"type": "file-history-snapshot", "messageId": uid, "snapshot": {"trackedFileBackups": {}}})
            put(
                {
                    **base,
                    "parentUuid": parent,
                    "type": "user",
                    "uuid": uid,
                    "timestamp": _iso(ms),
                    "message": {"role": "user", "content": _text(rng, 200)},
                }
            )
            parent, ms = uid, ms + 1000
            msg_id = f"msg_{turn:07d}"
            usage = {
                "input_tokens": 1200,
                "cache_read_input_tokens": 40000,
                "cache_creation_input_tokens": 300,
                "output_tokens": 450,
                "service_tier": "standard",
            }
            blocks = [
                {"type": "thinking", "thinking": _text(rng, 1000), "signature": "EqQB" + "x" * 200},
                {"type": "text", "text": _text(rng, 500)},
                {
                    "type": "tool_use",
                    "id": f"toolu_{turn}",
                    "name": "Bash",
                    "input": {"command": "pytest -q", "description": "run tests"},
                },
            ]
            for n, block in enumerate(blocks):
                aid = f"a{turn:07d}-{n:04d}-4000-8000-000000000000"
                put(
                    {
                        **base,
                        "parentUuid": parent,
                        "type": "assistant",
                        "uuid": aid,
                        "timestamp": _iso(ms),
                        "requestId": f"req_{turn}",
                        "message": {
                            "id": msg_id,
                            "type": "message",
                            "role": "assistant",
                            "model": "claude-sonnet-4-5-20250929",
                            "content": [block],
                            "stop_reason": "tool_use" if n == 2 else None,
                            "stop_sequence": None,
                            "usage": usage,
                        },
                    }
                )
                parent, ms = aid, ms + 200
            output = _text(rng, rng.randint(3000, 9000))
            rid = f"r{turn:07d}-0000-4000-8000-000000000000"
            put(
                {
                    **base,
                    "parentUuid": parent,
                    "type": "user",
                    "uuid": rid,
                    "timestamp": _iso(ms),
                    "message": {
                        "role": "user",
                        "content": [
                            {
                                "tool_use_id": f"toolu_{turn}",
                                "type": "tool_result",
                                "content": output,
                                "is_error": False,
                            }
                        ],
                    },
                    "toolUseResult": {"stdout": output, "stderr": "", "interrupted": False, "isImage": False},
                }
            )
            parent, ms = rid, ms + 1000
            pid = f"p{turn:07d}-0000-4000-8000-000000000000"
            put(
                {
                    **base,
                    "parentUuid": parent,
                    "type": "progress",
                    "uuid": pid,
                    "timestamp": _iso(ms),
                    "data": {"type": "hook_progress", "hookEvent": "PostToolUse"},
                }
            )
            parent = pid
    return turn


def _iso(ms: int) -> str:
    from omp_session.format.ids import iso_from_ms

    return iso_from_ms(ms)


# ---------------------------------------------------------------------------------------------- jobs


def job_floor(path: str) -> None:
    with open(path, "rb") as handle:
        for line in handle:
            orjson.loads(line)


def job_import(path: str, mode: str, out_dir: str) -> None:
    """What ``omp-session import claude PATH`` does for a first import (a streaming conversion)."""
    from omp_session.importers.claude import ClaudeSessionStore
    from omp_session.importers.persist import persist_streaming

    store = ClaudeSessionStore(Path(path).parents[2])
    persist_streaming(store, store.info_for(path), session_dir=out_dir, lossless=mode == "lossless")


def job_phases(path: str, mode: str, out_dir: str) -> dict[str, float]:
    """Cumulative stages of one import, each timed alone (the fastest of ``PHASE_REPEATS``, the
    floor among them): the differences between stages are the phases' costs."""
    from omp_session.importers.base import file_mtime_ms
    from omp_session.importers.claude import ClaudeSessionStore
    from omp_session.importers.claude_convert import convert_claude
    from omp_session.importers.jsonl import iter_lines, iter_raw_records
    from omp_session.importers.session_file import encode_entries

    store = ClaudeSessionStore(Path(path).parents[2])
    info = store.info_for(path)
    lossless = mode == "lossless"

    def read() -> None:
        for _ in iter_lines(path):
            pass

    def parse() -> None:
        for _ in iter_raw_records(path):
            pass

    def convert(encode: bool) -> None:
        def sink(entries: list[dict]) -> None:  # type: ignore[type-arg]
            if encode:
                encode_entries(entries)

        mtime = file_mtime_ms(path)
        convert_claude(info, mtime_ms=mtime, lossless=lossless, sink=sink, raw_records=True)

    def write() -> None:
        job_import(path, mode, tempfile.mkdtemp(dir=out_dir))

    stages: dict[str, Callable[[], object]] = {
        "floor: orjson.loads of every line": functools.partial(job_floor, path),
        "read and split": read,
        "+ orjson.loads": parse,
        "+ convert": functools.partial(convert, False),
        "+ encode": functools.partial(convert, True),
        "+ write (the import)": write,
        "header hint alone (part of the write)": functools.partial(store.header_hint, info),
    }
    times: dict[str, float] = {}
    for _ in range(PHASE_REPEATS):  # the fastest of a few: the machine is shared, noise only adds
        for name, stage in stages.items():
            started, cpu = time.perf_counter(), time.process_time()
            stage()
            elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
            times[name] = min(times.get(name, elapsed), elapsed)
            times[f"cpu:{name}"] = min(times.get(f"cpu:{name}", cpu), cpu)
    return times


def _child(job: str, *args: str) -> None:
    if job == "phases":
        import omp_session.importers.claude

        print(json.dumps(job_phases(*args)))
        return
    if job == "import":  # load the package before the clock starts (the floor imports nothing)
        import omp_session.importers.claude
        import omp_session.importers.persist  # noqa: F401
    before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    {"floor": job_floor, "import": job_import}[job](*args)  # type: ignore[operator]
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(json.dumps({"seconds": elapsed, "cpu": cpu, "peak_mb": after.ru_maxrss / 1024}))


def _measure(*args: str) -> dict[str, float]:
    """Run one job in a fresh process; its last stdout line is its JSON result."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.importers", "--child", *args],
        capture_output=True,
        text=True,
        check=True,
        cwd=HERE.parent,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--child", nargs="+")
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    with tempfile.TemporaryDirectory() as tmp:
        transcript = Path(tmp) / "projects" / "-home-dev-app" / f"{SESSION}.jsonl"
        transcript.parent.mkdir(parents=True)
        turns = generate(transcript, args.mb)
        size_mb = transcript.stat().st_size / 1024 / 1024
        job_floor(str(transcript))  # page cache
        rows: dict[str, list[dict[str, float]]] = {"floor": [], "omp": [], "lossless": []}
        baseline = _measure("floor", os.devnull)
        for run in range(args.runs):
            rows["floor"].append(_measure("floor", str(transcript)))
            for mode in ("omp", "lossless"):
                out = Path(tmp) / f"out-{mode}-{run}"
                out.mkdir()
                rows[mode].append(_measure("import", str(transcript), mode, str(out)))
                output_mb = sum(p.stat().st_size for p in out.iterdir()) / 1024 / 1024
        phases = {mode: _measure("phases", str(transcript), mode, tmp) for mode in ("omp", "lossless")}
        report = _report(rows, baseline, size_mb, turns, output_mb, args.runs)
        report += _phase_report(phases)
    print(report)
    (HERE / "IMPORT_RESULTS.md").write_text(report)


def _report(
    rows: dict[str, list[dict[str, float]]],
    baseline: dict[str, float],
    size_mb: float,
    turns: int,
    output_mb: float,
    runs: int,
) -> str:
    floor_s = statistics.median(r["seconds"] for r in rows["floor"])
    floor_cpu = statistics.median(r["cpu"] for r in rows["floor"])
    floor_mb = statistics.median(r["peak_mb"] for r in rows["floor"])
    lines = [
        "# Import benchmark (generated by `python -m bench.importers`)",
        "",
        f"Last run: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        f"Python {platform.python_version()}, "
        f"{os.cpu_count()} cores; {runs} runs each, medians; every job in a fresh process.",
        "",
        f"Input: a generated Claude Code transcript of {size_mb:.1f} MB ({turns} turns: "
        "split responses, tool "
        f"results with toolUseResult, progress and snapshot records). Lossless output: {output_mb:.1f} MB.",
        f"Interpreter alone (peak RSS): {baseline['peak_mb']:.0f} MB.",
        "",
        "Wall time is what the goal is about; CPU time (user + system) is shown too because, on a "
        "machine shared with other jobs, it varies much less from run to run.",
        "",
        "| Job | Time (median) | × parse floor | CPU time | × floor CPU | Peak RSS | × file size |",
        "|---|---|---|---|---|---|---|",
        f"| floor: orjson.loads of every line | {floor_s:.2f} s | 1.00× | {floor_cpu:.2f} s | 1.00× | "
        f"{floor_mb:.0f} MB | {floor_mb / size_mb:.2f}× |",
    ]
    for mode, label in (
        ("omp", "import, omp mode (`--omp-compatible`)"),
        ("lossless", "import, lossless (default)"),
    ):
        seconds = statistics.median(r["seconds"] for r in rows[mode])
        cpu = statistics.median(r["cpu"] for r in rows[mode])
        peak = statistics.median(r["peak_mb"] for r in rows[mode])
        lines.append(
            f"| {label} | {seconds:.2f} s | {seconds / floor_s:.2f}× | {cpu:.2f} s | "
            f"{cpu / floor_cpu:.2f}× | {peak:.0f} MB | {peak / size_mb:.2f}× |"
        )
    lines += ["", "Goal: within 2× of the parse floor in time, streaming memory (see docs/importers.md).", ""]
    return "\n".join(lines)


def _phase_report(phases: dict[str, dict[str, float]]) -> str:
    lines = [
        "",
        "## Where the time goes",
        "",
        "One fresh process per mode times the parse floor and then cumulative stages of the import "
        f"(each the fastest of {PHASE_REPEATS}, wall and CPU time apart); each stage runs the ones "
        "above it too, so the step from one row to the next is that phase's own cost. The header "
        "hint (the cwd and title read ahead) is timed alone as well; it is part of the last stage. "
        "Ratios are to the floor of the same process.",
        "",
        "| Stage (cumulative) | omp mode | × floor | CPU × floor | lossless | × floor | CPU × floor |",
        "|---|---|---|---|---|---|---|",
    ]
    floor = "floor: orjson.loads of every line"
    for stage in (name for name in phases["omp"] if not name.startswith("cpu:")):
        cells = []
        for mode in ("omp", "lossless"):
            times = phases[mode]
            wall, cpu = times[stage], times[f"cpu:{stage}"]
            cells.append(f"{wall:.2f} s | {wall / times[floor]:.2f}× | {cpu / times[f'cpu:{floor}']:.2f}×")
        lines.append(f"| {stage} | {cells[0]} | {cells[1]} |")
    return "\n".join([*lines, ""])


if __name__ == "__main__":
    main()
