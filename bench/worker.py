"""One benchmark case per run of ``python -m bench.worker CASE JSON-ARGS`` (a fresh interpreter,
so heaps and peak RSS do not leak from one case into the next). Prints one JSON line."""

from __future__ import annotations

import gc
import json
import os
import re
import resource
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from bench.measure import drop_from_page_cache, settle, timed
from omp_session import Runtime, SessionManager, Tuning
from omp_session.dialects import OMP_18_2
from omp_session.store._indexed.offsets import drop_index
from omp_session.tools.listing import list_sessions
from omp_session.tools.listing_cache import cache_path

_MESSAGE = {"role": "user", "content": "a small message of a few words", "timestamp": 1}
_TAIL_BLOCK = 64 * 1024


#: The full load, for comparison: no file takes the offset-index paths.
_FULL = Runtime(tuning=Tuning(min_indexed_bytes=1 << 62))


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _parse_paused(path: str) -> list[Any]:
    data = _read(path)
    gc.disable()
    try:
        return [orjson.loads(line) for line in data.split(b"\n") if line]
    finally:
        gc.enable()


def _tail_to_compaction(path: str) -> int:
    # Read backwards in blocks until the last compaction line is found.
    with open(path, "rb") as handle:
        end = handle.seek(0, os.SEEK_END)
        position = end
        while position > 0:
            position = max(0, position - _TAIL_BLOCK)
            block = os.pread(handle.fileno(), min(_TAIL_BLOCK * 2, end - position), position)
            found = block.rfind(b'"type":"compaction"')
            if found >= 0:
                return position + found
    return -1


_LINKS = re.compile(rb'^\{"type":"([^"]*)","id":"([^"]*)","parentId":(null|"[^"]*")', re.M)


def floors(path: str, runs: int, cold: bool) -> dict[str, Any]:
    """What any reader of this file pays: reading it, parsing it, finding its last compaction;
    ``cold``: the file evicted from the page cache before every run."""
    _read(path)  # into the page cache
    before = (lambda: drop_from_page_cache(path)) if cold else None
    return {
        "read": timed(lambda: _read(path), runs, before, gc_pass=False).to_json(),
        "parse": timed(lambda: _parse_paused(path), runs, before, gc_pass=False).to_json(),
        "links": timed(lambda: len(_LINKS.findall(_read(path))), runs, before, gc_pass=False).to_json(),
        "tail": timed(lambda: _tail_to_compaction(path), runs, before, gc_pass=False).to_json(),
    }


def _open_context(path: str) -> int:
    manager = SessionManager.open(path)
    messages = len(manager.build_session_context().messages)
    manager.close()
    return messages


def _cold(path: str) -> None:
    drop_index(path)
    drop_from_page_cache(path)


def open_context(path: str, runs: int, mode: str) -> dict[str, Any]:
    """``SessionManager.open`` + ``build_session_context`` (+ the GC pass they leave due):
    ``warm`` (offset index present, file cached), ``cold`` (no index, file evicted from the page
    cache: the first open of a session omp wrote) or ``full`` (the index switched off, cached)."""
    _read(path)
    runtime = _FULL if mode == "full" else None
    if mode == "warm":
        _open_context(path)  # make sure the index exists
    before = (lambda: _cold(path)) if mode == "cold" else None
    samples: list[float] = []
    messages = 0
    for _ in range(runs):
        if before is not None:
            before()
        gc.collect()
        start = time.perf_counter()
        manager = SessionManager.open(path, runtime=runtime)
        context = manager.build_session_context()
        settle()
        samples.append(time.perf_counter() - start)
        messages = len(context.messages)
        manager.close()
        del manager, context
        gc.collect()
    return {"samples": samples, "messages": messages}


def _walk_entries(manager: SessionManager) -> int:
    # What a caller of get_entries() does with it: go through every entry (a lazily opened file's
    # entries are decoded then, issue 12 item 5).
    count = 0
    for _ in manager.get_entries():
        count += 1
    return count


def lazy_to_full(path: str, runs: int, mode: str) -> dict[str, Any]:
    """The first walk through ``get_entries()`` and the first ``get_tree()`` after an open (each
    timed on its own fresh open, GC pass included), and a second walk through ``get_entries()``
    on the same open: ``warm`` (a lazy open through the stored index: every line is read then) or
    ``cold`` (the one-pass open without index: every line was decoded already)."""
    _read(path)
    _open_context(path)
    floor: list[float] = []
    again: list[float] = []

    def first(call: str) -> list[float]:
        samples = []
        for _ in range(runs):
            # The parse floor interleaved with the runs: on a shared machine the load changes
            # between one case's floors and its runs, and the ratio would measure that change.
            floor.extend(timed(lambda: _parse_paused(path), 1, gc_pass=False).samples)
            if mode == "cold":
                _cold(path)
            manager = SessionManager.open(path, read_only=True)
            gc.collect()
            start = time.perf_counter()
            result = _walk_entries(manager) if call == "get_entries" else getattr(manager, call)()
            settle()
            samples.append(time.perf_counter() - start)
            if call == "get_entries":
                start = time.perf_counter()
                _walk_entries(manager)
                settle()
                again.append(time.perf_counter() - start)
            manager.close()
            del manager, result
            gc.collect()
        return samples

    return {"entries": first("get_entries"), "tree": first("get_tree"), "floor": floor, "again": again}


