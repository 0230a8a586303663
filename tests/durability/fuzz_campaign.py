"""The fuzz campaign of issue 11: mutated session files through every public read and write call,
and the command line over a sample of them.

    python -m tests.durability.fuzz_campaign --files 20000 --cli-sample 400 --seed 11

Counts what matters: exceptions that are not the library's own (``SessionError``), hangs (a
watchdog of ``--timeout`` seconds per file and per call group), and CLI runs that print "internal
error" or a traceback. Failing inputs are kept under ``--keep`` for replay. ``test_fuzz_campaign``
(marked slow) runs a small campaign; the figures of the full run are in docs/durability.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from omp_session import SessionError, SessionManager, convert_to_llm
from omp_session.cli import main as cli_main
from omp_session.export import export_jsonl, export_markdown
from omp_session.export.html import export_html
from omp_session.store.loading import load_session
from omp_session.tools.listing import list_sessions, session_info
from omp_session.tools.repair import check, migrate_file, repair
from omp_session.tools.search import search_paths
from omp_session.tools.stats import collect_stats, session_stats

REPO = Path(__file__).resolve().parents[2]
SEED_DIRS = [REPO / "tests" / "conformance" / "load", REPO / "tests" / "conformance_omp18" / "load"]

#: Inserted at random places: what damaged or hostile files hold.
TOKENS = [
    b"\n",
    b"null\n",
    b"{",
    b"}",
    b"[",
    b'"parentId":"',
    b"\xef\xbb\xbf",
    b"\r\n",
    b"NaN",
    b"\\ud83d",
    b'"\\ud83d"',
    b'"\\udfff\\ud800"',
    b"1e400",
    b"9" * 400,
    b"-0.0",
    b'{"a":' * 300 + b"1" + b"}" * 300,
    b"[" * 1100 + b"]" * 1100,
    b'"id":["x"]',
    b'"id":{"a":1}',
    b'"selectedToolNames":5',
    b'"injectedRules":[{"a":1}]',
    b'"version":18446744073709551616',
    b'"usage":{"input":1e308,"output":' + b"9" * 40 + b"}",
    b"\x00",
    b"\xff\xfe",
    b"\xed\xa0\xbd",
    b'"type":"compaction","firstKeptEntryId":null',
    b'"type":"label","targetId":5',
    b'"content":[{"type":"image","data":5}]',
    b'"content":[{"type":"toolCall","arguments":"x"}]',
]

#: Values put into a field of a parsed line (structure-aware mutation).
ODD_VALUES: list[Any] = [
    None,
    5,
    -1,
    2**70,
    1e308,
    "",
    "\ud83d",
    [],
    {},
    [1, [2]],
    {"a": None},
    True,
    "x" * 5000,
]


def seeds() -> list[bytes]:
    return [path.read_bytes() for directory in SEED_DIRS for path in sorted(directory.glob("*.jsonl"))]


def _odd_field(line: bytes, rng: random.Random) -> bytes:
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the json module reads
        return line
    if not isinstance(value, dict) or not value:
        return line
    target = value
    while True:  # walk into a nested object now and then
        nested = [k for k, v in target.items() if isinstance(v, dict) and v]
        if not nested or rng.random() < 0.5:
            break
        target = target[rng.choice(nested)]
    target[rng.choice(list(target))] = rng.choice(ODD_VALUES)
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    except RecursionError:
        return line


def mutate(data: bytes, rng: random.Random) -> bytes:
    buffer = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        if not buffer:
            break
        action = rng.choice(
            ["flip", "delete", "insert", "insert", "truncate", "dup", "swap", "field", "field"]
        )
        position = rng.randrange(len(buffer))
        if action == "flip":
            buffer[position] = rng.randrange(256)
        elif action == "delete":
            del buffer[position : position + rng.randint(1, 40)]
        elif action == "insert":
            buffer[position:position] = rng.choice(TOKENS)
        elif action == "truncate":
            del buffer[position:]
        else:
            lines = bytes(buffer).split(b"\n")
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            if action == "dup":
                lines.insert(j, lines[i])
            elif action == "swap":
                lines[i], lines[j] = lines[j], lines[i]
            else:
                lines[i] = _odd_field(lines[i], rng)
            buffer = bytearray(b"\n".join(lines))
    return bytes(buffer)


class Hang(Exception):
    pass


def _alarm(_signum: int, _frame: Any) -> None:
    raise Hang()


@dataclass
class Figures:
    files: int = 0
    calls: int = 0
    library_errors: int = 0
    foreign: Counter[str] = field(default_factory=Counter)
    hangs: int = 0
    cli_runs: int = 0
    cli_internal: int = 0
    cli_hangs: int = 0
    examples: list[str] = field(default_factory=list)


def _read_calls(path: Path) -> Iterator[tuple[str, Callable[[], Any]]]:
    def manager_reads() -> None:
        session = SessionManager.open(path, read_only=True)
        session.get_entries()
        for root in session.get_tree():
            for _node in root.walk():
                pass
        context = session.build_session_context()
        convert_to_llm(context.messages)
        for entry in session.get_entries()[-3:]:
            if isinstance(entry.get("id"), str):
                session.get_branch(entry["id"])
                session.get_children(entry["id"])
                session.get_label(entry["id"])
        session.get_usage_statistics()
        session.get_session_name()
        session.get_labels()
        session.get_load_issues()
        session.refresh()
        session.close()

    yield "open(read_only) and reads", manager_reads
    yield "check", lambda: check(path)
    yield "load_session", lambda: load_session(path)
    yield "session_info", lambda: session_info(path)
    yield "session_stats", lambda: session_stats(path)
    yield "collect_stats", lambda: collect_stats([path])
    yield "search_paths", lambda: search_paths([path], "the")
    yield "export_markdown", lambda: export_markdown(path, all_branches=True, events=True)
    yield "export_html", lambda: export_html(path, blobs_dir=path.parent / "blobs")


def _write_calls(path: Path) -> Iterator[tuple[str, Callable[[], Any]]]:
    def manager_writes() -> None:
        with SessionManager.open(path) as session:
            first = session.append_message({"role": "user", "content": "fuzz \ud83d", "timestamp": 1})
            session.append_label_change(first, "fuzzed")
            session.set_session_name("fuzzed")
            session.branch(first)
            session.append_message({"role": "user", "content": "branch", "timestamp": 2})
            session.rewrite_entries()
            session.fork()
        with SessionManager.open(path) as session:
            leaf = session.get_leaf_id()
            if leaf is not None:
                session.create_branched_session(leaf)

    yield "export_jsonl", lambda: export_jsonl(path, path.parent / f"exported-{time.monotonic_ns()}.jsonl")
    yield "migrate_file", lambda: migrate_file(path)
    yield "repair", lambda: repair(path)
    yield "open and writes", manager_writes


def _run(name: str, call: Callable[[], Any], figures: Figures, keep: Path, data: bytes, timeout: int) -> None:
    figures.calls += 1
    signal.alarm(timeout)
    try:
        call()
    except SessionError:
        figures.library_errors += 1
    except Hang:
        figures.hangs += 1
        _keep(keep, data, f"hang in {name}", figures)
    except Exception as exc:  # the point of the campaign: anything that is not the library's own
        figures.foreign[f"{name}: {type(exc).__name__}"] += 1
        _keep(keep, data, f"{name}: {type(exc).__name__}: {exc}\n{traceback.format_exc()}", figures)
    finally:
        signal.alarm(0)


def _keep(keep: Path, data: bytes, what: str, figures: Figures) -> None:
    number = len(list(keep.glob("*.jsonl")))
    if number < 200:
        (keep / f"case-{number}.jsonl").write_bytes(data)
        (keep / f"case-{number}.txt").write_text(what)
    if len(figures.examples) < 20:
        figures.examples.append(what.splitlines()[0])


CLI_COMMANDS = [
    ["show"],
    ["show", "--json"],
    ["check"],
    ["context"],
    ["tree"],
    ["stats"],
    ["export", "-f", "md"],
    ["export", "-f", "html"],
]
#: Commands over the whole store (the campaign's root holds the one mutated file).
STORE_COMMANDS = [
    ["list", "--all", "--json"],
    ["search", "the", "--all"],
    ["usage", "daily", "--all"],
    ["usage", "model", "--all", "--json"],
]
_STORE_WIDE = {argv[0] for argv in STORE_COMMANDS}


def _cli(path: Path, root: Path, figures: Figures, keep: Path, timeout: int) -> None:
    runner = CliRunner()
    for argv in [*CLI_COMMANDS, *STORE_COMMANDS]:
        args = [
            "--dir",
            str(root),
            *argv[:1],
            *([str(path)] if argv[0] not in _STORE_WIDE else []),
            *argv[1:],
        ]
        figures.cli_runs += 1
        signal.alarm(timeout)
        try:
            result = runner.invoke(cli_main, args, catch_exceptions=True)
        except Hang:
            figures.cli_hangs += 1
            _keep(keep, path.read_bytes() if path.exists() else b"", f"cli hang: {argv}", figures)
            continue
        finally:
            signal.alarm(0)
        output = result.stderr
        if (
            "error: internal error" in output
            or "Traceback (most recent call last)" in output
            or (result.exception is not None and not isinstance(result.exception, SystemExit))
        ):
            figures.cli_internal += 1
            _keep(keep, path.read_bytes(), f"cli {argv}: {output[-300:]!r} {result.exception!r}", figures)


def campaign(
    files: int, cli_sample: int, seed: int, keep: Path, timeout: int = 20, *, progress: bool = False
) -> Figures:
    rng = random.Random(seed)
    corpus = seeds()
    figures = Figures()
    keep.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGALRM, _alarm)
    cli_every = max(1, files // cli_sample) if cli_sample else 0
    with tempfile.TemporaryDirectory(prefix="omp-fuzz-") as scratch:
        agent = Path(scratch) / "agent"
        os.environ["PI_CODING_AGENT_DIR"] = str(agent)  # caches, blobs and breadcrumbs stay here
        for number in range(files):
            data = mutate(rng.choice(corpus), rng)
            root = Path(scratch) / "sessions"
            directory = root / "-fuzz"
            shutil.rmtree(root, ignore_errors=True)
            directory.mkdir(parents=True)
            path = directory / "fuzz.jsonl"
            path.write_bytes(data)
            figures.files += 1
            for name, call in _read_calls(path):
                _run(name, call, figures, keep, data, timeout)
            if path.read_bytes() != data:
                figures.foreign["a read changed the file"] += 1
                _keep(keep, data, "a read changed the file", figures)
            _run("list_sessions", partial(list_sessions, directory), figures, keep, data, timeout)
            if cli_every and number % cli_every == 0:
                _cli(path, root, figures, keep, timeout)
            for name, call in _write_calls(path):
                _run(name, call, figures, keep, data, timeout)
            if progress and (number + 1) % 250 == 0:
                print(f"{number + 1} files, {figures.calls} calls", file=sys.stderr, flush=True)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20000)
    parser.add_argument("--cli-sample", type=int, default=400)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--keep", type=Path, default=Path("fuzz-failures"))
    parser.add_argument("--timeout", type=int, default=20)
    args = parser.parse_args(argv)
    started = time.monotonic()
    figures = campaign(args.files, args.cli_sample, args.seed, args.keep, args.timeout, progress=True)
    elapsed = time.monotonic() - started
    report = {
        "files": figures.files,
        "calls": figures.calls,
        "library_errors": figures.library_errors,
        "foreign_exceptions": sum(figures.foreign.values()),
        "foreign_by_call": dict(figures.foreign),
        "hangs": figures.hangs,
        "cli_runs": figures.cli_runs,
        "cli_internal_errors": figures.cli_internal,
        "cli_hangs": figures.cli_hangs,
        "seconds": round(elapsed, 1),
        "examples": figures.examples,
    }
    print(json.dumps(report, indent=2, ensure_ascii=False))
    clean = not figures.foreign and not figures.hangs and not figures.cli_internal and not figures.cli_hangs
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
