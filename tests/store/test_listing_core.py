"""The listing core below the manager (``store/listing/``): ``SessionManager.list``/``list_all`` read
each file's head when listing and the rest of a file when a field that needs every entry is first
read; they list exactly what the cached listing of ``tools/listing.py`` lists, and write nothing."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

from omp_session import SessionInfo, SessionManager
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
