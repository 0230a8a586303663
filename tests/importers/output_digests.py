"""Digests of what the Claude importer writes, to compare two versions of the code byte for byte.

    python -m tests.importers.output_digests --files 1000 --seed 5 [--big PATH] > digests.txt

Run it under each version (``PYTHONPATH=<tree>/src``)
and compare the outputs: one line per transcript and mode, with the SHA-256 of the session a
first import writes (``import_session``: a streaming conversion, as ``omp-session import``), of
the entries an in-memory conversion makes (``convert``, the viewer's path) and of the sessions
when the transcript is imported in two steps (an update): first up to a random line, then with
the rest of it and a mutated tail. The transcripts are the
Claude corpus mutated as the importer fuzzer mutates it (``fuzz_importers``), the corpus itself,
and ``--big`` (for example the benchmark's 100 MB transcript). What varies from run to run is
pinned: the clock, the session id, the random ids and the transcripts' modification times.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import os
import random
import shutil
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

from omp_session.errors import SessionError
from omp_session.format.ids import iso_from_ms
from omp_session.importers import base, persist, session_file, updates
from omp_session.importers.claude import ClaudeSessionStore
from omp_session.importers.session_file import encode_entry
from tests.durability.fuzz_campaign import mutate
from tests.importers.corpus import FIXTURES

_NOW_MS = 1_767_323_045_678
_MTIME_NS = 1_767_000_000_123_000_000


def _pin_what_varies() -> None:
    """The clock, session ids and random entry ids as sequences: the same calls, the same values."""
    ids, clock, sessions = itertools.count(), itertools.count(), itertools.count()

    def now_iso(ms: int | None = None) -> str:
        return iso_from_ms(_NOW_MS + next(clock) * 1000 if ms is None else ms)

    def fresh_entry_id(existing: set[str]) -> str:
        return f"fixed{next(ids):08d}"

    class FixedDialect:
        @staticmethod
        def new_session_id() -> str:
            return f"01234567-89ab-7def-8123-{next(sessions):012d}"

    persist.now_iso = now_iso  # type: ignore[attr-defined]
    updates.now_iso = now_iso  # type: ignore[attr-defined]
    persist.OMP_18_2 = FixedDialect()  # type: ignore[attr-defined,assignment]
    base.fresh_entry_id = fresh_entry_id
    session_file.fresh_entry_id = fresh_entry_id  # type: ignore[attr-defined]


def digest_one(path: Path, work: Path, tail: bytes) -> list[str]:
    """Per mode: ``mode import-digest convert-digest update-digest`` (``error:<type>`` when one
    fails): a first import (streaming), an in-memory conversion, and that import brought up to
    date after ``tail`` was appended to the transcript (the resume path)."""
    os.utime(path, ns=(_MTIME_NS, _MTIME_NS))
    store = ClaudeSessionStore(work, env={"HOME": str(work)})
    modes = (("lossless", True), ("omp", False))
    cells: dict[str, list[str]] = {mode: [mode] for mode, _ in modes}
    for mode, lossless in modes:
        root = work / f"out-{mode}"
        cells[mode].append(_attempt(partial(_import, store, path, root, lossless)))
        cells[mode].append(_attempt(partial(_convert, store, path, lossless)))
    with open(path, "ab") as handle:
        handle.write(tail)
    os.utime(path, ns=(_MTIME_NS + 1_000_000_000, _MTIME_NS + 1_000_000_000))
    for mode, lossless in modes:
        root = work / f"out-{mode}"
        cells[mode].append(_attempt(partial(_import, store, path, root, lossless)))
    return [" ".join(row) for row in cells.values()]


def _attempt(call: Callable[[], bytes]) -> str:
    try:
        return hashlib.sha256(call()).hexdigest()[:24]
    except SessionError as error:
        return f"error:{type(error).__name__}"


def _import(store: ClaudeSessionStore, path: Path, root: Path, lossless: bool) -> bytes:
    """``import_session`` into ``root``; every session file under it, in name order."""
    persist.import_session(store, store.info_for(str(path)), root=root, lossless=lossless)
    return b"".join(p.name.encode() + p.read_bytes() for p in sorted(root.rglob("*.jsonl")))


def _convert(store: ClaudeSessionStore, path: Path, lossless: bool) -> bytes:
    converted = store.convert(store.info_for(str(path)), lossless=lossless)
    return b"".join(encode_entry(entry) for entry in converted.entries)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--big", type=Path)
    args = parser.parse_args()
    _pin_what_varies()
    seeds = [
        p for p in sorted((FIXTURES / "claude").glob("*.jsonl")) if not p.name.endswith(".history.jsonl")
    ]
    rng = random.Random(args.seed)
    cases: list[tuple[str, bytes | Path]] = [(p.name, p.read_bytes()) for p in seeds]
    cases += [(f"mutated-{n}", mutate(rng.choice(seeds).read_bytes(), rng)) for n in range(args.files)]
    if args.big is not None:
        cases.append(("big", args.big))
    # One fixed place: the transcript's path is written into the session (the import marker).
    work = Path(tempfile.gettempdir()) / f"omp-output-digests-{os.getuid()}"
    for name, data in cases:
        shutil.rmtree(work, ignore_errors=True)
        project = work / "projects" / "-home-dev-app"
        project.mkdir(parents=True)
        path = project / "5e551011-0000-4000-8000-00000000b001.jsonl"
        tail = mutate(rng.choice(seeds).read_bytes(), rng)[-400:]
        if isinstance(data, Path):
            shutil.copyfile(data, path)
        else:  # imported in two steps: records of the second refer to those of the first
            cut = data.rfind(b"\n", 0, rng.randrange(len(data) + 1)) + 1
            path.write_bytes(data[:cut])
            tail = data[cut:] + tail
        for line in digest_one(path, work, tail):
            print(name, line, flush=True)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