def appends(directory: str, policy: str, count: int) -> dict[str, Any]:
    """Per-call seconds of ``append_message`` of a small message, and of one bare ``os.write``."""
    with SessionManager.create("/bench", directory, durability=policy) as session:  # type: ignore[arg-type]
        session.append_message(
            {"role": "assistant", "content": [], "provider": "p", "model": "m", "timestamp": 0}
        )
        for _ in range(100):
            session.append_message(_MESSAGE)  # warm up
        samples = []
        for _ in range(count):
            start = time.perf_counter_ns()
            session.append_message(_MESSAGE)
            samples.append((time.perf_counter_ns() - start) / 1e9)
        line = Path(str(session.get_session_file())).read_bytes().splitlines(keepends=True)[-1]
    floor_path = Path(directory) / "floor.jsonl"
    fd = os.open(floor_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        writes = []
        for _ in range(count):
            start = time.perf_counter_ns()
            os.write(fd, line)
            if policy == "fsync":
                os.fsync(fd)
            writes.append((time.perf_counter_ns() - start) / 1e9)
    finally:
        os.close(fd)
    return {"samples": samples, "floor": writes}


def first_append(path: str, mode: str) -> dict[str, Any]:
    """The first append after a lazy open and the ones after it: ``warm`` (opened through the
    stored index), ``cold`` (the one-pass open that wrote it)."""
    work = Path(path).with_name("append-copy.jsonl")
    shutil.copy(path, work)
    try:
        if mode == "warm":
            SessionManager.open(work, read_only=True).close()  # index it
        else:
            _cold(str(work))
        with SessionManager.open(work) as session:
            gc.collect()
            start = time.perf_counter()
            session.append_message(_MESSAGE)
            first = time.perf_counter() - start
            later = []
            for _ in range(200):
                start = time.perf_counter()
                session.append_message(_MESSAGE)
                later.append(time.perf_counter() - start)
    finally:
        drop_index(work)
        work.unlink(missing_ok=True)
    return {"first": [first], "later": later}


def rss(path: str, mode: str) -> dict[str, Any]:
    """Peak RSS (bytes) of one load of ``path``; ``baseline`` is the interpreter before it."""
    # For "entries" and "context" the caller has made sure the index exists (another process built
    # it: building it here would raise this process's peak).
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    kept: Sequence[Any]
    if mode == "floor":
        kept = _parse_paused(path)
    elif mode in ("context", "cold-context"):
        if mode == "cold-context":
            drop_index(path)
        manager = SessionManager.open(path, read_only=True)
        kept = manager.build_session_context().messages
    else:
        if mode == "cold":
            drop_index(path)
        manager = SessionManager.open(path, read_only=True, runtime=_FULL if mode == "full" else None)
        kept = manager.get_entries()
        if mode == "entries":  # the caller walks every entry, keeping none (issue 12 item 5)
            assert sum(1 for _ in kept) == len(kept)
        elif mode == "list":  # ... or keeps every one of them
            kept = list(kept)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"peak": peak, "baseline": baseline, "kept": len(kept), "size": os.path.getsize(path)}


def tree(path: str, runs: int) -> dict[str, Any]:
    """``get_tree`` right after a lazy open (it loads every entry) and on a loaded session."""
    _open_context(path)

    def opened_tree() -> int:
        with SessionManager.open(path, read_only=True) as manager:
            return len(manager.get_tree())

    manager = SessionManager.open(path, read_only=True)
    entries = manager.get_entries()

    def one_dict_per_entry() -> list[dict[str, Any]]:
        # The floor of any tree of these entries: one small object per entry (gc paused).
        gc.disable()
        try:
            return [{"entry": entry} for entry in entries]
        finally:
            gc.enable()

    return {
        "open_tree": timed(opened_tree, runs).to_json(),
        "tree": timed(manager.get_tree, runs).to_json(),
        "floor": timed(one_dict_per_entry, runs, gc_pass=False).to_json(),
        "entries": len(entries),
    }


def search(paths: list[str], query: str, runs: int) -> dict[str, Any]:
    """``omp_session.tools.search.search_paths`` over ``paths``."""
    from omp_session.tools.search import search_paths

    for path in paths:
        _read(path)
    hits = len(search_paths(paths, query))
    return {"samples": timed(lambda: search_paths(paths, query), runs).to_json(), "hits": hits}


