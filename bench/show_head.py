"""``show | head`` against the whole ``show`` on the 50,000-entry session (issue 30's ``show`` row).

``python -m bench.show_head [--runs 3]``

``show`` writes its transcript item by item, so a reader that stops after a few lines (``head -n
5``) ends it early. Each run starts ``omp-session show SESSION`` twice, in fresh processes and
alternately: once writing everything to ``/dev/null`` (the floor of the same run), once into
``head -n 5``. Reported: the median wall time and the median CPU time (user + system of the
``show`` process, from ``wait4``) of each, and the ratios (target: a small fraction).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from bench.data_sets import AGENT, session
from bench.export_html import SHAPE


def _show(path: str, into_head: bool) -> tuple[float, float]:
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(AGENT)}
    command = [sys.executable, "-m", "omp_session", "show", path]
    started = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        shown = subprocess.Popen(
            command, stdout=subprocess.PIPE if into_head else sink, env=env, stderr=subprocess.DEVNULL
        )
        if into_head:
            assert shown.stdout is not None
            subprocess.run(["head", "-n", "5"], stdin=shown.stdout, stdout=sink, check=True)
            shown.stdout.close()
        _, _, usage = os.wait4(shown.pid, 0)
    shown.returncode = 0  # reaped above
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    path = str(session(SHAPE))
    figures: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    for _ in range(options.runs):
        for into_head in (False, True):
            figures[into_head].append(_show(path, into_head))
    full_wall, full_cpu = (statistics.median(x[i] for x in figures[False]) for i in (0, 1))
    head_wall, head_cpu = (statistics.median(x[i] for x in figures[True]) for i in (0, 1))
    print("| case | wall | CPU |\n|---|---|---|")
    print(f"| `show > /dev/null` (the floor) | {full_wall:.2f} s | {full_cpu:.2f} s |")
    print(
        f"| `show \\| head -n 5` | {head_wall:.2f} s = {head_wall / full_wall:.2f}× | "
        f"{head_cpu:.2f} s = {head_cpu / full_cpu:.2f}× |"
    )
    print(f"(median of {options.runs}, load average {os.getloadavg()[0]:.1f} at the end)")


if __name__ == "__main__":
    main()
