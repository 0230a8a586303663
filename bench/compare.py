"""``python -m bench.compare --before REV`` (``make bench-compare BEFORE=REV``): this checkout
against an earlier commit, case by case, interleaved in one run.

A refactoring must not cost speed, and two runs on different days on a shared machine cannot show
that: the machine's own drift is larger than the effect. So both sides run here, now, alternately:
for every case, run 1 of the earlier commit, run 1 of this checkout, run 2 of the earlier commit …,
each run a fresh interpreter importing that side's ``omp_session``, on the same data files. The
earlier commit is checked out as a detached git worktree under ``bench/data/compare/`` (ignored),
and each side has its own agent directory (offset indexes and listing caches of different formats
never meet; the blobs are shared).

This checkout runs twice, with the compiled scanner and with the pure-Python one forced
(``OMP_SESSION_PURE_SCANNER=1``), so a commit from before the scanner is compared like for like.
The table gives each side's median CPU time (wall time in brackets: on a shared machine other work
inflates it, not the CPU time) and the ratio of CPU times to the earlier commit (< 1: faster now),
and marks a ratio worse by more than 5%. ``bench/compare_worker.py`` times every case through the
public API only, the same code for both sides.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import data_sets
from bench.measure import REPO, in_subprocess
from bench.report import seconds

WORK = data_sets.DATA / "compare"
#: A ratio (this checkout ÷ the earlier commit) above this is marked as a regression.
WORSE = 1.05


@dataclass(frozen=True)
class Side:
    """One code base under test: where its sources are and the environment it runs with."""

    name: str
    checkout: Path
    env: dict[str, str]

    def run(self, case: str, *args: Any) -> dict[str, float]:
        # This checkout's compare worker, importing the side's own omp_session first.
        try:
            result: dict[str, float] = in_subprocess(
                case, *args, command=("-m", "bench.compare_worker"), checkout=self.checkout, env=self.env
            )
        except RuntimeError as error:  # which side failed: two sides may share a checkout
            raise RuntimeError(f"{self.name}: {error}") from None
        return result


@dataclass
class Case:
    """One measured quantity: a compare-worker case and its arguments, with each side's runs."""

    label: str
    worker: str
    args: tuple[Any, ...]
    cpu: dict[str, list[float]] = field(default_factory=dict)
    wall: dict[str, list[float]] = field(default_factory=dict)


def _checkout(revision: str) -> Path:
    """A detached worktree of ``revision`` (made once, moved to it when it exists)."""
    commit = subprocess.run(
        ["git", "rev-parse", "--verify", f"{revision}^{{commit}}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    target = WORK / commit[:12]
    if not (target / "src").is_dir():
        WORK.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "worktree", "prune"], cwd=REPO, check=True)
        subprocess.run(
            ["git", "worktree", "add", "--detach", "--force", str(target), commit],
            cwd=REPO,
            check=True,
            capture_output=True,
        )
    return target


def _agent_dir(name: str) -> Path:
    """A side's own agent directory, sharing the data sets' blobs."""
    directory = WORK / f"agent-{name}"
    directory.mkdir(parents=True, exist_ok=True)
    blobs = directory / "blobs"
    if not blobs.exists():
        blobs.symlink_to(data_sets.AGENT / "blobs", target_is_directory=True)
    return directory


def _cases(quick: bool) -> list[Case]:
    sessions = data_sets.main_sessions(data_sets.QUICK)  # up to 100 MB: the opens a refactor touches
    flat = str(sessions["50 MB linear, 100k msgs, no compaction"])
    compacted = str(sessions["50 MB linear, 100k msgs, compactions"])
    small = str(sessions["1 MB"])
    listing = str(data_sets.listing_corpus(data_sets.QUICK if quick else data_sets.FULL))
    cli = str(data_sets.cli_session())
    opens = (("1 MB", small), ("50 MB, no compaction", flat), ("50 MB, compactions", compacted))
    cases = [
        Case(f"open + context, {label}, {state}", "open_context", (path, state))
        for label, path in opens
        for state in ("warm", "cold")
    ]
    cases += [
        Case("first walk through get_entries() after a warm open, 50 MB", "after_open", (flat, "entries")),
        Case("first get_tree() after a warm open, 50 MB", "after_open", (flat, "tree")),
        Case("append_message, per call (2,000 calls)", "appends", (2000,)),
        Case("SessionManager.list(), cold (no cache)", "listing", (listing, "cold")),
        Case("SessionManager.list(), warm (a second call)", "listing", (listing, "warm")),
        Case("SessionManager.list(), cold, every field read", "listing", (listing, "cold, every field")),
    ]
    cases += [
        Case(f"omp-session {name}, 50,000 entries (whole process)", "command", (cli, name))
        for name in ("show", "tree", "stats", "context")
    ]
    return cases


def _table(cases: Sequence[Case], sides: Sequence[Side]) -> str:
    """Each side's median CPU time (wall time beside it) and the ratio of CPU times to the first."""
    before = sides[0].name
    head = ["case", *(side.name for side in sides), *(f"{side.name} ÷ before" for side in sides[1:])]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for case in cases:
        cpu = {name: statistics.median(values) for name, values in case.cpu.items()}
        wall = {name: statistics.median(values) for name, values in case.wall.items()}
        cells = [case.label, *(f"{seconds(cpu[side.name])} ({seconds(wall[side.name])})" for side in sides)]
        for side in sides[1:]:
            ratio = cpu[side.name] / cpu[before] if cpu[before] > 0 else float("nan")
            cells.append(f"{ratio:.2f}×" + (" **worse**" if ratio > WORSE else ""))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compare", description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="the earlier commit (any git revision)")
    parser.add_argument("--runs", type=int, default=5, help="interleaved runs per case and side (default 5)")
    parser.add_argument("--quick", action="store_true", help="the smaller listing corpus")
    parser.add_argument("--only", help="run only the cases whose label contains this text")
    parser.add_argument("--write", type=Path, help="also write the table (Markdown) to this file")
    options = parser.parse_args(argv)
    earlier = _checkout(options.before)
    sides = [
        Side(f"before ({options.before})", earlier, {"OMP_SESSION_PURE_SCANNER": "1"}),
        Side("now, pure Python", REPO, {"OMP_SESSION_PURE_SCANNER": "1"}),
        Side("now, compiled", REPO, {}),
    ]
    for number, side in enumerate(sides):
        side.env["PI_CODING_AGENT_DIR"] = str(_agent_dir(f"side{number}"))
    print("generating data (first run only) ...", file=sys.stderr, flush=True)
    cases = [case for case in _cases(options.quick) if not options.only or options.only in case.label]
    started = time.perf_counter()
    for case in cases:
        print(case.label, file=sys.stderr, flush=True)
        for _ in range(options.runs):
            for side in sides:
                timing = side.run(case.worker, *case.args)
                case.cpu.setdefault(side.name, []).append(timing["cpu"])
                case.wall.setdefault(side.name, []).append(timing["wall"])
    text = _table(cases, sides)
    print(text)
    print(f"done in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    if options.write is not None:
        options.write.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
