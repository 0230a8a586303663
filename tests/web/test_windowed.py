"""The windowed view of big sessions (issue 13 #2) on the samples, forced with a size limit of 0."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote

import uvicorn

from omp_session.rendering.images import linked_images
from omp_session.web import create_app
from omp_session.web.windowed_open import open_windowed

from .support import FORK, PAGINATION, SAMPLES, free_port


@contextmanager
def _serving(windowed_bytes: int) -> Iterator[str]:
    port = free_port()
    app = create_app(SAMPLES / "sessions", windowed_bytes=windowed_bytes)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return str(response.read().decode("utf-8"))


def test_every_node_shows_its_own_context() -> None:
    for ref in (PAGINATION, FORK):
        view = open_windowed(SAMPLES / "sessions" / ref, linked_images(None, str))
        assert len(view.rows) == len(view.entries)
        for row in view.rows:
            window = view.window(row.key, count=5)
            shown = window["keys"] + ([row.key] if f'data-key="{row.key}"' in window["summary"] else [])
            assert row.key in shown, row
            assert window["at"] == row.key and window["end"] - window["start"] == len(window["keys"])


def test_windows_before_after_and_new() -> None:
    view = open_windowed(SAMPLES / "sessions" / PAGINATION, linked_images(None, str))
    last = view.window(None, count=3)
    assert last["at"] == view.leaf and last["end"] == last["total"] and last["start"] == last["total"] - 3
    before = view.window(None, end=last["start"], count=3)
    assert (
        before["end"] == last["start"] and before["keys"] + last["keys"] == view.window(None, count=6)["keys"]
    )
    after = view.window(None, after=last["keys"][0])
    assert after["keys"] == last["keys"][1:]
    rows = view.rows_slice(0, 3)
    assert [row[0] for row in rows] == [row.key for row in view.rows[:3]] and all(row[3] for row in rows)


def test_the_server_switches_to_windows_above_the_limit() -> None:
    ref = quote(PAGINATION)
    with _serving(0) as url:
        page = _get(f"{url}/session/{ref}")
        assert 'id="window-data"' in page and "windowed.js" in page
        reply = json.loads(_get(f"{url}/api/window/{ref}"))
        assert reply["total"] > 0 and reply["html"].count('<article class="entry') == len(reply["keys"])
        assert len(json.loads(_get(f"{url}/api/rows/{ref}?start=0&count=5"))) == 5
    with _serving(4 * 1024 * 1024) as url:
        page = _get(f"{url}/session/{ref}")
        assert 'id="session-data"' in page and "windowed.js" not in page
