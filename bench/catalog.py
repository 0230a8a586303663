"""The store catalog (issue 27): ``python -m bench.catalog [--sessions 2000] [--size 560000]``.

Generates (once, deterministically, into ``bench/data/catalog-*``; about a minute per GB) a
sessions root of ``--sessions`` sessions of about ``--size`` bytes in 20 projects (the defaults:
2,000 sessions, 1.04 GiB, the store the issue asks for), then measures, each case in a fresh
interpreter:

* the first catalog build (no catalog database) against the orjson parse floor of the same files
  (every line ``orjson.loads``-ed, the collector paused), its peak RSS, and the catalog's size;
* after one session gained one entry: the next listing, usage report and search (library calls,
  the append done before each timed call);
* a word search and a ranked search over the warm catalog; ``usage --all`` (every session's
  records and the daily report) and the viewer's usage page over the warm catalog.

Prints a Markdown table; ``--write-results`` puts it into ``bench/RESULTS.md`` (its own section).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import sys
import time
from collections.abc import Callable
from itertools import islice
from pathlib import Path
from typing import Any

import orjson

from bench.generate import GENERATOR_VERSION, Shape, ensure
from bench.measure import in_subprocess
from bench.report import Row, megabytes, replace_section, seconds, table

DATA = Path(__file__).resolve().parent / "data"
RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
PROJECTS = 20
#: A word the generated text holds in a few sessions' entries only, and one most entries hold.
RARE, COMMON = "rebase", "session"
#: How many hits a search stopped early makes (``search --limit 50``, a page of the viewer's).
FIRST = 50
_APPENDED = {"role": "user", "content": "one more question about the rebase", "timestamp": 1}


def store(sessions: int, size: int) -> Path:
    """The agent dir of the generated store (its ``sessions`` root generated once)."""
    agent = DATA / f"catalog-v{GENERATOR_VERSION}-{sessions}x{size}"
    root = agent / "sessions"
    for number in range(sessions):
        project = root / f"-home-dev-project-{number % PROJECTS:02d}"
        every = 400 if number % 3 == 0 else 0
        ensure(project, Shape(size, seed=30_000 + number, compaction_every=every, branch_every=300))
    return agent


def _paths(agent: Path) -> list[Path]:
    from omp_session.tools.listing import session_files

    return list(session_files(agent / "sessions"))


def _catalog_files(agent: Path) -> list[Path]:
    return list((agent / "cache").glob("session-list.sqlite3*"))


def _timed(
    action: Callable[[], object], runs: int, before: Callable[[], object] | None = None
) -> list[float]:
    # CPU time of this process (the machine is shared: wall time would time the other loads).
    samples = []
    for _ in range(runs):
        if before is not None:
            before()
        start = time.process_time()
        action()
        samples.append(time.process_time() - start)
    return samples


# -- cases (each run in a fresh interpreter) --------------------------------------------------------


def case_floor(agent: str) -> dict[str, Any]:
    """The orjson parse floor: read every file, split its lines and ``orjson.loads`` each."""
    paths = _paths(Path(agent))
    gc.disable()
    start, cpu = time.perf_counter(), time.process_time()
    for path in paths:
        for line in path.read_bytes().split(b"\n"):
            if line:
                orjson.loads(line)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    size = sum(path.stat().st_size for path in paths)
    return {"seconds": elapsed, "cpu": cpu, "bytes": size, "files": len(paths)}


def case_build(agent: str) -> dict[str, Any]:
    """The first build: the catalog database deleted, then every session catalogued."""
    from omp_session.tools.catalog import Catalog

    for path in _catalog_files(Path(agent)):
        path.unlink()
    paths = _paths(Path(agent))
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    start = time.perf_counter()
    cpu = time.process_time()
    with Catalog() as catalog:
        catalog.refresh(paths)
    return {
        "seconds": time.perf_counter() - start,
        "cpu": time.process_time() - cpu,
        "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "baseline": baseline,
        "catalog": sum(path.stat().st_size for path in _catalog_files(Path(agent))),
        "sessions": catalog.sessions_read,
        "uncatalogued": len(catalog.uncatalogued),
    }


def _append_one(path: Path, number: int) -> None:
    from omp_session import SessionManager

    with SessionManager.open(path) as session:
        session.append_message({**_APPENDED, "timestamp": number})


def case_after_append(agent: str, runs: int) -> dict[str, Any]:
    """One session gains one entry (through the library, as omp appends), then the next call."""
    from omp_session.tools.catalog import Catalog
    from omp_session.tools.catalog_search import search_store
    from omp_session.tools.listing import list_all_sessions
    from omp_session.tools.search import compile_query
    from omp_session.tools.usage_report import ReportOptions, collect_for, collected_report

    paths = _paths(Path(agent))
    target = paths[len(paths) // 2]
    pattern = compile_query(RARE)
    counter = iter(range(10**6))

    def listing() -> object:
        return list_all_sessions(Path(agent) / "sessions")

    def usage() -> object:
        options = ReportOptions()  # what `usage --all` runs: the daily view
        return collected_report(collect_for(paths, options, ("daily",)), "daily", options)

    def search() -> object:
        with Catalog() as catalog:
            return list(search_store(paths, pattern, RARE, regex=False, catalog=catalog))

    for warm in (listing, usage, search):
        warm()
    append = lambda: _append_one(target, next(counter))  # noqa: E731
    return {
        "list": _timed(listing, runs, append),
        "usage": _timed(usage, runs, append),
        "search": _timed(search, runs, append),
    }


def case_warm(agent: str, runs: int) -> dict[str, Any]:
    """Searches, ``usage --all`` and the usage page over the warm catalog."""
    from omp_session.tools.catalog import Catalog
    from omp_session.tools.catalog_search import search_store
    from omp_session.tools.search import compile_query
    from omp_session.tools.stats import collect_stats
    from omp_session.tools.usage_report import ReportOptions, collect_for, collected_report
    from omp_session.web.usage_view import build_usage_page

    paths = _paths(Path(agent))
    rare, common = compile_query(RARE), compile_query(COMMON)

    def word(pattern: Any, query: str, limit: int | None = None) -> Callable[[], object]:
        def run() -> object:
            with Catalog() as catalog:
                return list(islice(search_store(paths, pattern, query, regex=False, catalog=catalog), limit))

        return run

    def ranked() -> object:
        with Catalog() as catalog:
            return catalog.ranked(paths, RARE, limit=20)

    def usage() -> object:
        options = ReportOptions()  # what `usage --all` runs: the daily view
        return collected_report(collect_for(paths, options, ("daily",)), "daily", options)

    def stats() -> object:  # what `stats --all` runs (the first call keeps each session's)
        return collect_stats(paths, branches=False)

    results: dict[str, Any] = {}
    for name, action in (
        ("search rare", word(rare, RARE)),
        # What `search session --all --limit 50` makes (every hit of it: "search common all").
        ("search common", word(common, COMMON, FIRST)),
        ("ranked", ranked),
        ("usage", usage),
        ("stats", stats),
        ("usage page", lambda: build_usage_page(paths, None, None)),
    ):
        action()
        results[name] = _timed(action, runs)
    with Catalog() as catalog:
        results["hits rare"] = len(list(search_store(paths, rare, RARE, regex=False, catalog=catalog)))
        start = time.process_time()
        results["hits common"] = len(list(search_store(paths, common, COMMON, regex=False, catalog=catalog)))
        results["search common all"] = [time.process_time() - start]
    return results


def _run(case: str, *args: Any) -> Any:
    return in_subprocess(
        case,
        *args,
        timeout=3600,
        command=("-m", "bench.catalog", "--case"),
        env={"PI_CODING_AGENT_DIR": str(args[0])},
    )


def rows(agent: Path, runs: int) -> tuple[list[Row], dict[str, Any]]:
    floor = _run("floor", str(agent))
    build = _run("build", str(agent))
    size = floor["bytes"]
    found: list[Row] = [
        Row.timing(
            f"first catalog build, {floor['files']} sessions, {megabytes(size)}"
            f" (CPU; wall {seconds(build['seconds'])})",
            [build["cpu"]],
            floors=[("orjson parse", [floor["cpu"]])],
            target="≤ 1.0× parse",
            limit_floor=1.0,
        ),
        Row.memory("  peak RSS of the build", build["peak"], build["baseline"], size),
        Row(
            "  catalog size",
            megabytes(build["catalog"]),
            "",
            "",
            f"{build['catalog'] / size:.2f}× store",
            "≤ 0.3× store",
            "met" if build["catalog"] <= 0.3 * size else "NOT met",
        ),
    ]
    found[1].target, found[1].verdict = "≤ 150 MB", "met" if build["peak"] <= 150 * 2**20 else "NOT met"
    after = _run("after_append", str(agent), runs)
    for name in ("list", "usage", "search"):
        found.append(
            Row.timing(
                f"{name} after one session gained one entry", after[name], target="≤ 50 ms", limit=0.05
            )
        )
    warm = _run("warm", str(agent), runs)
    rare, common = f"{warm['hits rare']} hits of {RARE!r}", f"{warm['hits common']} hits of {COMMON!r}"
    found += [
        Row.timing(
            f"word search, warm ({rare})",
            warm["search rare"],
            target="≤ 50 ms",
            limit=0.05,
        ),
        Row.timing(
            f"word search, warm, the first {FIRST} of {common} (`--limit {FIRST}`)",
            warm["search common"],
            target="≤ 50 ms",
            limit=0.05,
        ),
        Row.timing(f"  every one of the {common} (no target: each hit is made)", warm["search common all"]),
        Row.timing("ranked search (bm25, 20 best), warm", warm["ranked"], target="≤ 50 ms", limit=0.05),
        Row.timing("usage --all (daily), warm", warm["usage"], target="≤ 100 ms", limit=0.1),
        Row.timing("stats --all (summarised), warm", warm["stats"], target="≤ 100 ms", limit=0.1),
        Row.timing("viewer /usage page (library), warm", warm["usage page"], target="≤ 200 ms", limit=0.2),
    ]
    return found, {"floor": floor, "build": build}


def write_results(section: str) -> None:
    replace_section(RESULTS, "<!-- catalog: start -->", "<!-- catalog: end -->", section)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.catalog", description=__doc__)
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--size", type=int, default=560_000, help="bytes per generated session")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--write-results", action="store_true")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("arguments", nargs="?", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.case:
        print(json.dumps(globals()[f"case_{options.case}"](*json.loads(options.arguments))))
        return
    started = time.perf_counter()
    print("generating the store (first run only) ...", file=sys.stderr, flush=True)
    agent = store(options.sessions, options.size)
    found, _raw = rows(agent, options.runs)
    rendered = table(found)
    print(rendered)
    load = os.getloadavg()[0]
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    section = (
        "## Store catalog"
        f" (`python -m bench.catalog --sessions {options.sessions} --size {options.size}`)\n\n"
        f"Last run: {stamp}, load average {load:.1f} at the end on the shared 2 cores; "
        f"{options.runs} runs per timed case (CPU time of the calling process, the floor's too), "
        f"library calls in a fresh interpreter per case"
        f" ({time.perf_counter() - started:.0f} s in all).\n\n{rendered}\n\n"
    )
    if options.write_results:
        write_results(section)


if __name__ == "__main__":
    main()
