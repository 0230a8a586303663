"""The viewer's index under load (issue 25 item 5): one listing and one rendering per store state,
shared by concurrent requests, and never kept past a change of the store. Real HTTP requests to a
real server (uvicorn in a thread)."""

from __future__ import annotations

import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from omp_session.web import app as web_app
from omp_session.web import catalog as web_catalog
from omp_session.web import index_search
from omp_session.web.index_view import PAGE_SIZE
from tests.helpers import HEADER, jsonl, msg, user, write_session

from .support import running_viewer


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as answer:
        assert answer.status == 200
        return str(answer.read().decode("utf-8"))


def _sessions(root: Path, count: int, text: str = "hello") -> list[Path]:
    return [
        write_session(
            root / "-work-proj" / f"2025-06-01T14-00-{number:02d}-000Z_s{number}.jsonl",
            [msg("u1", None, user(f"{text} number {number}"))],
            header={**HEADER, "id": f"s{number}"},
        )
        for number in range(count)
    ]


def _counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str, calls: list[int]) -> None:
    """Count the calls of ``module.name`` (each made slow, so concurrent requests overlap)."""
    original = getattr(module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        time.sleep(0.2)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)


def _at_once(url: str, clients: int) -> list[str]:
    bodies: list[str] = []
    threads = [threading.Thread(target=lambda: bodies.append(_get(url))) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return bodies


def test_concurrent_index_requests_list_and_render_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sessions"
    _sessions(root, 3)
    listings: list[int] = []
    renderings: list[int] = []
    _counting(monkeypatch, web_catalog, "list_store", listings)
    _counting(monkeypatch, web_app, "render_index", renderings)
    with running_viewer(root) as base:
        bodies = _at_once(base + "/", 12)
        assert len(bodies) == 12 and len(set(bodies)) == 1 and "hello number 2" in bodies[0]
        # Before: one listing and one rendering per request (12 of each; 19 s per index page
        # under the load test's 200 clients).
        assert (len(listings), len(renderings)) == (1, 1)
        assert _get(base + "/") == bodies[0]
        assert (len(listings), len(renderings)) == (1, 1)  # nothing changed: nothing redone
        assert "hello number 1" in _get(base + "/?page=1&project=-work-proj")
        assert (len(listings), len(renderings)) == (1, 2)  # another page: the same listing


def test_the_index_shows_what_changed_after_it_was_rendered(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    first, *_ = _sessions(root, 2)
    with running_viewer(root) as base:
        assert "2 sessions" in _get(base + "/")
        assert "<strong>0</strong> of 2 sessions match" in _get(base + "/?q=zebra")
        with first.open("ab") as handle:  # a session grows: its row and the search see it
            handle.write(jsonl([msg("u2", "u1", user("a zebra crossing"))]))
        found = _get(base + "/?q=zebra")
        assert "<strong>1</strong> of 2 sessions match" in found and "crossing" in found
        write_session(  # a new session: listed on the next request
            root / "-work-other" / "2025-06-02T10-00-00-000Z_new.jsonl",
            [msg("n1", None, user("brand new session"))],
            header={**HEADER, "id": "new", "cwd": "/work/other"},
        )
        index = _get(base + "/")
        assert "3 sessions" in index and "brand new session" in index
        first.unlink()  # a session removed: gone from the index and from the search
        assert "2 sessions" in _get(base + "/")
        assert "<strong>0</strong> of 2 sessions match" in _get(base + "/?q=zebra")


def test_a_search_makes_the_hits_of_the_shown_page_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sessions"
    _sessions(root, PAGE_SIZE + 10)
    read: list[str] = []
    original = index_search.search_store  # type: ignore[attr-defined]

    def counting(paths: Any, *args: Any, **kwargs: Any) -> Any:
        read.extend(str(path) for path in paths)
        return original(paths, *args, **kwargs)

    monkeypatch.setattr(index_search, "search_store", counting)  # counts, changes nothing
    with running_viewer(root) as base:
        first = _get(base + "/?q=hello")
        assert f"<strong>{PAGE_SIZE + 10}</strong> of {PAGE_SIZE + 10} sessions match" in first
        assert first.count('<div class="snippet">') == PAGE_SIZE  # every shown row has its hit
        # Before: the hits (and so the tree) of every matching session, 60 here, for 50 rows.
        assert len(read) == PAGE_SIZE
        second = _get(base + "/?q=hello&page=2")
        assert second.count('<div class="snippet">') == 10
        assert len(read) == PAGE_SIZE + 10 and len(set(read)) == PAGE_SIZE + 10


def test_a_kept_search_page_is_answered_while_the_heavy_threads_are_busy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sessions"
    _sessions(root, 3)
    release = threading.Event()
    entered: list[str] = []
    original = index_search.matching_paths  # type: ignore[attr-defined]

    def held(paths: Any, pattern: Any, query: str, **kwargs: Any) -> Any:
        if query != "hello":
            entered.append(query)
            release.wait(30)  # a long search: it holds one of the viewer's heavy-work threads
        return original(paths, pattern, query, **kwargs)

    monkeypatch.setattr(index_search, "matching_paths", held)
    with running_viewer(root) as base:
        kept = _get(base + "/?q=hello")
        slow = [threading.Thread(target=_get, args=(f"{base}/?q={word}",)) for word in ("one", "two")]
        for thread in slow:
            thread.start()
        deadline = time.monotonic() + 20
        while len(entered) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert sorted(entered) == ["one", "two"]  # both heavy-work threads are taken
        try:
            # Before: every search waited for a heavy-work thread, even one rendered already.
            with urllib.request.urlopen(base + "/?q=hello", timeout=5) as answer:
                assert answer.read().decode("utf-8") == kept
        finally:
            release.set()
            for thread in slow:
                thread.join(30)


def test_freshest_shares_a_run_among_callers_and_never_answers_from_an_older_run() -> None:
    runs: list[int] = []
    started, release = threading.Event(), threading.Event()

    def compute() -> int:
        runs.append(len(runs) + 1)
        started.set()
        release.wait(10)  # run 1 lasts until the others have asked
        return len(runs)

    fresh: web_catalog.Freshest[int] = web_catalog.Freshest(compute)
    answers: dict[str, int] = {}

    def ask(name: str) -> None:
        answers[name] = fresh.get()

    first = threading.Thread(target=ask, args=("first",))
    first.start()
    assert started.wait(5)
    later = [threading.Thread(target=ask, args=(f"later{n}",)) for n in range(8)]
    for thread in later:  # they ask while run 1 is under way: run 1 began before they asked
        thread.start()
    time.sleep(1.0)
    release.set()
    for thread in [first, *later]:
        thread.join(10)
    assert answers.pop("first") == 1
    assert set(answers.values()) == {2} and len(answers) == 8  # one more run, shared by all eight
    assert runs == [1, 2]
