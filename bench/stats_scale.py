"""Issue 27 item 6: ``omp-session stats`` of one 50,000-entry session with many branches, within
2× ``omp-session context`` of the same session (the floor, measured in the same run).

The session is generated (``bench/generate.py``: 50,000 messages, a side branch every 700
entries, compactions: 73 leaves). Each command runs ``--runs`` times in a fresh process; the
figure is its CPU time (user + system of the child, so other load on the machine counts less
than in wall time), the median of the runs. ``--src`` runs another checkout's code (its
``src`` on ``PYTHONPATH``) for a before/after comparison.

    python -m bench.stats_scale [--runs 5] [--src /path/to/other/src]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.generate import Shape, ensure

DATA = Path(__file__).resolve().parent / "data"


def _cpu_seconds(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """``(cpu, wall)`` seconds of one run of ``command`` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.stats_scale", description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--src", help="run the code of this src directory instead of the installed one")
    options = parser.parse_args(argv)
    path = ensure(DATA, Shape(0, target_messages=50_000))
    env = dict(os.environ, COLUMNS="100", NO_COLOR="1")
    if options.src:
        env["PYTHONPATH"] = options.src
    base = [sys.executable, "-m", "omp_session"]
    cases = {
        "context": [*base, "context", str(path)],
        "stats": [*base, "stats", str(path)],
        "stats --branches": [*base, "stats", "--branches", str(path)],
    }
    results: dict[str, tuple[float, float]] = {}
    for name, command in cases.items():
        if name == "stats --branches" and options.src:
            command = [*base, "stats", str(path)]  # (an older checkout has no --branches)
        samples = [_cpu_seconds(command, env) for _ in range(options.runs)]
        results[name] = (statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples))
    floor = results["context"][0]
    print(f"session: {path.name}, {path.stat().st_size / 2**20:.1f} MB, runs: {options.runs}")
    print("| command | CPU (median) | wall (median) | × context CPU | target | verdict |")
    print("|---|---|---|---|---|---|")
    for name, (cpu, wall) in results.items():
        ratio = cpu / floor
        target = "≤ 2× context" if name == "stats" else ""
        verdict = ("met" if ratio <= 2 else "NOT met") if target else ""
        print(f"| {name} | {cpu:.2f} s | {wall:.2f} s | {ratio:.2f}× | {target} | {verdict} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
