"""The HTML export of a 50,000-entry session against its Markdown export (issue 30 item 3).

``python -m bench.export_html [--runs 2] [--write-results]``

Generates (once, deterministically, into ``bench/data/``) a branched session of 50,018 entries
(49,300 messages, 16 compactions, side branches), then runs ``omp-session export -f md`` and
``omp-session export -f html`` on it, each in a fresh process, alternately, ``--runs`` times: the
Markdown export is the floor of the same run. Reported: the median wall time and CPU time (user +
system, the HTML export's forked renderers included) of each, their ratios (target ≤ 3×; on a
shared machine the CPU ratio is the steadier one) and the HTML file's size (target ≤ 0.5× the
76.1 MB the export wrote before its blocks were compressed; measured on this data set with the code
of commit acf84ba). ``--write-results``
puts the table into ``bench/RESULTS.md`` between its own markers (the other sections untouched).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.data_sets import AGENT, session
from bench.generate import Shape
from bench.measure import machine
from bench.report import replace_section

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
START, END = "<!-- export html: start -->", "<!-- export html: end -->"
HEADING = "## HTML export of a 50,000-entry session (issue 30 item 3)"
#: The HTML export's size before its blocks were compressed (commit acf84ba, this data set).
BEFORE_BYTES = 76_129_961
SHAPE = Shape(0, target_messages=49_300)


def _export(path: Path, fmt: str, out: Path) -> tuple[float, float]:
    """Wall time and CPU time (user + system of the process and the workers it waited for)."""
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(AGENT)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "omp_session", "export", str(path), "-f", fmt, "-o", str(out)],
        check=True,
        env=env,
        stderr=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(runs: int) -> dict[str, float]:
    path = session(SHAPE)
    times: dict[str, list[float]] = {"md": [], "html": []}
    cpu: dict[str, list[float]] = {"md": [], "html": []}
    sizes: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="omp-export-bench-") as scratch:
        for _ in range(runs):
            for fmt in ("md", "html"):
                out = Path(scratch) / f"out.{fmt}"
                wall, spent = _export(path, fmt, out)
                times[fmt].append(wall)
                cpu[fmt].append(spent)
                sizes[fmt] = out.stat().st_size
    md, html = statistics.median(times["md"]), statistics.median(times["html"])
    md_cpu, html_cpu = statistics.median(cpu["md"]), statistics.median(cpu["html"])
    return {
        "session_bytes": path.stat().st_size,
        "md_seconds": md,
        "html_seconds": html,
        "ratio": html / md,
        "md_cpu": md_cpu,
        "html_cpu": html_cpu,
        "cpu_ratio": html_cpu / md_cpu,
        "html_bytes": sizes["html"],
        "md_bytes": sizes["md"],
        "size_ratio": sizes["html"] / BEFORE_BYTES,
        "runs": runs,
    }


def table(figures: dict[str, float]) -> str:
    ratio, size_ratio, cpu_ratio = figures["ratio"], figures["size_ratio"], figures["cpu_ratio"]
    runs = int(figures["runs"])
    return "\n".join(
        [
            "| case | result | target | status |",
            "|---|---|---|---|",
            f"| `export -f md` (the floor), {figures['session_bytes'] / 1e6:.1f} MB session | "
            f"{figures['md_seconds']:.2f} s wall, {figures['md_cpu']:.2f} s CPU (medians of {runs}) | | |",
            f"| `export -f html`, same session, wall | {figures['html_seconds']:.2f} s = "
            f"**{ratio:.2f}× md** | ≤ 3× md | {'met' if ratio <= 3 else 'not met'} |",
            f"| `export -f html`, CPU (its forked renderers included) | {figures['html_cpu']:.2f} s = "
            f"**{cpu_ratio:.2f}× md** | ≤ 3× md | {'met' if cpu_ratio <= 3 else 'not met'} |",
            f"| HTML file size | {figures['html_bytes'] / 1e6:.1f} MB = **{size_ratio:.2f}×** the "
            f"{BEFORE_BYTES / 1e6:.1f} MB before | ≤ 0.5× | {'met' if size_ratio <= 0.5 else 'not met'} |",
        ]
    )


def _machine() -> str:
    facts = machine()
    return f"{facts['CPU']}, {facts['Memory']}, {facts['Python']}"


def write(figures: dict[str, float]) -> None:
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    section = (
        f"{HEADING}\n\nLast run: {stamp}, `python -m bench.export_html --runs {int(figures['runs'])}` on "
        f"{_machine()}; load average {os.getloadavg()[0]:.1f} at the start. Each export a fresh "
        f"`omp-session` process (start-up included), md and html alternately.\n\n{table(figures)}\n"
    )
    replace_section(RESULTS, START, END, section)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--write-results", action="store_true")
    options = parser.parse_args()
    figures = measure(options.runs)
    print(table(figures))
    if options.write_results:
        write(figures)


if __name__ == "__main__":
    main()
