"""Fuzzing the viewer: mutated omp files served by the real app, every page and API asked for.

    python -m tests.web.fuzz_viewer --files 5000 --seed 13

Mutated omp files (the durability campaign's corpus and mutations) are written, a batch at a time,
under a sessions root served by a real viewer on 127.0.0.1 (uvicorn in a thread). Every batch asks
it for the index (with searches, paging and a project filter), the usage page and the static
files; every file for its session page, live-update version and the HTML export download, the
window API (at the leaf, at and around entries, by position, after an entry, a compaction's
dropped entries) and the rows API (near an entry, a tree filter, a slice, odd numbers). Every
other batch also serves three mutated Claude Code, Codex and pi transcripts each as foreign
sessions (the importer fuzzing's seeds), asks for their pages, and at the end imports each through
its page's button (a POST with the page's token) and asks for the index again.

Counted, as the other campaigns count them (:class:`~tests.durability.fuzz_campaign.Figures`):
HTTP 5xx answers and requests that got no whole answer, exceptions raised inside the app (as the
viewer logs them, with their traceback, a background task's included), hangs (the campaign's
watchdog, ``--timeout`` seconds per request) and any change to the served files or their
directories (hashes before and after every batch, before the imports), and any change to a
foreign transcript by an import. 4xx answers (422 "cannot read this session"
for a damaged file) are counted as the library's errors: expected. Failing inputs are kept under
``--keep``. ``test_fuzz_viewer`` runs a short campaign in the normal suite and a longer one
marked slow; the figures of the full run are in docs/durability.md.
"""

from __future__ import annotations

import argparse
import html
import http.client
import json
import logging
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from omp_session.importers import SOURCES
from omp_session.importers.stores import make_store
from omp_session.web import create_app
from tests.durability.fuzz_campaign import Figures, Hang, _alarm, mutate, seeds
from tests.importers.fuzz_importers import _seeds as foreign_seeds
from tests.web.support import serving, snapshot

BATCH = 40
#: Mutated transcripts of each other agent served every other batch.
FOREIGN_EACH = 3
PROJECT = "-fuzz"
#: Every request of a batch to each viewer.
SITE_URLS = [
    "/",
    "/?q=the",
    "/?q=%22command%22",
    "/?q=%ED%A0%BD",  # a lone surrogate's UTF-8 form: not valid UTF-8
    "/?page=2",
    "/?page=-1",
    f"/?project={PROJECT}",
    "/usage",
    "/usage?since=2025-01-01&until=2030-12-31",
    "/usage?since=x&until=99999-01-01",
    "/blob/" + "0" * 64,
    "/static/viewer.js",
    "/static/highlight.css",
]
#: Per file on both viewers; ``REF`` is the file's reference.
PAGE_URLS = ["/session/REF", "/api/version/REF", "/export/REF"]
#: Per file, the window and rows APIs.
WINDOW_URLS = [
    "/api/window/REF",
    "/api/window/REF?start=0&end=5",
    "/api/window/REF?start=-7&end=99999999999999999999",
    "/api/window/REF?dropped=1",
    "/api/window/REF?at=no-such-entry",
    "/api/rows/REF?near=",
    "/api/rows/REF?q=a",
    "/api/rows/REF?q=%5B",
    "/api/rows/REF?start=0&count=50",
    "/api/rows/REF?start=-5&count=99999999",
]
#: Per file and per entry id picked from it (``ID``).
ENTRY_URLS = [
    "/api/window/REF?target=ID",
    "/api/window/REF?at=ID",
    "/api/window/REF?at=ID&dropped=1",
    "/api/window/REF?at=ID&after=ID",
    "/api/rows/REF?near=ID&keys=ID",
]


@dataclass
class ViewerFigures(Figures):
    """The campaigns' figures, plus how many answers of each status each route gave."""

    statuses: Counter[str] = field(default_factory=Counter)


