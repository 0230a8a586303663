"""Timing helpers and the subprocess runner of the benchmark suite."""

from __future__ import annotations

import gc
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


@dataclass
class Timing:
    """Seconds of each run of one measurement."""

    samples: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def low(self) -> float:
        return min(self.samples)

    @property
    def high(self) -> float:
        return max(self.samples)

    def to_json(self) -> list[float]:
        return self.samples


def settle() -> None:
    """The garbage-collector passes the objects just built are due for (the young and middle
    generations), run now so that they are *inside* the timer: a caller pays them at its next
    allocations. Code that leaves nothing in those generations (see ``omp_session.gcpause``)
    makes this nearly free; code that does pays it here."""
    gc.collect(1)


def timed(
    action: Callable[[], Any], runs: int, before: Callable[[], Any] | None = None, *, gc_pass: bool = True
) -> Timing:
    """Run ``action`` ``runs`` times; ``before`` runs untimed first each time. The collection the
    action's objects are due for is timed with it (``settle``) unless ``gc_pass`` is false (the
    parse floor: "orjson, gc off"). Garbage left by one run is collected before the next."""
    timing = Timing()
    for _ in range(runs):
        if before is not None:
            before()
        gc.collect()
        start = time.perf_counter()
        result = action()
        if gc_pass:
            settle()
        timing.samples.append(time.perf_counter() - start)
        del result
        gc.collect()
    return timing


def drop_from_page_cache(path: str | os.PathLike[str]) -> None:
    """Evict ``path``'s pages from the page cache (``posix_fadvise(DONTNEED)``; the file has not
    been written since, so every page is clean and goes): the next read comes from the disk, as
    the first open of a session omp wrote some time ago does."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def in_subprocess(
    case: str,
    *args: Any,
    timeout: float = 900,
    command: Sequence[str] = ("-m", "bench.worker"),
    checkout: Path = REPO,
    env: Mapping[str, str] | None = None,
) -> Any:
    """Run a bench worker's ``case`` in a fresh interpreter (isolated heap, own peak RSS).

    ``command`` names the worker (``bench.worker`` unless told), ``checkout`` the tree whose
    ``src`` is imported (another checkout's, for a comparison) and ``env`` what the case adds to
    the environment; the worker prints its result as JSON on its last line.
    """
    environment = {**os.environ, **(env or {})}
    environment["PYTHONPATH"] = os.pathsep.join([str(checkout / "src"), str(REPO)])
    done = subprocess.run(
        [sys.executable, *command, case, json.dumps(args)],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        where = "" if checkout == REPO else f" (checkout {checkout})"
        raise RuntimeError(f"bench case {case}{where} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def machine() -> dict[str, str]:
    """A description of this machine for RESULTS.md."""
    import platform

    import orjson

    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = "unknown"
    try:
        kib = int(Path("/proc/meminfo").read_text().split()[1])
        memory = f"{kib / 2**20:.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return {
        "CPU": f"{cpu}, {os.cpu_count()} logical cores",
        "Memory": memory,
        "OS": platform.platform(),
        "Python": f"{platform.python_implementation()} {platform.python_version()}",
        "orjson": orjson.__version__,
        "Files": "warm: in the page cache (read once before timing); cold: evicted before every run "
        "(posix_fadvise DONTNEED) and without an offset index",
    }
