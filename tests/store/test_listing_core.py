"""The listing core below the manager (``store/listing/``): ``SessionManager.list``/``list_all`` read
each file's head when listing and the rest of a file when a field that needs every entry is first
read; they list exactly what the cached listing of ``tools/listing.py`` lists, and write nothing."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest

from omp_session import SessionInfo, SessionManager
from omp_session.store.listing import HeadCache
from omp_session.store.listing import list_sessions as core_list
from omp_session.tools.listing import list_sessions as cached_list
from omp_session.tools.listing_cache import ListingCache, cache_path
from tests.helpers import HEADER, assistant, msg, user, write_session

CORPORA = Path(__file__).parents[1]
#: The directories of session files in the conformance corpora (each listed as one project).
CORPUS_DIRS = sorted(
    {
        path.parent
        for corpus in ("conformance/load", "conformance_omp18", "conformance_omp183")
        for path in (CORPORA / corpus).rglob("*.jsonl")
    }
)


def _dicts(infos: Sequence[SessionInfo]) -> list[dict[str, Any]]:
    """Every field of each info (``to_dict`` leaves out ours: the last activity, cost, prompt)."""
    return [
        info.to_dict() | {"lastActivity": info.last_activity, "cost": info.cost, "prompt": info.first_prompt}
        for info in infos
    ]


@pytest.mark.parametrize("directory", CORPUS_DIRS, ids=lambda p: str(p.relative_to(CORPORA)))
def test_the_manager_lists_what_the_cached_listing_lists(directory: Path, tmp_path: Path) -> None:
    copy = tmp_path / "project"
    shutil.copytree(directory, copy, ignore=shutil.ignore_patterns("*.json", "*.md", "*.ts"))
    listed = SessionManager.list("/unused", copy)
    assert not cache_path().exists()  # the manager's listing writes no cache
    eager = cached_list(copy, cache=ListingCache.disabled())
    assert [info.path for info in listed] == [info.path for info in eager]
    assert _dicts(listed) == _dicts(eager)


def _session(directory: Path, name: str, messages: int) -> Path:
    """A session of ``messages`` messages of about 2 KB each (a file of more than its head)."""
    entries = []
    parent = None
    for number in range(messages):
        entry_id = f"{name}-{number}"
        text = f"{number} " + "words " * 350
        message = user(f"question {text}") if number % 2 == 0 else assistant(f"answer {text}")
        entries.append(msg(entry_id, parent, message))
        parent = entry_id
    return write_session(directory / f"{name}.jsonl", entries, {**HEADER, "id": name})


def test_a_listed_file_is_read_past_its_head_only_when_a_field_needs_it(tmp_path: Path) -> None:
    path = _session(tmp_path, "grows", 4)
    listed_size = path.stat().st_size
    (info,) = SessionManager.list("/unused", tmp_path)
    assert (info.id, info.size, info.cwd) == ("grows", listed_size, "/work/proj")
    # The body was not read by the listing: a message appended now is counted when the count is
    # first read (the fields of the head stay as listed).
    line = orjson.dumps(msg("late", "grows-3", user("a late question")))
    with path.open("ab") as handle:
        handle.write(line + b"\n")
    assert info.first_message.startswith("question 0 words")  # (from the head)
    assert info.message_count == 5
    assert info.all_messages_text.endswith("a late question")
    assert info.size == listed_size


def test_a_file_gone_before_its_rest_is_read_is_its_header_alone(tmp_path: Path) -> None:
    path = _session(tmp_path, "gone", 6)
    (info,) = SessionManager.list("/unused", tmp_path)
    os.unlink(path)
    assert (info.id, info.message_count, info.all_messages_text) == ("gone", 0, "")
    assert info.first_message.startswith("question 0")  # (read with the head)
    assert info.last_activity == info.modified


def test_a_header_longer_than_the_first_read_is_read_on(tmp_path: Path) -> None:
    long_cwd = "/work/" + "x" * 20_000
    path = write_session(
        tmp_path / "long.jsonl", [msg("a", None, user("hello"))], {**HEADER, "id": "long", "cwd": long_cwd}
    )
    (info,) = core_list(tmp_path)
    assert (info.cwd, info.message_count) == (long_cwd, 1)
    assert info.path == os.fspath(path)


def test_the_manager_lists_newest_first_without_reading_bodies(tmp_path: Path) -> None:
    for number, name in enumerate(["old", "new", "mid"]):
        path = _session(tmp_path, name, 2)
        stamp = {"old": 1000, "mid": 2000, "new": 3000}[name] + number
        os.utime(path, (stamp, stamp))
    assert [info.id for info in SessionManager.list("/unused", tmp_path)] == ["new", "mid", "old"]
    assert [info.id for info in SessionManager.list_all()] == []  # (the agent dir's root is empty)


# -- the heads kept between listings (store/listing/heads.py) -------------------------------------

_OPENED: list[str] | None = None  # the paths os.open / open were given while a test collects them


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _OPENED is not None and event == "open" and isinstance(args[0], str | bytes | os.PathLike):
        _OPENED.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)  # (audit hooks cannot be removed: this one collects only inside _opened)


@contextlib.contextmanager
def _opened() -> Iterator[list[str]]:
    """The files opened inside the block, as the interpreter's audit events name them."""
    global _OPENED
    found: list[str] = []
    _OPENED = found
    try:
        yield found
    finally:
        _OPENED = None