class _ExceptionRecorder(logging.Handler):
    """Records every exception the viewer logs while answering (its security middleware answers
    500 and logs the traceback, a background task's included) with the request's path."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.errors: list[tuple[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info is None or record.exc_info[1] is None:
            return
        path = str(record.args[0]) if isinstance(record.args, tuple) and record.args else "?"
        error = record.exc_info[1]
        detail = "".join(traceback.format_exception(error))[-1500:]
        self.errors.append((path, f"{type(error).__name__}: {error}\n{detail}"))


@contextmanager
def _recording(recorder: _ExceptionRecorder) -> Iterator[None]:
    logger = logging.getLogger("omp_session.web")
    logger.addHandler(recorder)
    try:
        yield
    finally:
        logger.removeHandler(recorder)


@dataclass
class _Batch:
    """One batch of mutated files and the viewers serving it."""

    figures: ViewerFigures
    keep: Path
    timeout: int
    directory: Path  # sessions/ (the omp files), home/ (the foreign transcripts), blobs/
    files: dict[str, bytes] = field(default_factory=dict)  # ref -> the bytes written
    recorder: _ExceptionRecorder = field(default_factory=_ExceptionRecorder)

    def get(self, base: str, url: str, ref: str = "", agent: str = "", form: bytes | None = None) -> str:
        """One request (a POST of ``form`` if given; redirects followed); its answer's text. What
        goes wrong is counted under the route (``ref`` replaced by ``REF``, a foreign session's by
        ``@agent/REF``)."""
        self.figures.calls += 1
        route = _route(url, ref) if not agent else re.sub(r"/%40[^?]*", f"/{agent}/REF", url)
        signal.alarm(self.timeout)
        try:
            with urllib.request.urlopen(base + url, data=form, timeout=self.timeout + 5) as response:
                text = str(response.read().decode("utf-8", "replace"))
                status = int(response.status)
        except urllib.error.HTTPError as error:
            text, status = "", error.code
        except Hang:
            self.figures.hangs += 1
            self.found(f"hang: {route}", ref, "")
            return ""
        except (OSError, http.client.HTTPException) as error:  # no (whole) answer: the server dropped it
            self.found(f"no answer: {route}: {type(error).__name__}", ref, str(error))
            return ""
        finally:
            signal.alarm(0)
        self.figures.statuses[f"{status} {route}"] += 1
        if status >= 500:
            self.found(f"HTTP {status}: {route}", ref, "")
        elif status >= 400:
            self.figures.library_errors += 1
        self.drain()
        return text

    def drain(self) -> None:
        """Count the exceptions the app raised since the last look."""
        while self.recorder.errors:
            path, detail = self.recorder.errors.pop(0)
            ref = next((r for r in self.files if path.endswith("/" + r)), "")
            route = path.replace(ref, "REF") if ref else re.sub(r"/@([a-z]+)/.*", r"/@\1/REF", path)
            self.found(f"exception: {route}: {detail.split(':')[0]}", ref, detail)

    def found(self, what: str, ref: str, detail: str) -> None:
        figures = self.figures
        figures.foreign[what] += 1
        if len(figures.examples) < 20:
            figures.examples.append(f"{what} ({ref}) {detail[:400]}")
        self.keep.mkdir(parents=True, exist_ok=True)
        number = len(list(self.keep.glob("case-*.txt")))
        if number >= 200:
            return
        if ref in self.files:
            (self.keep / f"case-{number}.jsonl").write_bytes(self.files[ref])
        else:  # the index, usage or a foreign session: any input of the batch may be the cause
            for part in ("sessions", "home"):
                shutil.copytree(self.directory / part, self.keep / f"case-{number}" / part, symlinks=True)
        (self.keep / f"case-{number}.txt").write_text(f"{what}\n{detail}", errors="replace")


def _route(url: str, ref: str) -> str:
    """``url`` as findings are counted: the file's reference as ``REF``, parameter names only."""
    path, _, query = (url.replace(quote(ref), "REF") if ref else url).partition("?")
    return path + ("?" + "&".join(part.split("=")[0] for part in query.split("&")) if query else "")


def _entry_ids(data: bytes, rng: random.Random) -> list[str]:
    """A few entry ids of the file (the first, the last and one between), as the pages link them."""
    ids = []
    for line in data.split(b"\n")[1:]:
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict) and isinstance(value.get("id"), str):
            ids.append(value["id"])
    if len(ids) <= 3:
        return ids
    return [ids[0], rng.choice(ids[1:-1]), ids[-1]]


def _url(template: str, ref: str, entry: str = "") -> str:
    encoded = quote(entry.encode("utf-8", "surrogatepass"), safe="")
    return template.replace("REF", quote(ref)).replace("ID", encoded)


def _write_foreign(home: Path, corpus: list[tuple[str, bytes]], rng: random.Random) -> None:
    """Mutated transcripts of each agent (:data:`FOREIGN_EACH`) where its store looks."""
    for number in range(FOREIGN_EACH):
        for source in SOURCES:
            data = mutate(rng.choice([seed for kind, seed in corpus if kind == source]), rng)
            if source == "claude":
                path = home / ".claude" / "projects" / "-fuzz" / f"f{number}.jsonl"
            elif source == "codex":
                name = f"rollout-2026-01-01T00-00-00-0199a1b2-c3d4-7e5f-8a9b-{number:012d}.jsonl"
                path = home / ".codex" / "sessions" / "2026" / "01" / "01" / name
            else:
                path = home / ".pi" / "agent" / "sessions" / "--fuzz--" / f"f{number}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)


@contextmanager
def _agent_dir(path: Path) -> Iterator[None]:
    """Caches, blobs and breadcrumbs of the served sessions stay in the scratch directory."""
    before = os.environ.get("PI_CODING_AGENT_DIR")
    os.environ["PI_CODING_AGENT_DIR"] = str(path)
    try:
        yield
    finally:
        if before is None:
            del os.environ["PI_CODING_AGENT_DIR"]
        else:
            os.environ["PI_CODING_AGENT_DIR"] = before


