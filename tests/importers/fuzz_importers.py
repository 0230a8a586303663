"""Fuzzing the importers: mutated Claude Code, Codex and pi transcripts through every importer call.

    python -m tests.importers.fuzz_importers --files 5000 --seed 3

Each mutated transcript (the fixture corpora and a pi session, mutated as the durability campaign
mutates omp files) goes through ``info_for`` and ``list``, ``convert`` and ``convert_streaming`` in
both modes, ``to_manager`` with its context, a first import, then, after the source grew by a
mutated tail, an update; every 25th file also through ``omp-session import``. Counted: exceptions
that are not the library's own (``SessionError``), hangs (a watchdog per call), CLI runs that
print "internal error", and a source file changed. Failing inputs are kept under ``--keep``.
``test_fuzz_importers`` (marked slow) runs a short campaign.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import sys
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from omp_session.cli import main as cli_main
from omp_session.errors import SessionError
from omp_session.importers.base import ConvertedSession
from omp_session.importers.persist import import_session
from omp_session.importers.stores import make_store
from tests.durability.fuzz_campaign import Figures, Hang, _alarm, mutate
from tests.importers.corpus import FIXTURES
from tests.importers.helpers import write_pi_session

#: The file name each store recognises (a Codex rollout carries its id in its name).
_NAMES = {
    "claude": "s.jsonl",
    "codex": "rollout-2026-01-01T00-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl",
}


def _seeds(scratch: Path) -> list[tuple[str, bytes]]:
    seeds = [
        (source, path.read_bytes())
        for source in ("claude", "codex")
        for path in sorted((FIXTURES / source).glob("*.jsonl"))
        if not path.name.endswith(".history.jsonl")
    ]
    pi = write_pi_session(scratch / "pi-seed").read_bytes()
    return seeds + [("pi", pi)] * 8


def campaign(files: int, seed: int, keep: Path, timeout: int = 20) -> Figures:
    rng = random.Random(seed)
    figures = Figures()
    signal.signal(signal.SIGALRM, _alarm)
    with tempfile.TemporaryDirectory(prefix="omp-import-fuzz-") as scratch_name:
        scratch = Path(scratch_name)
        seeds = _seeds(scratch)
        for number in range(files):
            source, data = rng.choice(seeds)
            work = scratch / f"case-{number}"
            work.mkdir()
            path = work / _NAMES.get(source, "s.jsonl")
            path.write_bytes(mutate(data, rng))
            figures.files += 1
            case = _Case(figures, keep, source, path, timeout)
            case.exercise(work, data, rng)
            if number % 25 == 0:
                case.cli(work)
    return figures


@dataclass
class _Case:
    """One mutated transcript and where its findings go."""

    figures: Figures
    keep: Path
    source: str
    path: Path
    timeout: int

    def run(self, name: str, call: Callable[[], Any]) -> Any:
        """``call()``, or ``None`` after a library error (expected) or a finding (counted)."""
        self.figures.calls += 1
        signal.alarm(self.timeout)
        try:
            return call()
        except SessionError:
            self.figures.library_errors += 1
        except Hang:
            self.figures.hangs += 1
            self.found(f"{name}: hang", "")
        except Exception as error:  # what the campaign looks for
            self.found(f"{name}: {type(error).__name__}", f"{error}\n{traceback.format_exc()[-1200:]}")
        finally:
            signal.alarm(0)
        return None

    def exercise(self, work: Path, data: bytes, rng: random.Random) -> None:
        store = make_store(self.source, root=str(work), env={"HOME": str(work)})
        path = self.path
        info = self.run("info_for", lambda: store.info_for(str(path)))
        self.run("list", store.list)
        if info is None:
            return
        for lossless in (True, False):
            converted = self.run("convert", partial(store.convert, info, lossless=lossless))
            if converted is not None:
                self.run("to_manager", partial(_context, converted))
            self.run("convert_streaming", partial(store.convert_streaming, info, _drop, lossless=lossless))
        before = path.read_bytes()
        root = work / "out"
        self.run("import", lambda: import_session(store, info, root=root))
        if path.read_bytes() != before:
            self.found("import: changed its source", "")
        with open(path, "ab") as handle:  # the source grows: the next import is an update
            handle.write(mutate(data, rng)[-400:])
        grown = self.run("info_for", lambda: store.info_for(str(path)))
        if grown is not None:
            self.run("update", lambda: import_session(store, grown, root=root))

    def cli(self, work: Path) -> None:
        self.figures.cli_runs += 1
        env = {"HOME": str(work), "PI_CODING_AGENT_DIR": str(work / "agent")}
        result = CliRunner().invoke(cli_main, ["import", self.source, str(self.path), "--json"], env=env)
        if "internal error" in result.output or not isinstance(result.exception, (SystemExit, type(None))):
            self.figures.cli_internal += 1
            self.found("cli import: internal error", f"{result.output[-300:]!r} {result.exception!r}")

    def found(self, what: str, detail: str) -> None:
        figures = self.figures
        figures.foreign[f"{self.source} {what}"] += 1
        if len(figures.examples) < 20:
            figures.examples.append(f"{self.source} {what}: {detail}")
        self.keep.mkdir(parents=True, exist_ok=True)
        (self.keep / f"{sum(figures.foreign.values())}-{self.path.name}").write_bytes(self.path.read_bytes())


def _context(converted: ConvertedSession) -> Any:
    return converted.to_manager().build_session_context()


def _drop(_entries: list[dict[str, Any]]) -> None:
    """A sink that keeps nothing."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--keep", type=Path, default=Path("import-fuzz-failures"))
    parser.add_argument("--timeout", type=int, default=20)
    args = parser.parse_args(argv)
    figures = campaign(args.files, args.seed, args.keep, args.timeout)
    report = {
        "files": figures.files,
        "calls": figures.calls,
        "library_errors": figures.library_errors,
        "foreign": dict(figures.foreign),
        "hangs": figures.hangs,
        "cli_runs": figures.cli_runs,
        "cli_internal_errors": figures.cli_internal,
        "examples": figures.examples,
    }
    print(json.dumps(report, indent=2, ensure_ascii=False))
    return 0 if not figures.foreign else 1


if __name__ == "__main__":
    sys.exit(main())
