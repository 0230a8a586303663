"""Rendering pieces on their own: Markdown sanitising, image sniffing, embedded JSON, the tree panel,
URL refs, and the page a session turns into."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from omp_session.rendering.images import inline_images, linked_images, sniff_raster_mime
from omp_session.rendering.markdown import highlight_code, render_markdown
from omp_session.rendering.page import script_json
from omp_session.web.catalog import resolve_ref

from .support import BLOG, INFRA, SAMPLES, PNG_1x1, entry_views, opened, tree_panel, write_session
from .xss import SVG


@pytest.mark.parametrize(
    ("source", "forbidden"),
    [
        ("<script>alert(1)</script>", "<script"),
        ('<img src=x onerror="alert(1)">', "<img"),
        ("[x](javascript:alert(1))", 'href="javascript'),
        ("[x](JaVaScRiPt:alert(1))", "href="),
        ("[x](data:text/html;base64,PHNjcmlwdD4=)", "href="),
        ("<a href='javascript:alert(1)'>x</a>", "<a "),
        ("![x](javascript:alert(1))", "href="),
        ("<svg onload=alert(1)>", "<svg"),
        ("```\n</code></pre><script>alert(1)</script>\n```", "<script"),
        ("<!-- <script>alert(1)</script> -->", "<script"),
        ("[x](vbscript:msgbox(1))", "href="),
    ],
)
def test_markdown_never_lets_markup_through(source: str, forbidden: str) -> None:
    html = str(render_markdown(source))
    assert forbidden.lower() not in html.lower()


def test_markdown_renders_what_it_should() -> None:
    html = str(
        render_markdown(
            "**bold** `code`\n\n| a |\n|---|\n| 1 |\n\n[link](https://example.org)\n\n```python\nx = 1\n```"
        )
    )
    assert "<strong>bold</strong>" in html and "<code>code</code>" in html and "<table>" in html
    assert '<a href="https://example.org" rel="noopener noreferrer nofollow">link</a>' in html
    assert '<span class="hl-n">x</span>' in html
    assert str(render_markdown("![chart](https://example.org/c.png)")).count("<img") == 0  # no remote images
    assert str(highlight_code("<b>", None)) == "&lt;b&gt;"


def test_only_raster_images_are_shown() -> None:
    assert sniff_raster_mime(PNG_1x1) == "image/png"
    assert sniff_raster_mime(b"\xff\xd8\xff\xe0") == "image/jpeg"
    assert sniff_raster_mime(b"GIF89a....") == "image/gif"
    assert sniff_raster_mime(b"RIFF\0\0\0\0WEBPVP8 ") == "image/webp"
    assert sniff_raster_mime(SVG) is None
    images = linked_images(None, lambda digest: f"/blob/{digest}")
    png64 = base64.b64encode(PNG_1x1).decode()
    assert images({"data": png64, "mimeType": "image/svg+xml"}) == (f"data:image/png;base64,{png64}", "")
    svg64 = base64.b64encode(SVG).decode()
    assert images({"data": svg64, "mimeType": "image/png"})[0] is None
    assert images({"data": '"><script>', "mimeType": "image/png"})[0] is None
    assert images({"data": "blob:sha256:" + "a" * 64})[0] is None  # no blob store: not shown


def test_blob_images_link_or_inline(tmp_path: Path) -> None:
    import hashlib

    digest = hashlib.sha256(PNG_1x1).hexdigest()
    (tmp_path / digest).write_bytes(PNG_1x1)
    block = {"type": "image", "data": f"blob:sha256:{digest}", "mimeType": "image/png"}
    assert linked_images(tmp_path, lambda d: f"/blob/{d}")(block) == (f"/blob/{digest}", "")
    src, _ = inline_images(tmp_path)(block)
    assert src == "data:image/png;base64," + base64.b64encode(PNG_1x1).decode()


def test_embedded_json_cannot_close_its_script_element() -> None:
    text = str(script_json({"id": "</script><script>alert(1)</script>", "sep": "\u2028"}))
    assert "<" not in text and ">" not in text and "\u2028" not in text
    import json

    assert json.loads(text) == {"id": "</script><script>alert(1)</script>", "sep": "\u2028"}


@pytest.mark.parametrize(
    ("ref", "ok"),
    [
        ("proj/a.jsonl", True),
        ("a.jsonl", True),
        ("proj/sub/a.jsonl", True),
        ("proj/a.txt", False),
        ("../a.jsonl", False),
        ("proj/../proj/a.jsonl", False),
        ("/proj/a.jsonl", False),
        ("proj//a.jsonl", False),
        ("proj\\a.jsonl", False),
        ("a/b/c/d.jsonl", False),
        ("proj/missing.jsonl", False),
    ],
)
def test_resolve_ref(tmp_path: Path, ref: str, ok: bool) -> None:
    for name in ("proj/a.jsonl", "a.jsonl", "proj/sub/a.jsonl", "proj/a.txt", "a/b/c/d.jsonl"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}\n")
    assert (resolve_ref(tmp_path, ref) is not None) == ok


def test_tree_rows_draw_branches_like_omp() -> None:
    panel = tree_panel(SAMPLES / "sessions" / INFRA)
    rows = [row for row, _line in panel]
    drawn = [line + (" [leaf]" if row.is_leaf else "") for row, line in panel]
    # The texts are the display model's (tools.summary.entry_summary), as `omp-session tree` says.
    assert drawn[0] == "model anthropic/claude-sonnet-4-5"
    assert drawn[1].startswith("user: The build box is out of disk again.")
    # omp 18's tree-selector: indented only at the fork, the current branch first, then the others
    # in file order, the last behind └─.
    assert drawn[2] == "├─ bash: $ docker system df (exit 0)"
    assert drawn[3] == "│  user: Yes, it's docker. What's safe to prune?"
    assert drawn[4].startswith("│  assistant: Safe: images not used") and drawn[4].endswith("[leaf]")
    assert drawn[5].startswith("├─ assistant: → bash")
    assert drawn[6].startswith("│  tool result: bash ok: Filesystem")
    assert drawn[-3].startswith("└─ assistant: → bash")
    assert drawn[-2].startswith("   tool result: bash error: bash: ncdu: command not found")
    assert all(not line.startswith(" ") or line.startswith("   ") for line in drawn)
    labelled = [row for row in rows if row.label]
    assert [row.label for row in labelled] == ["root cause"]
    assert not labelled[0].on_branch  # on an abandoned branch
    assert sum(row.is_leaf for row in rows) == 1


def test_session_view_of_odd_files(tmp_path: Path) -> None:
    """Duplicate ids, parent cycles, unknown types and a corrupt line still give a usable view."""
    ts = "2025-01-01T00:00:00.000Z"
    path = write_session(
        tmp_path / "odd.jsonl",
        [
            {"type": "session", "version": 3, "id": "s", "cwd": "/x", "timestamp": ts},
            {
                "type": "message",
                "id": "a",
                "parentId": "b",
                "timestamp": ts,
                "message": {"role": "user", "content": "one", "timestamp": 1},
            },
            {
                "type": "message",
                "id": "b",
                "parentId": "a",
                "timestamp": ts,
                "message": {"role": "user", "content": "two", "timestamp": 1},
            },
            {
                "type": "message",
                "id": "b",
                "parentId": "a",
                "timestamp": ts,
                "message": {"role": "martian", "timestamp": 1},
            },
            {"type": "future_thing", "id": "c", "parentId": "b", "timestamp": ts, "payload": [1, 2]},
        ],
    )
    with open(path, "ab") as handle:
        handle.write(b'{"type": "message", "id": "torn\n')
    session = opened(path)
    assert session.keys == ["a", "~1", "b", "c"]
    assert session.issues and "line 6" in session.issues[0]
    assert session.leaf == "c"
    assert {entry.kind for entry in entry_views(path)} >= {"user", "unknown"}
    window = session.window(None)
    assert window["at"] == "c" and window["html"].count('<article class="entry') == len(window["keys"])


def test_the_blog_sample_renders_every_kind_of_block() -> None:
    images = linked_images(SAMPLES / "blobs", lambda d: f"/blob/{d}")
    views = entry_views(SAMPLES / "sessions" / BLOG, images)
    kinds = {block.kind for entry in views for block in entry.blocks}
    assert {"markdown", "thinking", "toolcall", "image", "output", "code"} <= kinds
    usage = [entry.usage_text for entry in views if entry.usage_text]
    assert usage[0] == "in 1.6k · out 310 · cache 0/4.2k · $0.0254"
    assert opened(SAMPLES / "sessions" / BLOG, images).facts()["total_usage"].endswith("$0.0354")


@pytest.mark.parametrize(
    "query",
    ["pagination", "MANUALSCHEDULER", "p99 falls", "ncdu: command", "—", '"items"', "{'path'", "zzz-none"],
)
def test_index_search_finds_what_the_cli_search_finds(query: str) -> None:
    from omp_session.tools.search import search_paths
    from omp_session.web.catalog import SessionCatalog
    from omp_session.web.index_search import CatalogSearch

    summaries = SessionCatalog(SAMPLES / "sessions").sessions()
    found = CatalogSearch()(summaries, query)
    expected = search_paths([s.path for s in summaries], query)
    assert {str(item.summary.path) for item in found} == {hit.path for hit in expected}
    assert sum(len(item.hits) for item in found) == len(expected)


def test_several_roots_hang_under_an_invisible_root_as_in_omp(tmp_path: Path) -> None:
    ts = "2025-01-01T00:00:00.000Z"

    def message(entry_id: str, parent: str | None, text: str) -> dict[str, object]:
        return {
            "type": "message",
            "id": entry_id,
            "parentId": parent,
            "timestamp": ts,
            "message": {"role": "user", "content": text, "timestamp": 0},
        }

    path = write_session(
        tmp_path / "roots.jsonl",
        [
            {"type": "session", "version": 3, "id": "s", "cwd": "/x", "timestamp": ts},
            message("a1", None, "first root"),
            message("a2", "a1", "below the first"),
            message("b1", "gone", "an orphan: a second root"),
            message("b2", "b1", "below the orphan"),
            message("b3", "b2", "the leaf"),
        ],
    )
    drawn = [line for _row, line in tree_panel(path)]
    # The root holding the leaf first; each root in the first column, what follows one column right.
    assert drawn == [
        "user: an orphan: a second root",
        "   user: below the orphan",
        "   user: the leaf",
        "user: first root",
        "   user: below the first",
    ]