def _run_batch(batch: _Batch, directory: Path, rng: random.Random, foreign: bool) -> None:
    """Serve ``directory``'s sessions (already written) with a viewer and ask for everything."""
    root, blobs, home = directory / "sessions", directory / "blobs", directory / "home"
    blobs.mkdir()
    home.mkdir()
    stores = []
    if foreign:
        _write_foreign(home, foreign_seeds(directory / "pi-seed"), rng)
        stores = [make_store(source, env={"HOME": str(home)}) for source in SOURCES]
    before = snapshot(root, blobs, home)
    with ExitStack() as stack:
        stack.enter_context(_recording(batch.recorder))
        app = create_app(root, blobs, poll_ms=60_000, foreign_stores=stores)
        base = stack.enter_context(serving(app, log_level="critical"))
        _ask(batch, base, rng, foreign)
        batch.drain()
        after = snapshot(root, blobs, home)
        for path in sorted(set(before) | set(after)):
            if before.get(path) != after.get(path):
                ref = Path(path).relative_to(root).as_posix() if Path(path).is_relative_to(root) else ""
                batch.found("a request changed a served file", ref, path)
        if foreign:  # after the check above: an import writes into the sessions root
            _import_foreign(batch, base, home)
    batch.drain()


def _ask(batch: _Batch, base: str, rng: random.Random, foreign: bool) -> None:
    for url in SITE_URLS:
        batch.get(base, url)
    for ref, data in batch.files.items():
        entries = [*_entry_ids(data, rng), "no-such-entry"]
        for template in PAGE_URLS + WINDOW_URLS:
            batch.get(base, _url(template, ref), ref)
        for entry in entries:
            for template in ENTRY_URLS:
                batch.get(base, _url(template, ref, entry), ref)
    if foreign:
        _ask_foreign(batch, base)


def _foreign_refs(batch: _Batch, base: str) -> list[str]:
    """The foreign sessions, found as the reader finds them: through the index's links (already
    quoted for a URL, as the browser sends them)."""
    index = batch.get(base, "/")
    return [
        html.unescape(quoted) for quoted in sorted(set(re.findall(r'href="/session/(%40[^"?#]+)', index)))
    ]


def _agent(ref: str) -> str:
    return ref.split("/")[0].replace("%40", "@")


def _ask_foreign(batch: _Batch, base: str) -> None:
    """Every page of each foreign session."""
    for ref in _foreign_refs(batch, base):
        for template in PAGE_URLS:
            batch.get(base, template.replace("REF", ref), agent=_agent(ref))


def _import_foreign(batch: _Batch, base: str, home: Path) -> None:
    """Each foreign session imported as its page's button does (the viewer's one write: into the
    sessions root, never into the agent's store), then the index over what was imported."""
    sources = snapshot(home)
    for ref in _foreign_refs(batch, base):
        page = batch.get(base, f"/session/{ref}", agent=_agent(ref))
        token = re.search(r'name="token" value="([^"]*)"', page)
        if token is not None:
            form = urllib.parse.urlencode({"token": html.unescape(token.group(1))}).encode()
            batch.get(base, f"/api/import/{ref}", agent=_agent(ref), form=form)
    for url in SITE_URLS[:3]:
        batch.get(base, url)
    if snapshot(home) != sources:
        batch.found("an import changed another agent's transcript", "", str(home))


def campaign(
    files: int, seed: int, keep: Path, timeout: int = 20, *, progress: bool = False
) -> ViewerFigures:
    rng = random.Random(seed)
    corpus = seeds()
    figures = ViewerFigures()
    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        with tempfile.TemporaryDirectory(prefix="omp-viewer-fuzz-") as name, _agent_dir(Path(name) / "agent"):
            for number, start in enumerate(range(0, files, BATCH)):
                directory = Path(name) / f"batch-{number}"
                (directory / "sessions" / PROJECT).mkdir(parents=True)
                batch = _Batch(figures, keep, timeout, directory)
                for n in range(start, min(files, start + BATCH)):
                    data = mutate(rng.choice(corpus), rng)
                    (directory / "sessions" / PROJECT / f"f{n}.jsonl").write_bytes(data)
                    batch.files[f"{PROJECT}/f{n}.jsonl"] = data
                    figures.files += 1
                _run_batch(batch, directory, rng, foreign=number % 2 == 0)
                shutil.rmtree(directory)
                if progress:
                    found = sum(figures.foreign.values())
                    print(f"{figures.files} files, {figures.calls} requests, {found} found", file=sys.stderr)
    finally:
        signal.signal(signal.SIGALRM, previous)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--keep", type=Path, default=Path("viewer-fuzz-failures"))
    parser.add_argument("--timeout", type=int, default=20)
    args = parser.parse_args(argv)
    started = time.monotonic()
    figures = campaign(args.files, args.seed, args.keep, args.timeout, progress=True)
    report = {
        "files": figures.files,
        "requests": figures.calls,
        "http_4xx": figures.library_errors,
        "findings": sum(figures.foreign.values()),
        "findings_by_kind": dict(figures.foreign),
        "hangs": figures.hangs,
        "statuses": dict(sorted(figures.statuses.items(), key=lambda item: item[0].split(" ", 1)[::-1])),
        "seconds": round(time.monotonic() - started, 1),
        "examples": figures.examples,
    }
    print(json.dumps(report, indent=2, ensure_ascii=False))
    return 0 if not figures.foreign and not figures.hangs else 1


if __name__ == "__main__":
    sys.exit(main())
