"""The windowed view (issue 13 #2; every session's, issue 23 #2) on the samples and generated sessions."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import uvicorn
from bench.generate import Shape, generate

from omp_session.rendering.images import linked_images
from omp_session.rendering.windowed_open import open_windowed
from omp_session.rendering.windowed_tree import ROWS
from omp_session.web import create_app

from .support import FLAKY, FORK, PAGINATION, SAMPLES, free_port


@contextmanager
def _serving(root: Path = SAMPLES / "sessions") -> Iterator[str]:
    port = free_port()
    app = create_app(root)
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
        rows = view.tree.get().rows
        assert len(rows) == len(view.entries)
        for row in rows:
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
    assert [row[0] for row in rows] == [row.key for row in view.tree.get().rows[:3]]
    assert all(row[3] for row in rows)


def test_a_small_session_s_page_carries_every_tree_row() -> None:
    view = open_windowed(SAMPLES / "sessions" / PAGINATION, linked_images(None, str))
    data, _html = view.page_data()
    assert view.tree.ready and not data["rowsPending"] and not data["window"].get("pending")
    assert [row[0] for row in data["rows"]] == [row.key for row in view.tree.get().rows]
    assert data["window"]["usage"] == view.window(None)["usage"] != ""


def test_the_first_screen_does_not_wait_for_the_tree(tmp_path: Path) -> None:
    path = tmp_path / "-w" / "big.jsonl"
    generate(path, Shape(400_000, compaction_every=0))  # more entries than the page's rows
    view = open_windowed(path, linked_images(None, str))
    assert len(view.entries) > ROWS
    data, html = view.page_data()
    assert not view.tree.ready  # the rows are built after the page has been sent
    assert data["rowsPending"] and data["rows"] == [] and data["window"]["pending"]
    assert data["rowCount"] == len(view.entries) and html.count('<article class="entry') == len(
        data["window"]["keys"]
    )
    near = view.rows_near(None, data["window"]["keys"])
    assert view.tree.ready
    rows = view.tree.get().rows
    assert [rows[index].key for index in near["keyRows"]] == data["window"]["keys"]  # the tree follows
    full = view.window(None)
    assert (near["row"], near["pathRows"], near["usage"], near["count"]) == (
        full["row"],
        full["pathRows"],
        full["usage"],
        full["rows"],
    )
    assert near["rows"][near["row"] - near["start"]][0] == view.leaf
    data, _ = view.page_data()  # once built, the page carries the rows itself
    assert not data["rowsPending"] and data["rows"] and data["window"]["row"] == full["row"]


def test_the_entries_a_compaction_replaced_come_in_windows() -> None:
    view = open_windowed(SAMPLES / "sessions" / FLAKY, linked_images(None, str))
    leaf = view.window(None)
    assert leaf["dropped"] > 0 and not leaf["cleared"]
    arranged = view.arrange(view.path_to(view.leaf or ""))
    first = view.window(None, dropped=True, start=0, count=2)
    rest = view.window(None, dropped=True, start=first["end"], count=100)
    assert first["keys"] + rest["keys"] == [view.keys[p] for p in arranged.dropped]
    assert first["total"] == leaf["dropped"] and first["summary"] == ""
    assert first["html"].count('<article class="entry dropped') == len(first["keys"])


def test_tree_filter_and_folds() -> None:
    view = open_windowed(SAMPLES / "sessions" / FORK, linked_images(None, str))
    tree = view.tree.get()
    labelled = next(row for row in tree.rows if row.label)
    found = tree.matching(labelled.label.upper() if labelled.label else "")
    assert any(hit[1][0] == labelled.key for hit in found["rows"]) and found["total"] == len(found["rows"])
    word = tree.text(len(tree.rows) - 1).split()[-1]
    hits = tree.matching(word)["rows"]
    needle = word.lower()
    assert hits and all(needle in hit[1][3].lower() or needle in (hit[1][4] or "").lower() for hit in hits)
    assert tree.matching("no such text anywhere §§")["total"] == 0
    # A fold hides exactly the row's subtree: the rows up to its end, all below it in the tree.
    view = open_windowed(SAMPLES / "sessions" / PAGINATION, linked_images(None, str))
    tree = view.tree.get()
    assert tree.foldable
    for index in tree.foldable:
        below = {row.key for row in tree.rows[index + 1 : tree.ends[index]]}
        assert below
        for key in below:
            path = {view.keys[p] for p in view.path_to(key)}
            assert tree.rows[index].key in path
        after = tree.rows[tree.ends[index] :]
        assert all(tree.rows[index].key not in {view.keys[p] for p in view.path_to(r.key)} for r in after)


def test_a_small_session_is_one_window_of_the_one_page() -> None:
    ref = quote(PAGINATION)
    with _serving() as url:
        page = _get(f"{url}/session/{ref}")
        assert 'id="window-data"' in page
        assert page.count("<script src=") == 1 and '<script src="/static/viewer.js">' in page  # one script
        reply = json.loads(_get(f"{url}/api/window/{ref}"))
        assert reply["total"] > 0 and reply["html"].count('<article class="entry') == len(reply["keys"])
        assert reply["start"] == 0 and reply["end"] == reply["total"]  # the whole context: one window
        assert len(json.loads(_get(f"{url}/api/rows/{ref}?start=0&count=5"))) == 5


def test_a_big_file_without_a_readable_entry_opens_as_an_empty_window(tmp_path: Path) -> None:
    # Found by fuzzing the viewer: a windowed page of a file with no entry answered HTTP 500.
    project = tmp_path / "-p"
    project.mkdir()
    header = b'{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}'
    (project / "s.jsonl").write_bytes(header + b"\nnot json\n{torn")
    with _serving(tmp_path) as url:
        page = _get(url + "/session/-p/s.jsonl")
        assert '"rowCount":0' in page.replace(" ", "")
        window = json.loads(_get(url + "/api/window/-p/s.jsonl"))
        assert window["keys"] == [] and window["rows"] == 0 and window["at"] is None
        rows = json.loads(_get(url + "/api/rows/-p/s.jsonl?near="))
        assert rows["rows"] == [] and rows["count"] == 0


def test_lone_surrogates_in_windows_and_rows_arrive_as_replacement_characters(tmp_path: Path) -> None:
    # Found by fuzzing the viewer: an id or a text holding "\ud83d" (what omp writes for a cut
    # emoji) made the window and rows APIs answer HTTP 500, while the page showed U+FFFD.
    project = tmp_path / "-p"
    project.mkdir()
    lines = [
        b'{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}',
        b'{"type":"message","id":"a\\ud83d","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",'
        b'"message":{"role":"user","content":"cut \\ud83d emoji","timestamp":1}}',
    ]
    (project / "s.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    with _serving(tmp_path) as url:
        window = json.loads(_get(url + "/api/window/-p/s.jsonl"))
        assert window["keys"] == ["a\ufffd"] and "cut \ufffd emoji" in window["html"]
        rows = json.loads(_get(url + "/api/rows/-p/s.jsonl?near="))
        assert rows["count"] == 1 and "a\ufffd" in json.dumps(rows, ensure_ascii=False)


def test_the_window_drops_what_the_context_drops_at_a_remote_compaction(tmp_path: Path) -> None:
    """A remote compaction replaces everything before it only when the model's rule says its
    history is usable (every item an object); the window follows that one rule, so a history
    holding a non-object keeps the kept entry in the window as it stays in the context."""
    from omp_session import SessionManager

    from .support import write_session

    def session(items: list[object]) -> Path:
        stamp = "2026-01-01T00:00:0{}.000Z"
        return write_session(
            tmp_path / f"remote-{len(items)}.jsonl",
            [
                {"type": "session", "version": 3, "id": "s", "timestamp": stamp.format(0), "cwd": "/w"},
                {
                    "type": "message",
                    "id": "u1",
                    "parentId": None,
                    "timestamp": stamp.format(1),
                    "message": {"role": "user", "content": "kept?", "timestamp": 1},
                },
                {
                    "type": "compaction",
                    "id": "c1",
                    "parentId": "u1",
                    "timestamp": stamp.format(2),
                    "summary": "earlier",
                    "firstKeptEntryId": "u1",
                    "tokensBefore": 10,
                    "preserveData": {
                        "openaiRemoteCompaction": {"provider": "openai", "replacementHistory": items}
                    },
                },
            ],
        )

    cases: list[tuple[list[object], bool]] = [
        ([{"type": "message"}], True),
        ([{"type": "message"}, "odd"], False),
    ]
    for items, replaced in cases:
        path = session(items)
        with SessionManager.open(path) as manager:
            texts = [m.get("content") for m in manager.build_session_context().messages]
        assert ("kept?" in texts) is not replaced
        window = open_windowed(path, linked_images(None, str))
        arranged = window.arrange(window.path_to("c1"))
        kept = [window.entries[p]["id"] for p in arranged.rest]
        assert ("u1" in kept) is not replaced, (items, arranged)
