"""The viewer in a real browser (Debian's Chromium through Playwright): index, search, tree clicks,
tool calls, deep links, images, compaction, live updates, the exported file and XSS payloads.

Each test saves a screenshot under test-artifacts/ for a human to look at.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from omp_session import SessionManager
from omp_session.export.html import export_html
from omp_session.store.loading import load_session

from .conftest import Viewer
from .support import BLOG, FLAKY, PAGINATION, screenshot

IMAGES_LOADED = (
    "[...document.querySelectorAll('#transcript figure.image img')]"
    ".every(i => i.complete && i.naturalWidth > 0)"
)
IMAGE_WIDTH = (
    "(async () => { const i = document.querySelector('#transcript figure.image img');"
    " await i.decode(); return i.naturalWidth; })()"
)
DANGEROUS_ATTRIBUTES = """() => [...document.querySelectorAll('*')].flatMap(el => [...el.attributes]
    .filter(a => a.name.startsWith('on') || /^\\s*javascript:/i.test(a.value))
    .map(a => el.tagName + ' ' + a.name))"""


def open_session(page: Any, viewer: Viewer, ref: str, fragment: str = "") -> None:
    page.goto(f"{viewer.url}/session/{quote(ref)}{fragment}")
    page.wait_for_selector("html.ready")


def entry_id(path: Path, needle: str, role: str | None = None) -> str:
    """The id of the first entry whose JSON contains ``needle`` (and has message role ``role``)."""
    import json

    for entry in load_session(path).entries:
        message = entry.get("message") or {}
        if needle in json.dumps(entry) and (role is None or message.get("role") == role):
            return str(entry["id"])
    raise AssertionError(f"no entry with {needle!r}")


def transcript(page: Any) -> str:
    # textContent, not innerText: entries off screen use content-visibility: auto, and innerText
    # leaves out content the browser has not laid out yet.
    return str(page.locator("#transcript").text_content())


def test_index_groups_projects_newest_first(page: Any, viewer: Viewer) -> None:
    page.goto(viewer.url + "/")
    groups = page.locator("section.project")
    names = groups.locator("h2").all_inner_texts()
    assert {"/home/ada/projects/shop-api", "/home/ada/projects/blog", "/tmp/scratch", "/srv/infra"} <= set(
        names
    )
    newest = [group.locator("td.d:nth-child(3)").all_inner_texts() for group in groups.all()]
    for dates in newest:
        assert dates == sorted(dates, reverse=True)  # newest first inside a project
    firsts = [dates[0] for dates in newest]
    assert firsts == sorted(firsts, reverse=True)  # projects ordered by their newest session
    shop = groups.filter(has_text="/home/ada/projects/shop-api")
    assert shop.locator("tbody tr").count() == 3
    assert "Flaky payment webhook test" in shop.inner_text()
    assert shop.locator(".badge", has_text="fork").count() == 1
    row = shop.locator("tr", has_text="Flaky payment webhook test")
    assert row.locator("td.n").all_inner_texts() == ["13", "7.7 KB", "$0.0964"]
    screenshot(page, "index")


def test_search_finds_a_session_and_links_to_the_entry(page: Any, viewer: Viewer) -> None:
    page.goto(viewer.url + "/")
    page.fill("input[name=q]", "ManualScheduler")
    page.press("input[name=q]", "Enter")
    page.wait_for_url("**/?q=ManualScheduler")
    rows = page.locator("table.sessions tbody tr")
    assert rows.count() == 1
    assert "Flaky payment webhook test" in rows.inner_text()
    assert page.locator(".snippet mark").inner_text() == "ManualScheduler"
    screenshot(page, "search")
    page.locator(".snippet a").click()
    page.wait_for_selector(".entry.target")
    target = page.locator("#transcript .entry.target")
    assert "ManualScheduler.run_due()" in (target.text_content() or "")
    assert target.is_visible()


def test_clicking_a_node_on_another_branch_shows_its_context(page: Any, viewer: Viewer) -> None:
    open_session(page, viewer, PAGINATION)
    assert "Keyset pagination it is" in transcript(page)
    assert "Pagination is in." not in transcript(page)
    assert page.locator(".tree .row.leaf").count() == 1
    abandoned = page.locator(".tree .row", has_text="assistant: Pagination is in.")
    assert "off" in (abandoned.get_attribute("class") or "")
    assert abandoned.locator(".tag").inner_text() == "offset pagination"
    screenshot(page, "session", full_page=True)

    abandoned.locator("a").click()
    page.wait_for_function("document.querySelector('#bar-where').textContent.startsWith('Context at')")
    text = transcript(page)
    assert "Pagination is in." in text
    assert "Keyset pagination" not in text and "Branch summary" not in text
    assert "sel" in (abandoned.get_attribute("class") or "")
    assert page.locator("#bar-leaf").is_visible()
    screenshot(page, "session-other-branch", full_page=True)

    page.locator("#bar-leaf").click()
    page.wait_for_function("document.querySelector('#bar-where').textContent.startsWith('Current branch')")
    assert "Keyset pagination it is" in transcript(page)


def test_tool_call_expands(page: Any, viewer: Viewer) -> None:
    open_session(page, viewer, PAGINATION)
    call = page.locator("#transcript details.toolcall").first
    arguments = call.locator("pre.code").last
    assert call.get_attribute("open") is None and not arguments.is_visible()
    call.locator("> summary").click()
    assert call.get_attribute("open") is not None
    assert arguments.is_visible()
    assert '"app/routes/orders.py"' in (arguments.text_content() or "")
    call.scroll_into_view_if_needed()
    screenshot(page, "toolcall-expanded")


def test_deep_link_opens_the_branch_holding_the_entry(page: Any, viewer: Viewer) -> None:
    target = entry_id(viewer.root / PAGINATION, "5 passed in 0.41s", "toolResult")
    open_session(page, viewer, PAGINATION, f"#{target}")
    # (The linked entry's window may arrive after the page is ready: wait for it, as a user does.)
    page.wait_for_selector(f'#transcript .entry.target[data-key="{target}"]')
    entry = page.locator(f'#transcript .entry[data-key="{target}"]')
    assert entry.is_visible()
    assert "target" in (entry.get_attribute("class") or "")
    assert "Pagination is in." in transcript(page)  # the abandoned branch below the entry
    assert page.locator(f'.tree .row[data-key="{target}"]').get_attribute("class").count("inpath") == 1
    screenshot(page, "deep-link")
    # A permalink in the page is a deep link too.
    page.locator("#transcript .entry.k-user .permalink").first.click()
    page.wait_for_selector("#transcript .entry.target.k-user")
    assert page.locator("#transcript .entry.target.k-user").count() == 1


def test_compaction_shows_summary_first_and_hides_replaced_entries(page: Any, viewer: Viewer) -> None:
    open_session(page, viewer, FLAKY)
    first = page.locator("#transcript > .entry").first
    assert "active-compaction" in (first.get_attribute("class") or "")
    assert "48,213 tokens before" in (first.text_content() or "")
    group = page.locator("details.compacted")
    assert "8 earlier entries" in group.locator("> summary").inner_text()
    assert not group.locator(".entry").first.is_visible()
    screenshot(page, "compaction", full_page=True)


def test_images_render_from_the_blob_store_and_inline(page: Any, viewer: Viewer) -> None:
    open_session(page, viewer, BLOG)
    images = page.locator("#transcript figure.image img")
    assert images.count() == 2
    page.wait_for_function(IMAGES_LOADED)
    sources = [images.nth(i).get_attribute("src") or "" for i in range(2)]
    assert sources[0].startswith("/blob/") and sources[1].startswith("data:image/png;base64,")
    assert page.locator("#transcript .entry.k-exec .codeblock .hl-k").count() > 0  # highlighted Python
    screenshot(page, "images", full_page=True)


def test_context_at_every_node_matches_build_session_context(page: Any, viewer: Viewer) -> None:
    from omp_session.model.context import entry_to_message
    from omp_session.model.tree import SessionIndex, build_session_context

    for ref in (
        FLAKY,
        PAGINATION,
        "-conformance/v3-multi-compaction.jsonl",
        "-conformance/v3-compaction-kept-offpath.jsonl",
    ):
        entries = load_session(viewer.root / ref).entries
        index = SessionIndex(entries)
        open_session(page, viewer, ref)
        for entry in entries:
            path = index.branch(entry["id"])
            context = build_session_context(entries, entry["id"])
            expected = []
            for message in context.messages:
                if message["role"] == "compactionSummary":
                    expected.append([e for e in path if e["type"] == "compaction"][-1]["id"])
                    continue
                match = next(
                    e for e in path if entry_to_message(e) is message or entry_to_message(e) == message
                )
                expected.append(match["id"])
            page.evaluate("key => { location.hash = 'at=' + encodeURIComponent(key); }", entry["id"])
            page.wait_for_function(
                "key => document.querySelector('.tree .row.sel')?.dataset.key === key", arg=entry["id"]
            )
            shown = page.eval_on_selector_all("#transcript .entry.ctx", "els => els.map(e => e.dataset.key)")
            assert shown == expected, (ref, entry["id"])


def test_live_session_updates_without_reload(page: Any, viewer: Viewer) -> None:
    from tests.helpers import assistant, user

    with SessionManager.create("/work/live", viewer.root / "-work-live") as session:
        session.append_message(user("first question"))
        session.append_message(assistant("first answer"))
        ref = Path(str(session.get_session_file())).relative_to(viewer.root).as_posix()
        open_session(page, viewer, ref)
        page.evaluate("window.__marker = 42")
        assert "first answer" in transcript(page)
        session.append_message(user("a second question, written while the page is open"))
        page.wait_for_function(
            "document.querySelector('#transcript').textContent.includes('while the page is open')"
        )
        session.append_message(assistant("second answer"))
        page.wait_for_function("document.querySelector('#transcript').textContent.includes('second answer')")
    assert page.evaluate("window.__marker") == 42
    assert page.locator(".tree .row.leaf").inner_text().startswith("assistant: second answer")
    screenshot(page, "live")


def test_exported_file_works_offline_from_disk(page: Any, viewer: Viewer, tmp_path: Path) -> None:
    exported = tmp_path / "pagination.html"
    exported.write_text(export_html(viewer.root / PAGINATION, blobs_dir=viewer.blobs), encoding="utf-8")
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(exported.as_uri())
    page.wait_for_selector("html.ready")
    assert "Keyset pagination it is" in transcript(page)
    page.locator(".tree .row", has_text="assistant: Pagination is in.").locator("a").click()
    page.wait_for_function("document.querySelector('#transcript').textContent.includes('Pagination is in.')")
    assert "Keyset pagination it is" not in transcript(page)
    screenshot(page, "export", full_page=True)

    blog = tmp_path / "blog.html"
    blog.write_text(export_html(viewer.root / BLOG, blobs_dir=viewer.blobs), encoding="utf-8")
    page.goto(blog.as_uri())
    page.wait_for_function(IMAGES_LOADED)
    assert page.locator("#transcript figure.image img").count() == 2
    assert all(url.startswith(("file:", "data:")) for url in requests), requests


def _assert_not_pwned(page: Any) -> None:
    assert page.evaluate("typeof window.__pwned") == "undefined"
    # One script runs; the others are data (JSON, or the export's gzipped blocks), never executed.
    data = ':not([type="application/json"]):not([type="application/octet-stream"])'
    assert page.evaluate(f"document.querySelectorAll('script{data}').length") == 1
    bad = page.evaluate(DANGEROUS_ATTRIBUTES)
    assert bad == []
    sources = page.eval_on_selector_all("img", "els => els.map(e => e.getAttribute('src'))")
    assert all(
        s.startswith(("/blob/", "data:image/png;", "data:image/jpeg;", "data:image/gif;", "data:image/webp;"))
        for s in sources
    )


def test_xss_payloads_never_run(page: Any, viewer: Viewer, tmp_path: Path) -> None:
    ref = viewer.xss.relative_to(viewer.root).as_posix()
    open_session(page, viewer, ref)
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    assert "<script>window.__pwned=1</script>" in transcript(page)  # shown as text
    assert page.locator(".image-missing").count() == 4  # SVG by type, SVG as PNG, SVG blob, junk
    _assert_not_pwned(page)
    screenshot(page, "xss")
    rows = page.locator(".tree .row a")
    for number in range(rows.count()):
        rows.nth(number).click()
    for fragment in (
        "#__pwned",
        '#"><img src=x onerror="window.__pwned=1">',
        "#</script><script>window.__pwned=1</script>",
    ):
        page.evaluate("hash => { location.hash = hash; }", fragment)
        page.wait_for_timeout(50)
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    _assert_not_pwned(page)

    page.goto(viewer.url + "/")  # the index shows the session's title and cwd
    assert "<script>window.__pwned=1</script> XSS sampler" in page.inner_text("main")
    assert page.evaluate("typeof window.__pwned") == "undefined"

    # The export of this small session (one block of each kind), from file://: every node, the
    # filter, a search.
    exported = tmp_path / "xss.html"
    exported.write_text(export_html(viewer.xss, blobs_dir=viewer.blobs), encoding="utf-8")
    page.goto(exported.as_uri())
    page.wait_for_selector("html.ready #vtree-rows .row")
    assert page.evaluate("typeof window.__pwned") == "undefined"
    for number in range(page.locator("#vtree-rows .row a").count()):
        page.locator("#vtree-rows .row a").nth(number).click()
        page.wait_for_timeout(20)
    page.fill("#tree-filter", "<script>")
    page.fill("#site-search", "<script>window.__pwned=1</script>")
    page.press("#site-search", "Enter")
    page.wait_for_selector("#export-hits li a")
    assert "<script>window.__pwned=1</script>" in page.inner_text("#export-hits")  # as text
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    page.wait_for_timeout(300)
    _assert_not_pwned(page)


def test_pages_run_under_the_content_security_policy(
    strict_page: Any, viewer: Viewer, tmp_path: Path
) -> None:
    """With the policy enforced, the page still works: no inline script or style of ours is blocked."""
    strict_page.goto(viewer.url + "/")
    open_session(strict_page, viewer, BLOG)
    strict_page.locator(".tree .row a").first.click()
    strict_page.locator("#bar-where", has_text="Context at").wait_for()  # the window comes async
    assert strict_page.evaluate("getComputedStyle(document.querySelector('.topbar')).position") == "sticky"
    exported = tmp_path / "blog.html"
    exported.write_text(export_html(viewer.root / BLOG, blobs_dir=viewer.blobs), encoding="utf-8")
    strict_page.goto(exported.as_uri())
    strict_page.wait_for_selector("html.ready")
    assert strict_page.evaluate("getComputedStyle(document.querySelector('.topbar')).position") == "sticky"
    assert strict_page.evaluate(IMAGE_WIDTH) == 240
