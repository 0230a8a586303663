"""The lazily rendered HTML export (issue 13 #2; every session's, issue 23 #2) on the samples: the
page script's answers (export_api.js, in Chromium from file://) equal the server's for every node."""

from __future__ import annotations

import base64
import gzip
import json
import re
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from omp_session.errors import EntryNotFoundError
from omp_session.export.html import export_html
from omp_session.format.codec import DISPLAY_ERRORS
from omp_session.rendering.images import inline_images
from omp_session.rendering.windowed_export import HTML_CHUNK, compressed_block
from omp_session.rendering.windowed_open import open_windowed

from .support import FLAKY, FORK, INFRA, PAGINATION, SAMPLES

_BLOCK = re.compile(
    r'<script type="application/(json|octet-stream)"(?: data-encoding="gzip-base64")? '
    r'id="([a-z-]+?)(?:-(\d+))?">(.*?)</script>',
    re.S,
)


def _blocks(html: str) -> dict[str, list[Any]]:
    """Every data block of the page by name, decoded: plain JSON, or gzipped JSON in base64."""
    found: dict[str, list[Any]] = {}
    for kind, name, _index, text in _BLOCK.findall(html):
        data = gzip.decompress(base64.b64decode(text)) if kind == "octet-stream" else text.encode()
        found.setdefault(name, []).append(json.loads(data))
    return found


def test_the_export_carries_every_entry_and_row_once() -> None:
    path = SAMPLES / "sessions" / PAGINATION
    html = export_html(path)
    blocks = _blocks(html)
    view = open_windowed(path, inline_images(SAMPLES / "blobs"))
    entries = [item for chunk in blocks["export-html"] for item in chunk]
    rows = [item for chunk in blocks["export-rows"] for item in chunk]
    assert len(entries) == len(view.entries) and all(
        len(chunk) <= HTML_CHUNK for chunk in blocks["export-html"]
    )
    assert [row[0] for row in rows] == [row.key for row in view.tree.get().rows]
    meta = blocks["export-meta"][0]
    assert meta["keys"] == view.keys and meta["rowCount"] == len(rows)
    # Only the first window is HTML in the page; everything else is data the script renders later.
    page_part = html[: html.index("<script type=")]
    assert page_part.count("<article") == len(blocks["window-data"][0]["window"]["keys"])
    assert "</script" not in "".join(json.dumps(chunk) for chunk in blocks["export-html"]).replace(
        "\\u003c", "<"
    )


def test_an_unknown_leaf_is_an_error() -> None:
    with pytest.raises(EntryNotFoundError):
        export_html(SAMPLES / "sessions" / PAGINATION, "no-such-entry")


@pytest.mark.parametrize("ref", [PAGINATION, FLAKY, FORK, INFRA])
def test_the_page_answers_as_the_server_does(browser: Any, tmp_path: Path, ref: str) -> None:
    path = SAMPLES / "sessions" / ref
    exported = tmp_path / "export.html"
    exported.write_text(export_html(path), encoding="utf-8")
    view = open_windowed(path, inline_images(SAMPLES / "blobs"))
    context = browser.new_context()
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(exported.as_uri())
        page.wait_for_selector("html.ready #transcript .entry")
        fields = (
            "at",
            "total",
            "start",
            "end",
            "dropped",
            "keys",
            "sent",
            "pathLength",
            "usage",
            "pathRows",
            "row",
            "keyRows",
        )
        for key in view.keys:
            for query, start in ((f"at={key}", None), (f"at={key}&start=0", 0)):
                mine = page.evaluate("(q) => window.ompLocalApi('window?' + q)", query)
                theirs = view.window(key, start=start)
                assert {f: mine[f] for f in fields} == {f: theirs[f] for f in fields}, (key, query)
                assert mine["html"] == theirs["html"] and mine["summary"] == theirs["summary"]
            dropped = page.evaluate("(k) => window.ompLocalApi('window?dropped=1&start=0&at=' + k)", key)
            assert dropped["keys"] == view.window(key, dropped=True, start=0)["keys"]
        near = page.evaluate("window.ompLocalApi('rows?near=')")
        assert near["rows"] == view.rows_near(None)["rows"]
        tree = view.tree.get()
        label = next((row.label for row in tree.rows if row.label), "user")
        assert page.evaluate("(q) => window.ompLocalApi('rows?q=' + q)", label) == json.loads(
            json.dumps(tree.matching(label))
        )
        assert errors == []
    finally:
        context.close()


