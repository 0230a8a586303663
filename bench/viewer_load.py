"""The viewer under load (issue 25 item 5): many concurrent clients against ``omp-session serve``.

``python -m bench.viewer_load [--clients 200] [--seconds 60] [--sessions 1000]``

Builds (once, deterministically, into ``bench/data/viewer-load-*``) a sessions root of
``--sessions`` sessions of ~30 KB in 20 projects plus one session of 50,000 messages, starts
``omp-session --dir ROOT serve`` on 127.0.0.1 (a free port; nothing else is contacted), and runs
``--clients`` concurrent clients for ``--seconds`` s. Each client loops over a mix of requests:
index pages (plain, paged, a project filter), index searches, small session pages, the big
session's page, its transcript windows (by position, before/after), the context at a node
(``/api/window?at=``), its tree rows (``near=``, a filter), and the usage page.

Counted: answers that are not 200, requests that fail (connection errors), requests that time out
(``--timeout`` s: a stuck connection), latency (p50/p99 per kind and overall), requests/s, and the
server's peak RSS (``VmHWM``). The server is stopped at the end; the exit status is 1 when any
request failed or was stuck. Not part of ``make test`` (it takes a minute or more); the figures go
into ``bench/RESULTS.md`` (``--write-results``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import quote

from bench.generate import Shape, ensure
from bench.report import replace_section

DATA = Path(__file__).resolve().parent / "data"
RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
PROJECTS = 20
WORDS = ("hash", "session", "compaction", "tree", "python", "lock", "index", "branch", "café", "数据")


def build_store(sessions: int) -> tuple[Path, Path]:
    """The sessions root and the big session in it (generated once)."""
    root = DATA / f"viewer-load-{sessions}" / "sessions"
    blobs = root.parent / "blobs"
    for number in range(sessions):
        project = root / f"-home-dev-project-{number % PROJECTS:02d}"
        ensure(project, Shape(30_000, seed=7000 + number, compaction_every=200, branch_every=60), blobs)
    big = ensure(root / "-home-dev-big", Shape(0, target_messages=50_000, linear=True), blobs)
    return root, big


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def peak_rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


@dataclass
class Tally:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    stuck: list[str] = field(default_factory=list)

    @property
    def requests(self) -> int:
        return sum(len(v) for v in self.latencies.values())


class Mix:
    """What the clients ask for, drawn from what the store holds."""

    def __init__(self, root: Path, big: Path, seed: int) -> None:
        self.rng = random.Random(seed)
        self.small = [
            p.relative_to(root).as_posix() for p in sorted(root.glob("-home-dev-project-*/*.jsonl"))
        ]
        self.big = big.relative_to(root).as_posix()
        self.big_ids = self._ids(big)
        self.projects = sorted({ref.split("/")[0] for ref in self.small})

    @staticmethod
    def _ids(path: Path) -> list[str]:
        found: list[str] = []
        pattern = re.compile(rb'"id":"([^"]+)"')
        with open(path, "rb") as handle:
            for number, line in enumerate(handle):
                if number % 97 == 1:
                    match = pattern.search(line)
                    if match:
                        found.append(match.group(1).decode())
        return found

    def next(self) -> tuple[str, str]:
        """``(kind, URL path)`` of the next request."""
        rng = self.rng
        big = quote(self.big)
        roll = rng.random()
        if roll < 0.18:
            return "index", rng.choice(
                ["/", f"/?page={rng.randint(1, 20)}", f"/?project={quote(rng.choice(self.projects))}"]
            )
        if roll < 0.30:
            return "search", f"/?q={quote(rng.choice(WORDS))}"
        if roll < 0.50:
            return "session", f"/session/{quote(rng.choice(self.small))}"
        if roll < 0.56:
            return "big page", f"/session/{big}"
        if roll < 0.74:
            choice = rng.random()
            if choice < 0.5:
                start = rng.randint(0, 49_000)
                return "window", f"/api/window/{big}?start={start}&end={start + 40}"
            return "window", f"/api/window/{big}?after={quote(rng.choice(self.big_ids))}"
        if roll < 0.90:
            return "context at node", f"/api/window/{big}?at={quote(rng.choice(self.big_ids))}"
        if roll < 0.97:
            near = rng.random() < 0.7
            query = f"near={quote(rng.choice(self.big_ids))}" if near else f"q={quote(rng.choice(WORDS))}"
            return "tree rows", f"/api/rows/{big}?{query}"
        return "usage", "/usage"


class HttpError(Exception):
    """The connection broke or the answer was not HTTP."""


async def _get(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str, path: str
) -> tuple[int, bool]:
    """One ``GET`` on a keep-alive connection: ``(status, the server keeps the connection)``."""
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept-Encoding: identity\r\n\r\n".encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/"):
        raise HttpError(f"not an HTTP answer: {status_line!r}")
    headers = {}
    for line in header_lines:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            await reader.readexactly(size + 2)
            if size == 0:
                break
    else:
        await reader.read()  # until the server closes
        return int(parts[1]), False
    return int(parts[1]), headers.get("connection", "").lower() != "close"


async def client(base: str, mix: Mix, deadline: float, timeout: float, tally: Tally) -> None:
    """One client: one keep-alive connection (reopened when the server closes it), requests in a
    loop until the deadline."""
    host_port = base.removeprefix("http://")
    host, port = host_port.split(":")
    connection: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
    while time.monotonic() < deadline:
        kind, path = mix.next()
        started = time.monotonic()
        try:
            if connection is None:
                connection = await asyncio.wait_for(asyncio.open_connection(host, int(port)), timeout)
            status, keep = await asyncio.wait_for(_get(*connection, host_port, path), timeout)
        except asyncio.TimeoutError:
            tally.stuck.append(f"{kind} {path}")
            await _closed(connection)
            connection = None
            continue
        except (
            OSError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            HttpError,
            ValueError,
        ) as error:
            tally.failures.append(f"{kind} {path}: {type(error).__name__} {error}")
            await _closed(connection)
            connection = None
            continue
        if not keep:
            await _closed(connection)
            connection = None
        tally.latencies[kind].append(time.monotonic() - started)
        tally.statuses[str(status)] += 1
        if status != 200:
            tally.failures.append(f"{kind} {path}: HTTP {status}")
    await _closed(connection)


async def _closed(connection: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None) -> None:
    """Close ``connection`` (if any); the caller forgets it."""
    if connection is not None:
        connection[1].close()
        with contextlib.suppress(OSError):
            await connection[1].wait_closed()


async def load(
    base: str, mix: Mix, clients: int, seconds: float, timeout: float, pid: int
) -> tuple[Tally, float, int]:
    tally = Tally()
    started = time.monotonic()
    deadline = started + seconds
    peak_sampled = 0

    async def sample() -> None:
        nonlocal peak_sampled
        while time.monotonic() < deadline:
            peak_sampled = max(peak_sampled, rss_kb(pid))
            await asyncio.sleep(0.5)

    await asyncio.gather(sample(), *(client(base, mix, deadline, timeout, tally) for _ in range(clients)))
    return tally, time.monotonic() - started, peak_sampled


def wait_until_up(base: str, process: subprocess.Popen[bytes], limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited with status {process.returncode}")
        try:
            with urllib.request.urlopen(base + "/", timeout=5) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit("the server did not answer within a minute")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds >= 0.1 else f"{seconds * 1000:.1f} ms"


def report(
    args: argparse.Namespace, tally: Tally, elapsed: float, peak_kb: int, idle_kb: int, sessions: int
) -> str:
    every = [v for values in tally.latencies.values() for v in values]
    median = statistics.median(every) if every else 0.0
    lines = [
        "## Viewer under load (`python -m bench.viewer_load`)",
        "",
        f"Last run: {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC. `omp-session serve` on 127.0.0.1 over "
        f"{sessions:,} sessions of ~30 KB in {PROJECTS} projects plus one of 50,000 messages; "
        f"{args.clients} concurrent clients (one keep-alive connection each, a {args.timeout:.0f} s timeout "
        f"per request) for {args.seconds:.0f} s, client and server on the same 2 cores.",
        "",
        "| | |",
        "|---|---|",
        f"| requests answered | {tally.requests:,} ({tally.requests / elapsed:.1f} requests/s) |",
        f"| errors (not 200, or no answer) | **{len(tally.failures)}** |",
        f"| stuck connections (no answer within {args.timeout:.0f} s) | **{len(tally.stuck)}** |",
        f"| latency p50 / p99, all requests | {ms(median)} / {ms(percentile(every, 0.99))} |",
        f"| server peak RSS (VmHWM) | {peak_kb / 1024:.0f} MB (after start-up: {idle_kb / 1024:.0f} MB) |",
        "",
        "| request kind | count | p50 | p99 |",
        "|---|---|---|---|",
    ]
    for kind in sorted(tally.latencies):
        values = tally.latencies[kind]
        lines.append(
            f"| {kind} | {len(values):,} | {ms(statistics.median(values))} | {ms(percentile(values, 0.99))} |"
        )
    return "\n".join(lines) + "\n"


def write_results(section: str) -> None:
    replace_section(RESULTS, "<!-- viewer load: start -->", "<!-- viewer load: end -->", section)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--timeout", type=float, default=30)
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--write-results", action="store_true", help="Put the figures into bench/RESULTS.md.")
    args = parser.parse_args()
    if not (1 <= args.clients <= 500 and 1 <= args.seconds <= 600):
        raise SystemExit("--clients 1..500 and --seconds 1..600: the load test is bounded")
    print(f"building the store ({args.sessions} sessions + one of 50,000 messages) ...", flush=True)
    root, big = build_store(args.sessions)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(root.parent / "agent")}
    command = [
        sys.executable,
        "-m",
        "omp_session",
        "--dir",
        str(root),
        "serve",
        "--no-agents",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_until_up(base, process)
        idle = rss_kb(process.pid)
        mix = Mix(root, big, args.seed)
        print(
            f"serving on {base} (pid {process.pid}); {args.clients} clients for {args.seconds:.0f} s ...",
            flush=True,
        )
        tally, elapsed, _sampled = asyncio.run(
            load(base, mix, args.clients, args.seconds, args.timeout, process.pid)
        )
        peak = peak_rss_kb(process.pid)
        alive = process.poll() is None
    finally:
        process.send_signal(signal.SIGINT)
        try:
            _out, err = process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            _out, err = process.communicate()
    section = report(args, tally, elapsed, peak, idle, args.sessions)
    print(section)
    for failure in (tally.failures + tally.stuck)[:20]:
        print("  ", failure)
    if not alive:
        print("the server died during the run:", err.decode(errors="replace")[-2000:])
    tracebacks = err.decode(errors="replace").count("Traceback")
    print(f"tracebacks in the server's log: {tracebacks}")
    if args.write_results:
        write_results(section)
    if tally.failures or tally.stuck or not alive or tracebacks:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
