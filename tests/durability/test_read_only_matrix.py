"""Nothing a command only reads is ever written (issue 25 item 1), on success or failure.

Every read command runs on every kind of input: both conformance corpora (omp 13.19 and omp 18),
damaged files (torn, bad header, binary, BOM, CRLF, an old version, duplicate ids), empty and blank
files, and special files (a FIFO, a directory named ``*.jsonl``); the bytes and mtimes of every
input file and directory are compared before and after. ``fork`` and ``export -f jsonl`` may add
their new file (that is their job) but change nothing that was there. The database store's rows
(content and ``mtime_ms``) are compared in ``tests/postgres/test_read_only_postgres.py``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import quote

import pytest
from click.testing import CliRunner

from omp_session.cli import main
from omp_session.web.app import create_app
from tests.web.support import serving

TESTS = Path(__file__).resolve().parents[1]
CORPUS_1319 = sorted((TESTS / "conformance" / "load").glob("*.jsonl"))
CORPUS_18 = sorted((TESTS / "conformance_omp18" / "load").glob("*.jsonl"))
IMPORTER_FIXTURES = TESTS / "importers" / "fixtures"
HEADER = b'{"type":"session","version":3,"id":"dmg","timestamp":"2025-06-02T14:00:00.000Z","cwd":"/w"}\n'
ENTRY = (
    b'{"type":"message","id":"u1","parentId":null,"timestamp":"2025-06-02T14:00:01.000Z",'
    b'"message":{"role":"user","content":"hi","timestamp":1}}\n'
)
V1_ENTRY = (
    b'{"type":"message","timestamp":"2025-06-02T14:00:01.000Z",'
    b'"message":{"role":"user","content":"v1","timestamp":1}}\n'
)

#: Damaged inputs: name -> bytes.
DAMAGED = {
    "torn-tail": HEADER + ENTRY + ENTRY[:40],
    "bad-header": b'{"type":"sess\n' + ENTRY,
    "no-header": ENTRY + ENTRY.replace(b'"u1"', b'"u2"', 1),
    "binary": bytes(range(256)) * 8,
    "text": b"Dear diary,\nnothing to see.\n",
    "bom-crlf": b"\xef\xbb\xbf" + HEADER.replace(b"\n", b"\r\n") + ENTRY.replace(b"\n", b"\r\n"),
    "old-version": HEADER.replace(b'"version":3', b'"version":1') + V1_ENTRY,
    "duplicate-ids": HEADER + ENTRY + ENTRY,
    "invalid-utf8": HEADER + ENTRY.replace(b"hi", b"h\xff\xfei"),
    "empty": b"",
    "blank": b"\n \n\t\n",
}

Snapshot = dict[str, tuple[str, bytes | None, int]]


def snapshot(root: Path) -> Snapshot:
    """Every file and directory under ``root``: kind, bytes (files) and mtime in ns (no symlink
    is followed; special files by kind and mtime only)."""
    found: Snapshot = {}
    for directory, names, files in os.walk(root):
        for name in [*names, *files]:
            path = Path(directory) / name
            info = path.lstat()
            if path.is_symlink():
                found[str(path)] = ("link", os.readlink(path).encode(), info.st_mtime_ns)
            elif path.is_file():
                found[str(path)] = ("file", path.read_bytes(), info.st_mtime_ns)
            elif path.is_dir():
                found[str(path)] = ("dir", None, info.st_mtime_ns)
            else:
                found[str(path)] = ("special", None, info.st_mtime_ns)
    found[str(root)] = ("dir", None, root.stat().st_mtime_ns)
    return found


def unchanged_except_new_files(before: Snapshot, after: Snapshot, *, may_add: bool) -> list[str]:
    """What changed. ``may_add``: new files (and the mtime of the directory that got them) are
    allowed; nothing that was there may change."""
    problems: list[str] = []
    added = [path for path in after if path not in before]
    parents_of_added = {str(Path(path).parent) for path in added}
    for path, (kind, data, mtime) in before.items():
        now = after.get(path)
        if now is None:
            problems.append(f"removed: {path}")
        elif kind == "dir" and may_add and path in parents_of_added:
            continue
        elif now != (kind, data, mtime):
            problems.append(f"changed: {path}")
    if added and not may_add:
        problems.extend(f"added: {path}" for path in added)
    return problems


class Store:
    """A sessions root holding every kind of input, in three projects."""

    def __init__(self, base: Path) -> None:
        self.root = base / "sessions"
        self.out = base / "out"  # where exports are written: outside the root
        self.out.mkdir()
        corpus, corpus18, damaged = (self.root / name for name in ("-corpus-1319", "-corpus-18", "-damaged"))
        for directory, files in ((corpus, CORPUS_1319), (corpus18, CORPUS_18[::3])):
            directory.mkdir(parents=True)
            for source in files:
                shutil.copy2(source, directory / source.name)
        damaged.mkdir()
        for name, data in DAMAGED.items():
            (damaged / f"2025-06-02T14-00-00-000Z_{name}.jsonl").write_bytes(data)
        os.mkfifo(damaged / "2025-06-02T14-00-00-000Z_fifo.jsonl")
        (damaged / "2025-06-02T14-00-00-000Z_dir.jsonl").mkdir()
        self.special = [
            damaged / "2025-06-02T14-00-00-000Z_fifo.jsonl",
            damaged / "2025-06-02T14-00-00-000Z_dir.jsonl",
        ]
        # Old mtimes, so that a rewrite within the same second would still show.
        for path in self.root.rglob("*"):
            os.utime(path, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000), follow_symlinks=False)
        os.utime(self.root, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))

    def sessions(self) -> list[Path]:
        """Every input a per-file command is given: the regular files and the special ones."""
        return sorted(p for p in self.root.rglob("*.jsonl") if p.is_file()) + self.special


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def run(store: Store, *args: str) -> int:
    result = CliRunner().invoke(main, ["--dir", str(store.root), *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), (args, result.output)
    assert "internal error" not in result.output, (args, result.output)
    return result.exit_code


PER_FILE: dict[str, list[str]] = {
    "show": ["show", "{path}"],
    "show --json": ["show", "--json", "{path}"],
    "tree": ["tree", "{path}"],
    "context": ["context", "{path}"],
    "stats": ["stats", "{path}"],
    "check": ["check", "{path}"],
    "export md": ["export", "{path}", "-f", "md", "-o", "{out}/x.md"],
    "export html": ["export", "{path}", "-f", "html", "-o", "{out}/x.html"],
    "export jsonl": ["export", "{path}", "-f", "jsonl"],  # its new file goes beside the source
    "fork": ["fork", "{path}"],  # its new file goes beside the source
}
CREATES_BESIDE = {"export jsonl", "fork"}


@pytest.mark.parametrize("command", list(PER_FILE))
def test_per_file_read_commands_change_no_input(store: Store, command: str) -> None:
    before = snapshot(store.root)
    codes = set()
    for path in store.sessions():
        args = [a.format(path=path, out=store.out) for a in PER_FILE[command]]
        for output in store.out.iterdir():
            output.unlink()
        codes.add(run(store, *args))
        after = snapshot(store.root)
        assert unchanged_except_new_files(before, after, may_add=command in CREATES_BESIDE) == [], (
            command,
            path,
        )
        before = after if command in CREATES_BESIDE else before
    assert codes & {0, 1} and 2 in codes  # some inputs were read, the damaged ones refused


WHOLE_ROOT: dict[str, list[str]] = {
    "list --all": ["list", "--all"],
    "list --all --json": ["list", "--all", "--json"],
    "list (a project)": ["list", "--cwd", "/work/proj"],
    "stats --all": ["stats", "--all"],
    "usage daily --all": ["usage", "daily", "--all"],
    "usage model --all --json": ["usage", "model", "--all", "--json"],
    "search --all": ["search", "--all", "the"],
    "search --all --regex": ["search", "--all", "--regex", "h[ae]llo"],
    "check --all": ["check", "--all"],
    "migrate --all --dry-run": ["migrate", "--all", "--dry-run"],
    "sql --all": ["sql", "--all", "select count(*) from usage"],
    "search --all --rank": ["search", "--all", "--rank", "the"],
}


@pytest.mark.parametrize("command", list(WHOLE_ROOT))
def test_whole_root_read_commands_change_no_input(store: Store, command: str) -> None:
    before = snapshot(store.root)
    run(store, *WHOLE_ROOT[command])
    assert unchanged_except_new_files(before, snapshot(store.root), may_add=False) == []


@pytest.mark.parametrize("source", ["claude", "codex", "pi"])
def test_import_never_changes_its_sources(store: Store, tmp_path: Path, source: str) -> None:
    sources = tmp_path / "sources"
    shutil.copytree(IMPORTER_FIXTURES / ("claude" if source == "pi" else source), sources)
    if source == "pi":  # pi sessions are omp-shaped: the corpus, and the other agents' files
        for path in CORPUS_1319[:10]:
            shutil.copy2(path, sources / path.name)
    os.mkfifo(sources / "zz-fifo.jsonl")
    for path in sources.rglob("*"):
        os.utime(path, ns=(1_700_000_000_000_000_000,) * 2, follow_symlinks=False)
    before = snapshot(sources)
    for args in (["import", source, str(sources)], ["import", source, "--dry-run", str(sources)]):
        run(store, *args)
        run(store, *args)  # again: unchanged / updated paths
        assert unchanged_except_new_files(before, snapshot(sources), may_add=False) == []
    for path in sorted(sources.glob("*.jsonl"))[:8]:
        if path.is_file():
            run(store, "import", source, str(path))
    assert unchanged_except_new_files(before, snapshot(sources), may_add=False) == []


def test_the_viewer_changes_no_input(store: Store) -> None:
    import urllib.error
    import urllib.request

    def get(url: str) -> int:
        try:
            with urllib.request.urlopen(url, timeout=30) as answer:
                answer.read()
                return int(answer.status)
        except urllib.error.HTTPError as error:
            return int(error.code)

    before = snapshot(store.root)
    statuses = set()
    with serving(create_app(store.root)) as base:
        for query in ("/", "/?q=the", "/?page=2", "/usage"):
            statuses.add(get(base + query))
        for number, path in enumerate(store.sessions()):
            ref = quote(path.relative_to(store.root).as_posix())
            for route in ("session", "api/version", "api/window", "api/rows") + (
                ("export",) if number % 4 == 0 else ()
            ):
                query = {"api/window": "?start=0&end=10", "api/rows": "?near="}.get(route, "")
                statuses.add(get(f"{base}/{route}/{ref}{query}"))
    assert 200 in statuses and not any(status >= 500 for status in statuses), statuses
    assert unchanged_except_new_files(before, snapshot(store.root), may_add=False) == []