def _listed(directory: Path, heads: HeadCache) -> list[SessionInfo]:
    return core_list(directory, summaries=heads.summaries)


def _set_mtime(path: Path, mtime_ns: int) -> None:
    os.utime(path, ns=(mtime_ns, mtime_ns))


@pytest.mark.parametrize("directory", CORPUS_DIRS, ids=lambda p: str(p.relative_to(CORPORA)))
def test_a_listing_from_kept_heads_lists_what_a_first_listing_lists(directory: Path, tmp_path: Path) -> None:
    copy = tmp_path / "project"
    shutil.copytree(directory, copy, ignore=shutil.ignore_patterns("*.json", "*.md", "*.ts"))
    heads = HeadCache(racy_ns=0)  # (every file kept, however recently written)
    first = _listed(copy, heads)
    with _opened() as opened:
        second = _listed(copy, heads)
        paths = [info.path for info in second]
    assert not [path for path in opened if path.endswith(".jsonl")]  # each file only stat-ed
    assert len(heads) == len(list(copy.glob("*.jsonl")))
    eager = cached_list(copy, cache=ListingCache.disabled())
    assert paths == [info.path for info in first] == [info.path for info in eager]
    assert _dicts(second) == _dicts(first) == _dicts(eager)


def test_a_file_appended_to_is_read_again(tmp_path: Path) -> None:
    path = _session(tmp_path, "grows", 4)
    heads = HeadCache(racy_ns=0)
    (before,) = _listed(tmp_path, heads)
    assert (before.message_count, before.size) == (4, path.stat().st_size)
    with path.open("ab") as handle:
        handle.write(orjson.dumps(msg("late", "grows-3", user("a late question"))) + b"\n")
    (after,) = _listed(tmp_path, heads)
    assert (after.message_count, after.size) == (5, path.stat().st_size)
    assert after.all_messages_text.endswith("a late question")
    assert after.modified == datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)


def _retitled(path: Path, old: bytes, new: bytes) -> None:
    """The header's title ``old`` rewritten as ``new`` (as long) in place: the size is kept."""
    assert len(old) == len(new)
    data = path.read_bytes()
    assert data.count(old) == 1
    with path.open("r+b") as handle:
        handle.seek(data.index(old))
        handle.write(new)


def _titled_session(directory: Path, name: str) -> Path:
    path = _session(directory, name, 4)
    data = path.read_bytes().replace(b'"type":"session"', b'"type":"session","title":"title A"', 1)
    path.write_bytes(data)
    return path


def test_a_file_rewritten_to_the_same_size_with_another_mtime_is_read_again(tmp_path: Path) -> None:
    path = _titled_session(tmp_path, "retitled")
    _set_mtime(path, 1_700_000_000_000_000_000)
    heads = HeadCache(racy_ns=0)
    assert [info.title for info in _listed(tmp_path, heads)] == ["title A"]
    size = path.stat().st_size
    _retitled(path, b"title A", b"title B")
    _set_mtime(path, 1_700_000_000_000_000_001)  # 1 ns later
    assert path.stat().st_size == size
    assert [info.title for info in _listed(tmp_path, heads)] == ["title B"]


