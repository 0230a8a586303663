"""Write the sample sessions in ``samples/`` with omp-session's own ``SessionManager``.

    .venv/bin/python samples/generate.py            # rewrites samples/sessions and samples/blobs
    .venv/bin/python samples/generate.py --out DIR  # somewhere else (the tests do this)

Seven sessions in four projects: tool calls with results, thinking, a user's bash run, a Python
run, a file mention, two images (one moved to the blob store, one small enough to stay inline),
labels, abandoned branches with a branch summary, a compaction, plan mode, an aborted turn, a model
switch and a session forked from another. The layout is omp's: ``sessions/<encoded cwd>/<file>``
beside ``blobs/``.

The output is deterministic: the clock, session ids and entry ids are replaced by seeded stand-ins,
so running the script again reproduces the committed files byte for byte (only ``parentSession``
holds this machine's absolute path).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
from pathlib import Path

from _kit import DAY_MS, HERE, START_MS, Clock
from other_projects import blog_session, infra_session, plan_session, quick_question_session
from shop_api import flaky_test_session, invoices_fork, pagination_session

from omp_session.format.ids import iso_to_ms


def generate(out: Path) -> list[Path]:
    """Write every sample session under ``out/sessions`` (blobs in ``out/blobs``); return the files."""
    for sub in ("sessions", "blobs"):
        shutil.rmtree(out / sub, ignore_errors=True)
    os.environ["PI_CODING_AGENT_DIR"] = str(out.absolute())  # the blob store: out/blobs
    root = out.absolute() / "sessions"
    files: list[Path] = []
    builders = [
        pagination_session,
        flaky_test_session,
        blog_session,
        quick_question_session,
        plan_session,
        infra_session,
    ]
    for day, build in enumerate(builders):
        clock = Clock(START_MS + day * DAY_MS + day * 3_600_000, seed=day + 1)
        files.append(build(root, clock, random.Random(day + 100)))
    clock = Clock(START_MS + len(builders) * DAY_MS, seed=99)
    files.append(invoices_fork(root, clock, random.Random(199), files[0]))
    for path in files:  # the index sorts by mtime, as omp does: make it the last entry's time
        last = path.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1]
        stamp = iso_to_ms(json.loads(last).get("timestamp"))
        if stamp is not None:
            os.utime(path, (stamp / 1000, stamp / 1000))
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=HERE, help="where sessions/ and blobs/ go (default: samples/)"
    )
    args = parser.parse_args()
    for path in generate(args.out):
        print(path.relative_to(args.out.absolute()))


if __name__ == "__main__":
    main()
