"""What the viewer's load test (``bench/viewer_load.py``, issue 25 item 5) found, each fixed."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from omp_session.web import index_search
from omp_session.web.session_cache import RecentlyUsed
from tests.helpers import HEADER, msg, user, write_session


def test_concurrent_requests_for_one_session_build_its_view_once() -> None:
    cache: RecentlyUsed[object] = RecentlyUsed(2)
    builds: list[int] = []
    results: list[object] = []

    def build() -> object:
        builds.append(1)
        time.sleep(0.2)  # an open of a big session takes a while: everyone arrives meanwhile
        return object()

    threads = [
        threading.Thread(target=lambda: results.append(cache.get(("s", "v1"), build))) for _ in range(20)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(builds) == 1  # before the fix: one build per request (1.3 GB under 10 clients)
    assert len(results) == 20 and len({id(r) for r in results}) == 1


def test_a_failed_build_fails_every_waiter_and_the_next_request_tries_again() -> None:
    cache: RecentlyUsed[str] = RecentlyUsed(2)
    errors: list[BaseException] = []
    calls: list[int] = []

    def failing() -> str:
        calls.append(1)
        time.sleep(0.1)
        raise OSError("gone")

    def ask() -> None:
        try:
            cache.get(("s", "v1"), failing)
        except OSError as error:
            errors.append(error)

    threads = [threading.Thread(target=ask) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(calls) == 1 and len(errors) == 5
    assert cache.get(("s", "v1"), lambda: "ok") == "ok"  # nothing stuck, nothing cached


def test_other_keys_are_not_held_up_by_a_build() -> None:
    cache: RecentlyUsed[str] = RecentlyUsed(2)
    started = threading.Event()
    release = threading.Event()

    def slow() -> str:
        started.set()
        release.wait(10)
        return "slow"

    thread = threading.Thread(target=lambda: cache.get(("big", "v"), slow))
    thread.start()
    assert started.wait(5)
    assert cache.get(("small", "v"), lambda: "small") == "small"  # answered while the big one builds
    release.set()
    thread.join(10)
    assert cache.get(("big", "v"), lambda: "rebuilt") == "slow"  # the build was kept


def test_concurrent_identical_searches_read_each_session_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from omp_session.web.catalog import SessionCatalog
    from omp_session.web.index_search import CatalogSearch

    root = tmp_path / "sessions"
    for number in range(5):
        write_session(
            root / "-work-proj" / f"2025-06-0{number + 1}T14-00-00-000Z_s{number}.jsonl",
            [msg("u1", None, user(f"hello number {number}"))],
            header={**HEADER, "id": f"s{number}"},
        )
    summaries = SessionCatalog(root).sessions()
    search = CatalogSearch()
    reads: list[str] = []
    original = index_search.search_store  # type: ignore[attr-defined]

    def counting(paths: Any, *args: Any, **kwargs: Any) -> Any:
        reads.extend(str(path) for path in paths)
        time.sleep(0.05)
        return original(paths, *args, **kwargs)

    monkeypatch.setattr(index_search, "search_store", counting)  # counts the searches, changes nothing
    results: list[int] = []
    threads = [
        threading.Thread(target=lambda: results.append(len(search(summaries, "hello")))) for _ in range(10)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert results == [5] * 10
    assert sorted(reads) == sorted(str(s.path) for s in summaries)  # each file read once, not 10 times
