"""The data sets of the suite, generated once (deterministically) into ``bench/data/``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from bench.generate import GENERATOR_VERSION, Shape, ensure

DATA = Path(__file__).resolve().parent / "data"
AGENT = DATA / "agent"  # PI_CODING_AGENT_DIR of every case: indexes, listing cache, blobs
SESSIONS = DATA / "sessions"


@dataclass(frozen=True)
class Sizes:
    """How much data a run uses (``--quick`` scales it down)."""

    big: int  # the "500 MB" session
    search_files: int  # files of ~10 MB in the search corpus
    list_files: int
    tree_messages: tuple[int, ...]


FULL = Sizes(big=500_000_000, search_files=100, list_files=3000, tree_messages=(25_000, 50_000, 100_000))
QUICK = Sizes(big=100_000_000, search_files=12, list_files=600, tree_messages=(12_500, 25_000, 50_000))


def session(shape: Shape) -> Path:
    return ensure(SESSIONS, shape, AGENT / "blobs")


def main_sessions(sizes: Sizes) -> dict[str, Path]:
    """The sessions of the open + context cases, by label."""
    found = {
        "1 MB": session(Shape(1_000_000, compaction_every=500)),
        "50 MB linear, 100k msgs, compactions": session(Shape(0, target_messages=100_000, linear=True)),
        "50 MB linear, 100k msgs, no compaction": session(
            Shape(0, target_messages=100_000, linear=True, compaction_every=0)
        ),
        "100 MB": session(Shape(100_000_000)),
    }
    if sizes.big > 100_000_000:
        found["500 MB"] = session(Shape(sizes.big))
    return found


def tree_sessions(sizes: Sizes) -> list[Path]:
    return [session(Shape(0, target_messages=count, linear=True)) for count in sizes.tree_messages]


def search_corpus(sizes: Sizes) -> list[Path]:
    directory = DATA / f"search-v{GENERATOR_VERSION}"
    return [
        ensure(directory, Shape(10_000_000, seed=5000 + number), AGENT / "blobs")
        for number in range(sizes.search_files)
    ]


def listing_corpus(sizes: Sizes) -> Path:
    """``list_files`` sessions of about 50 KB in one project directory (every tenth compacted)."""
    directory = DATA / f"list-v{GENERATOR_VERSION}-{sizes.list_files}" / "-home-dev-project"
    for number in range(sizes.list_files):
        every = 40 if number % 10 == 0 else 3000
        ensure(directory, Shape(50_000, seed=1000 + number, compaction_every=every, branch_every=60))
    stamp = 1_750_000_000
    for number, path in enumerate(sorted(directory.iterdir())):
        if int(path.stat().st_mtime) != stamp + number:
            os.utime(path, (stamp + number, stamp + number))  # distinct, stable mtimes
    return directory


def cli_session() -> Path:
    """About 50,000 entries (25,000 messages with their tool calls), compacted now and then."""
    return session(Shape(0, target_messages=50_000, linear=True))