def test_a_file_rewritten_to_the_same_size_and_mtime_is_read_again(tmp_path: Path) -> None:
    """The change that leaves size and mtime as they were (the mtime set back), and maybe the
    ctime too when it falls within the same tick of the clock: such a recently changed file is
    never kept (``racy_ns``), so it is read again."""
    path = _titled_session(tmp_path, "retitled")
    heads = HeadCache()  # the default: files changed within the last 2 s are not kept
    assert [info.title for info in _listed(tmp_path, heads)] == ["title A"]
    found = path.stat()
    _retitled(path, b"title A", b"title B")
    _set_mtime(path, found.st_mtime_ns)
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (found.st_size, found.st_mtime_ns)
    assert [info.title for info in _listed(tmp_path, heads)] == ["title B"]


def test_a_file_replaced_by_another_is_read_again(tmp_path: Path) -> None:
    path = _titled_session(tmp_path, "replaced")
    _set_mtime(path, 1_700_000_000_000_000_000)
    heads = HeadCache(racy_ns=0)
    assert [info.title for info in _listed(tmp_path, heads)] == ["title A"]
    other = _titled_session(tmp_path / "elsewhere", "replaced")
    _retitled(other, b"title A", b"title C")
    _set_mtime(other, 1_700_000_000_000_000_000)  # the same size and times: only the inode differs
    os.replace(other, path)
    assert [info.title for info in _listed(tmp_path, heads)] == ["title C"]


def test_a_file_no_longer_a_session_or_gone_is_no_longer_listed(tmp_path: Path) -> None:
    kept, broken, gone = (_session(tmp_path, name, 2) for name in ("kept", "broken", "gone"))
    for path in (kept, broken, gone):
        _set_mtime(path, 1_700_000_000_000_000_000)
    heads = HeadCache(racy_ns=0)
    assert {info.id for info in _listed(tmp_path, heads)} == {"kept", "broken", "gone"}
    broken.write_bytes(b"not a session\n")
    gone.unlink()
    assert [info.id for info in _listed(tmp_path, heads)] == ["kept"]


def test_a_recently_changed_file_is_read_by_every_listing(tmp_path: Path) -> None:
    _session(tmp_path, "busy", 2)  # written now
    heads = HeadCache()
    _listed(tmp_path, heads)
    with _opened() as opened:
        (info,) = _listed(tmp_path, heads)
    assert info.id == "busy" and len(heads) == 0
    assert [path for path in opened if path.endswith("busy.jsonl")] == [info.path]


def test_the_heads_kept_stay_within_their_budget(tmp_path: Path) -> None:
    for number in range(12):
        _set_mtime(_session(tmp_path, f"s{number:02}", 3), 1_700_000_000_000_000_000 + number * 10**9)
    heads = HeadCache(budget_bytes=4 * 4096, racy_ns=0)
    listed = [info.id for info in _listed(tmp_path, heads)]
    assert listed == [f"s{number:02}" for number in reversed(range(12))]
    assert 0 < len(heads) < 12 and heads.weight <= heads.budget_bytes
    assert [info.id for info in _listed(tmp_path, heads)] == listed  # read again where not kept
    assert heads.weight <= heads.budget_bytes
    heads.clear()
    assert (len(heads), heads.weight) == (0, 0)


def test_the_manager_lists_what_changed_since_its_last_listing(tmp_path: Path) -> None:
    path = _session(tmp_path, "grows", 4)
    assert [info.message_count for info in SessionManager.list("/unused", tmp_path)] == [4]
    with path.open("ab") as handle:
        handle.write(orjson.dumps(msg("late", "grows-3", user("a late question"))) + b"\n")
    (info,) = SessionManager.list("/unused", tmp_path)
    assert (info.message_count, info.size) == (5, path.stat().st_size)


def test_every_field_of_a_listed_session_is_read_with_one_read_of_the_file(tmp_path: Path) -> None:
    """``to_dict`` of an untitled session read from its head: its title comes from the whole
    file's summary (no search of the file for it first, then a second read for the rest)."""
    path = _session(tmp_path, "untitled", 6)
    (info,) = core_list(tmp_path, summaries=HeadCache().summaries)
    assert "title" not in info.__dict__  # (a partial info)
    with _opened() as opened:
        shown = info.to_dict()
    assert [name for name in opened if name == os.fspath(path)] == [os.fspath(path)]
    assert "title" not in shown and shown["messageCount"] == 6  # (no title: no key)