def listing(directory: str, runs: int, mode: str) -> dict[str, Any]:
    """``list_sessions``: ``cold`` (no cache), ``cold-details`` (no cache, then every field of
    every session used), ``warm`` (cache filled), ``warm-details`` (cache filled, then every field
    used: the texts are read from the cache), ``omp18`` (omp 18's 4 KB-prefix listing, which
    uses no cache)."""

    def drop() -> None:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{cache_path()}{suffix}").unlink(missing_ok=True)

    def use_all() -> int:
        return len([info.to_dict() for info in list_sessions(directory)])

    if mode == "omp18":
        prefix = lambda: len(list_sessions(directory, dialect=OMP_18_2))  # noqa: E731
        return {"samples": timed(prefix, runs).to_json()}
    if mode == "warm":
        use_all()
        return {"samples": timed(lambda: list_sessions(directory), runs).to_json()}
    if mode == "warm-details":  # the texts are read from the cache on first use
        use_all()
        return {"samples": timed(use_all, runs).to_json()}
    action = use_all if mode == "cold-details" else (lambda: len(list_sessions(directory)))
    return {"samples": timed(action, runs, before=drop).to_json(), "count": len(list_sessions(directory))}


def listing_floors(directory: str, runs: int) -> dict[str, Any]:
    """Reading each file's first line and counting its lines; parsing every line of every file;
    listing the directory with one ``stat`` per file (the warm listing's floor); reading the first
    4 KB and the last 32 KB of each file (omp 18's listing's floor)."""
    paths = sorted(str(p) for p in Path(directory).iterdir())

    def headers() -> int:
        total = 0
        for path in paths:
            with open(path, "rb") as handle:
                orjson.loads(handle.readline())
                total += handle.read().count(b"\n")
        return total

    def parse_all() -> int:
        return sum(len(_parse_paused(path)) for path in paths)

    def scan() -> int:
        with os.scandir(directory) as entries:
            return sum(entry.stat().st_size for entry in entries if entry.name.endswith(".jsonl"))

    def ends() -> int:
        total = 0
        for path in paths:
            with open(path, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                total += len(handle.read(4096))
                handle.seek(max(0, size - 32_768))
                total += len(handle.read(32_768))
        return total

    return {
        "headers": timed(headers, runs).to_json(),
        "parse": timed(parse_all, runs).to_json(),
        "scan": timed(scan, runs).to_json(),
        "ends": timed(ends, runs).to_json(),
    }


def omp_listing_on_node(directory: str, runs: int) -> dict[str, Any]:
    """omp 13.19's listing work on Node (``bench/omp_listing.mjs``), timed inside Node; no samples
    without a ``node`` on the PATH."""
    import subprocess

    node = shutil.which("node")
    if node is None:
        return {"samples": []}
    script = Path(__file__).with_name("omp_listing.mjs")
    done = subprocess.run(
        [node, str(script), directory, str(runs)], capture_output=True, check=True, text=True
    )
    return {"samples": json.loads(done.stdout)["samples"]}


def _library_work(command: str, path: str) -> Any:
    """What the library does for ``omp-session COMMAND path``, without printing: the same one read
    path (``read_session``, the lazy index-backed read-only open) the command uses."""
    from omp_session.export.markdown import export_markdown
    from omp_session.tools.reading import read_session
    from omp_session.tools.stats import collect_stats
    from omp_session.tools.transcript import load_transcript
    from omp_session.tools.tree_view import tree_lines

    if command == "show":
        return load_transcript(Path(path))
    if command == "tree":
        with read_session(path) as session:
            return tree_lines(session)
    if command == "stats":
        return collect_stats([path])
    if command == "context":
        with read_session(path) as session:
            return session.build_session_context().to_dict()
    return export_markdown(Path(path), None)


def cli(path: str, command: str, runs: int, terminal: bool = False) -> dict[str, Any]:
    """``omp-session COMMAND path`` (stdout to /dev/null, a fresh process each run, start-up
    included) and the library's own time for the same work (in this process, GC pass included);
    ``startup``: ``omp-session --help``, the interpreter and imports alone. ``terminal``: styled
    as for a terminal 100 columns wide (``FORCE_COLOR``), escape codes and all."""
    import subprocess

    _read(path)
    argv = [sys.executable, "-c", "from omp_session.cli import main; main()"]
    extra = ["--no-pager"] if command == "show" else []
    env = dict(os.environ)
    if terminal:
        env.update(FORCE_COLOR="1", COLUMNS="100")
        env.pop("NO_COLOR", None)

    def run(arguments: list[str]) -> float:
        start = time.perf_counter()
        subprocess.run([*argv, *arguments], stdout=subprocess.DEVNULL, check=True, env=env)
        return time.perf_counter() - start

    return {
        "cli": [run([command, *extra, path]) for _ in range(runs)],
        "startup": [run(["--help"]) for _ in range(runs)],
        "library": timed(lambda: _library_work(command, path), runs).to_json(),
    }


if __name__ == "__main__":
    case, arguments = sys.argv[1], json.loads(sys.argv[2])
    print(json.dumps(globals()[case](*arguments)))
