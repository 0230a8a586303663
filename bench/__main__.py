"""``python -m bench [--quick]`` (``make bench``): the performance suite of issue 6.

Generates the data sets once into ``bench/data/`` (gitignored), runs every case in a fresh
interpreter, prints one table with the floors measured in the same run and the ratios to them,
and writes the table and the machine's description to ``bench/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench import data_sets
from bench.measure import in_subprocess, machine
from bench.report import Row, megabytes, seconds, table, write_results

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
NOTES = """**Definitions.** *read*: `open` + `read` of the whole file. *parse*: read, split on `\\n` and
`orjson.loads` every line with the garbage collector paused (the issue's floor). *type/id/parentId*:
a regex pulling those three out of every line. *tail*: reading backwards from the end to the last
compaction line. *open + context*: `SessionManager.open(path)` (writable, takes the lock) and
`build_session_context()`, the offset index present; *first open*: no index yet (a full load that
writes it); *index off*: a full load with the index switched off. All timings are medians of
separate runs, each case in a fresh interpreter; files are in the page cache. Like the parse floor,
timed code runs with the collector paused while it builds entries; the young-generation pass those
objects are due for happens after the timer (`gc.collect()` between runs) in both."""


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def open_rows(sessions: dict[str, Path], runs: int, big_runs: int) -> list[Row]:
    rows: list[Row] = []
    for label, path in sessions.items():
        _log(f"open + context: {label}")
        big = path.stat().st_size > 200_000_000
        floors = in_subprocess("floors", str(path), big_runs if big else runs)
        parse, read = ("parse", floors["parse"]), ("read", floors["read"])
        rows.append(
            Row(
                f"floors of {label} ({megabytes(path.stat().st_size)})",
                seconds(statistics.median(floors["parse"])) + " parse",
                f"read {seconds(statistics.median(floors['read']))}, "
                f"type/id/parentId {seconds(statistics.median(floors['links']))}, "
                f"tail to last compaction {seconds(statistics.median(floors['tail']))}",
            )
        )
        warm = in_subprocess("open_context", str(path), runs, "warm")
        limit_floor, limit, target = None, None, ""
        if "linear" in label:
            limit_floor, target = 1.3, "≤ 1.3× parse"
        elif label in ("100 MB", "500 MB"):
            limit, target = 0.1, "≤ 100 ms" if label == "500 MB" else "(≤ 100 ms stated for 500 MB)"
        case = f"open + context, {label}, {warm['messages']} msgs in context"
        rows.append(
            Row.timing(
                case,
                warm["samples"],
                floors=[parse, read],
                target=target,
                limit=limit,
                limit_floor=limit_floor,
            )
        )
        cold = in_subprocess("open_context", str(path), 1 if big else min(runs, 3), "cold")
        rows.append(
            Row.timing(f"  first open (builds the index), {label}", cold["samples"], floors=[parse, read])
        )
        full = in_subprocess("open_context", str(path), 1 if big else min(runs, 3), "full")
        rows.append(Row.timing(f"  index off (full load), {label}", full["samples"], floors=[parse, read]))
    return rows


def append_rows(runs: int, big: Path) -> list[Row]:
    rows: list[Row] = []
    for policy, count in (("os", 5000), ("batch", 5000), ("fsync", 300)):
        _log(f"appends: {policy}")
        with tempfile.TemporaryDirectory(dir=data_sets.DATA) as directory:
            result = in_subprocess("appends", directory, policy, count)
        target, limit = ("≤ 10 µs", 10e-6) if policy == "os" else ("report", None)
        floor_name = "os.write+fsync" if policy == "fsync" else "os.write"
        rows.append(
            Row.timing(
                f"append_message, durability={policy!r}{' (default)' if policy == 'os' else ''}",
                result["samples"],
                floors=[(floor_name, result["floor"])],
                target=target,
                limit=limit,
            )
        )
    _log("first append after a lazy open")
    first = in_subprocess("first_append", str(big))
    rows.append(
        Row.timing(f"  first append after a lazy open of {megabytes(big.stat().st_size)}", first["first"])
    )
    rows.append(Row.timing("  the appends after it", first["later"]))
    return rows


def listing_rows(directory: Path, runs: int) -> list[Row]:
    _log("listing")
    count = len(list(directory.iterdir()))
    floors = in_subprocess("listing_floors", str(directory), min(runs, 3))
    named = [("header+lines", floors["headers"]), ("parse all", floors["parse"])]
    cold = in_subprocess("listing", str(directory), runs, "cold")
    details = in_subprocess("listing", str(directory), min(runs, 3), "cold-details")
    warm = in_subprocess("listing", str(directory), runs, "warm")
    prefix = in_subprocess("listing", str(directory), runs, "omp18")
    return [
        Row.timing(
            f"list(), {count} sessions of ~50 KB, cold (no cache)",
            cold["samples"],
            floors=named,
            target="≤ 0.5 s",
            limit=0.5,
        ),
        Row.timing("  cold, then every field of every session used", details["samples"], floors=named),
        Row.timing("  warm (metadata cache)", warm["samples"], floors=named, target="≤ 30 ms", limit=0.03),
        Row.timing(
            "  omp 18 dialect: 4 KB prefix + 32 KB tail per file, no cache", prefix["samples"], floors=named
        ),
    ]


def rss_rows(path: Path) -> list[Row]:
    _log("peak RSS")
    in_subprocess("open_context", str(path), 1, "warm")  # the index exists before the lazy cases
    rows = []
    size = path.stat().st_size
    cases = (
        ("floor: every line parsed and kept", "floor", ""),
        ("full load (no index)", "cold", "≤ 2.5× file"),
        ("lazy open, then get_entries()", "entries", "≤ 2.5× file"),
        ("lazy open + context", "context", ""),
    )
    for label, mode, target in cases:
        if mode == "entries":
            in_subprocess("open_context", str(path), 1, "warm")  # "cold" above dropped the index
        result = in_subprocess("rss", str(path), mode)
        peak, baseline = result["peak"], result["baseline"]
        verdict = ("met" if peak <= 2.5 * size else "NOT met") if target else ""
        rows.append(
            Row(
                f"peak RSS, {megabytes(size)}: {label}",
                megabytes(peak),
                f"interpreter before: {megabytes(baseline)}",
                "",
                f"{peak / size:.2f}× file, {(peak - baseline) / size:.2f}× without interpreter",
                target,
                verdict,
            )
        )
    return rows


def tree_rows(paths: Sequence[Path], branched: Path, runs: int) -> list[Row]:
    rows = []
    for path in [*paths, branched]:
        _log(f"get_tree: {path.name}")
        result = in_subprocess("tree", str(path), runs)
        entries = result["entries"]
        for key, label in (("tree", "get_tree(), loaded"), ("open_tree", "open + get_tree()")):
            row = Row.timing(
                f"{label}, {entries} entries ({megabytes(path.stat().st_size)})", result[key], target="linear"
            )
            row.ratio = f"{statistics.median(result[key]) / entries * 1e6:.2f} µs/entry"
            rows.append(row)
    return rows


def search_rows(paths: Sequence[Path], runs: int) -> list[Row]:
    rows = []
    for share in (4, 2, 1):
        subset = paths[: max(1, len(paths) // share)]
        total = sum(p.stat().st_size for p in subset)
        _log(f"search over {megabytes(total)}")
        result = in_subprocess(
            "search", [str(p) for p in subset], "atomic crash", 1 if share == 1 else min(runs, 2)
        )
        row = Row.timing(
            f"search 'atomic crash' over {megabytes(total)} ({result['hits']} hits)",
            result["samples"],
            target="linear",
        )
        row.ratio = f"{total / 2**20 / statistics.median(result['samples']):.0f} MB/s"
        rows.append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller data (100 MB max) and fewer runs")
    parser.add_argument("--runs", type=int, help="runs per timed case (default 7, quick 3)")
    parser.add_argument("--no-write", action="store_true", help="do not update bench/RESULTS.md")
    options = parser.parse_args(argv)
    os.environ["PI_CODING_AGENT_DIR"] = str(data_sets.AGENT)
    sizes = data_sets.QUICK if options.quick else data_sets.FULL
    runs = options.runs or (3 if options.quick else 7)
    started = time.perf_counter()
    _log("generating data (first run only) ...")
    sessions = data_sets.main_sessions(sizes)
    trees = data_sets.tree_sessions(sizes)
    corpus = data_sets.search_corpus(sizes)
    listing = data_sets.listing_corpus(sizes)
    biggest = list(sessions.values())[-1]
    rows = open_rows(sessions, runs, big_runs=3)
    rows += append_rows(runs, biggest)
    rows += listing_rows(listing, runs)
    rows += rss_rows(sessions["100 MB"])
    rows += tree_rows(trees, sessions["100 MB"], min(runs, 3))
    rows += search_rows(corpus, runs)
    print(table(rows))
    _log(f"done in {time.perf_counter() - started:.0f} s")
    if not options.no_write:
        write_results(RESULTS, machine(), rows, NOTES, "quick" if options.quick else "full")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