def test_a_big_export_is_compressed_and_loads_its_windows_offline(browser: Any, tmp_path: Path) -> None:
    """A generated session of several blocks: every block gzipped in base64 (issue 30 item 3), and
    the page, from file:// with nothing fetched, shows an entry of the last block when its link is
    opened, and finds a word of it with the search box."""
    from bench.generate import Shape, generate

    source = tmp_path / "big.jsonl"
    stats = generate(source, Shape(0, target_messages=3 * HTML_CHUNK, compaction_every=0, image_every=0))
    html = export_html(source)
    assert html.count('data-encoding="gzip-base64" id="export-html-') == -(-stats.entries // HTML_CHUNK) >= 3
    blocks = _blocks(html)
    entries = [item for chunk in blocks["export-html"] for item in chunk]
    assert len(entries) == stats.entries
    assert len(html.encode()) < 0.5 * sum(len(entry.encode()) for entry in entries)  # compressed
    meta = blocks["export-meta"][0]
    last = meta["keys"][-(HTML_CHUNK // 2)]  # in the last block, far from the first window
    exported = tmp_path / "export.html"
    exported.write_text(html, encoding="utf-8")
    context = browser.new_context()
    page = context.new_page()
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(f"{exported.as_uri()}#{last}")
        page.wait_for_selector(f'#transcript .entry[data-key="{last}"]')
        stored = entries[-(HTML_CHUNK // 2)]
        shown = page.locator(f'#transcript .entry[data-key="{last}"]').inner_text()
        words = unescape(re.sub(r"<[^>]+>|\s+", " ", stored.split("</header>", 1)[1])).split()[:6]
        assert words and " ".join(words) in " ".join(shown.split())  # the block's own entry, inflated
        window = page.evaluate("(k) => window.ompLocalApi('window?at=' + k)", last)
        assert window["html"] and last in window["keys"]
        word = re.sub(r"<[^>]+>", " ", entries[-1]).split()[-3]
        page.fill("#site-search", word)
        page.press("#site-search", "Enter")
        page.wait_for_selector("#export-hits li")
        assert page.locator("#export-hits li").count() >= 1
        assert {url.split(":", 1)[0] for url in requests} == {"file"}  # nothing fetched
        assert errors == []
    finally:
        context.close()


def test_forked_workers_render_the_same_file(tmp_path: Path) -> None:
    """The export of a big session rendered by two forked processes is the one a single process
    writes, byte for byte (but for the minute it names as its export time)."""
    from bench.generate import Shape, generate

    source = tmp_path / "big.jsonl"
    stats = generate(source, Shape(0, target_messages=5 * HTML_CHUNK, compaction_every=700, branch_every=300))
    assert stats.entries > 4 * HTML_CHUNK  # enough blocks for the two workers to share
    seen: list[tuple[int, int]] = []
    alone = export_html(source)
    forked = export_html(source, workers=2, progress=lambda done, total: seen.append((done, total)))
    stamp = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC")
    assert stamp.sub("", forked) == stamp.sub("", alone)
    assert seen and seen[-1] == (stats.entries, stats.entries) and seen == sorted(seen)


@pytest.mark.parametrize(
    "value",
    [
        ['<article>café 数 "q" \\ \n\t\x00\x1f\x7f\u2028</article>', ""],
        [["key", 3, None, True, "→"], {"a": [1, 2]}],
        ["lone \ud800 surrogate"],  # orjson refuses it: the json path writes it as U+FFFD
        [{1: "a key that is not a string"}],
    ],
)
def test_a_block_is_the_json_the_standard_encoder_writes(value: Any) -> None:
    # The blocks are written with orjson; what the page inflates must be json.dumps's bytes.
    expected = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", DISPLAY_ERRORS)
    assert gzip.decompress(base64.b64decode(str(compressed_block(value)))) == expected
