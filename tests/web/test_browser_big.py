"""A 50,000-entry session in the viewer (issue 13 #2), in Debian's Chromium through Playwright.

The timings are measured in this run and written to test-artifacts/big-session-timings.json (the
note reports them). The machine is shared, so the assertions on time are generous ceilings; the
assertions on bytes and on what is shown are exact.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bench.generate import Shape, generate
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from omp_session import SessionManager
from omp_session.export.html import export_html

from .support import ARTIFACTS, running_viewer, screenshot

ENTRIES = 50_000
#: Clicks the tree row of an entry and resolves with the milliseconds until the entry is shown.
# The row is picked and clicked in one step: the virtual tree redraws its rows as chunks arrive, so
# a row found in an earlier call may be gone by the time it is clicked.
CLICK_AND_WAIT = """(below) => new Promise((resolve, reject) => {
    const giveUp = performance.now() + 15000;
    const pick = () => {
        const far = [...document.querySelectorAll("#vtree-rows .row")]
            .filter(r => parseInt(r.style.top) > below && r.querySelector("a"));
        if (!far.length) {
            if (performance.now() > giveUp) { reject(new Error("no tree row far down")); return; }
            requestAnimationFrame(pick);
            return;
        }
        const row = far[Math.min(3, far.length - 1)];
        const key = row.getAttribute("data-key");
        const started = performance.now();
        const shown = () => document.querySelector(`#transcript .entry[data-key="${CSS.escape(key)}"]`);
        const watch = new MutationObserver(() => {
            if (shown()) { watch.disconnect(); resolve({key: key, ms: performance.now() - started}); }
        });
        watch.observe(document.getElementById("transcript"), { childList: true });
        row.querySelector("a").click();
    };
    pick();
})"""


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    base = tmp_path_factory.mktemp("big")
    session = base / "sessions" / "-big" / "big.jsonl"
    session.parent.mkdir(parents=True)
    stats = generate(session, Shape(target_bytes=10**9, target_messages=49_400), base / "blobs")
    assert stats.entries >= ENTRIES
    with running_viewer(base / "sessions", base / "blobs", poll_ms=300) as url:
        yield url, session


#: Bytes the page received: the document and every resource (scripts, styles, rows, windows).
RECEIVED = """() => performance.getEntriesByType('navigation')
    .concat(performance.getEntriesByType('resource'))
    .reduce((sum, entry) => sum + entry.decodedBodySize, 0)"""


#: Whether the tree row marked as seen is an entry in the band the tree follows (100 px from the
#: top of the window to 30 % of its height).
SEEN_AT_TOP = """() => {
    const row = document.querySelector('#vtree-rows .row.seen');
    const key = row && CSS.escape(row.dataset.key);
    const entry = key && document.querySelector(`#transcript .entry[data-key="${key}"]`);
    if (!entry) return false;
    const box = entry.getBoundingClientRect();
    return box.top < innerHeight * 0.3 && box.bottom > 100;
}"""

#: Milliseconds from navigation to the first contentful paint.
FIRST_PAINT = """() => (performance.getEntriesByName('first-contentful-paint')[0]
    || {startTime: NaN}).startTime"""


def _page(browser: Any) -> tuple[Any, Any]:
    context = browser.new_context(viewport={"width": 1360, "height": 900}, bypass_csp=True)
    return context, context.new_page()


def _open(page: Any, url: str) -> float:
    started = time.perf_counter()
    page.goto(url + "/session/-big/big.jsonl")
    page.wait_for_selector("html.ready")
    page.wait_for_selector("#transcript .entry")
    return time.perf_counter() - started


def test_a_50000_entry_session_opens_a_window_at_a_time(browser: Any, big: tuple[str, Path]) -> None:
    url, session = big
    timings: dict[str, Any] = {"entries": sum(1 for _ in session.open("rb")) - 1}
    context, page = _page(browser)
    try:
        timings["first_screen_cold_s"] = round(_open(page, url), 3)  # the server reads the file first
        timings["first_screen_cold_bytes"] = page.evaluate(RECEIVED)
        timings["first_paint_cold_s"] = round(page.evaluate(FIRST_PAINT) / 1000, 3)
        page.wait_for_selector("html.tree-ready #vtree-rows .row.leaf")  # the rows follow the page
        timings["tree_ready_cold_s"] = round(
            page.evaluate("performance.now() - performance.getEntriesByType('navigation')[0].startTime")
            / 1000,
            3,
        )
        timings["first_screen_warm_s"] = round(_open(page, url), 3)
        timings["first_screen_warm_bytes"] = page.evaluate(RECEIVED)
        assert timings["first_screen_warm_bytes"] < 1_000_000
        assert page.locator("#transcript .entry").count() == 40
        assert page.locator("#vtree-rows .row").count() < 200  # the tree is virtual
        assert page.locator("#vtree-rows .row.leaf").count() == 1
        assert page.locator("#vtree-rows .row.sel").count() == 1
        # The tree follows the transcript: the row of an entry scrolled to the top is marked.
        entry = page.locator("#transcript .entry").nth(10)
        page.evaluate(
            "(el) => window.scrollBy(0, el.getBoundingClientRect().top - 120)", entry.element_handle()
        )
        page.wait_for_function(SEEN_AT_TOP)  # the marked row is the entry at the top of the view
        screenshot(page, "big-session")

        # Scrolling up fetches the window before.
        shown = page.locator("#transcript .entry").count()
        with page.expect_response(lambda response: "/api/window/" in response.url and "end=" in response.url):
            page.evaluate("window.scrollTo(0, 0)")
        page.wait_for_function(f"document.querySelectorAll('#transcript .entry').length > {shown}")

        # Scrolling the tree far down fetches rows there.
        page.evaluate("document.getElementById('tree-panel').scrollTop = 19 * 30000")
        page.wait_for_function(
            "[...document.querySelectorAll('#vtree-rows .row')].some(r => parseInt(r.style.top) > 19 * 29000)"
        )
        # Click to context shown, timed inside the page.
        clicked = page.evaluate(CLICK_AND_WAIT, 19 * 29000)
        key, elapsed_ms = clicked["key"], clicked["ms"]
        page.wait_for_function("document.querySelector('#bar-where').textContent.startsWith('Context at')")
        timings["click_s"] = round(elapsed_ms / 1000, 3)
        assert page.locator("#vtree-rows .row.sel").get_attribute("data-key") == key
        screenshot(page, "big-session-clicked")

        # Back to the leaf, then live: only the new entries travel.
        page.locator("#bar-leaf").click()
        page.wait_for_function(
            "document.querySelector('#bar-where').textContent.startsWith('Current branch')"
        )
        with (
            page.expect_response(lambda response: "after=" in response.url, timeout=20_000) as update,
            SessionManager.open(session) as writer,
        ):
            writer.append_message({"role": "user", "content": "a brand new question", "timestamp": 0})
        page.wait_for_function(
            "[...document.querySelectorAll('#transcript .entry')]"
            ".some(e => e.textContent.includes('a brand new question'))",
            timeout=20_000,
        )
        timings["live_update_bytes"] = len(update.value.body())  # only the new entries
        assert page.evaluate("performance.getEntriesByType('navigation').length") == 1  # no reload
        assert timings["live_update_bytes"] < 50_000
        _parity(page, session, timings)
    finally:
        context.close()
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "big-session-timings.json").write_text(json.dumps(timings, indent=2) + "\n")
    assert timings["first_screen_warm_s"] < 5 and timings["click_s"] < 5  # ceilings on a shared machine


def _parity(page: Any, session: Path, timings: dict[str, Any]) -> None:
    """The windowed view does what the full page does (issue 13 #2): keys across windows, the tree
    filter, folds and the entries a compaction replaced."""
    # [ past the first prompt shown loads the window before and lands on a prompt in it.
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    page.wait_for_timeout(300)
    shown = page.locator("#transcript .entry").count()
    first_key = page.locator("#transcript .entry").first.get_attribute("data-key")
    prompts = page.locator("#transcript .entry.k-user").count()
    for _ in range(prompts + 2):
        page.keyboard.press("[")
        page.wait_for_timeout(150)
    page.wait_for_function(f"document.querySelectorAll('#transcript .entry').length > {shown}")
    cursor = page.locator("#transcript .entry.cursor")

    def cursor_place() -> tuple[int, int]:
        keys = page.eval_on_selector_all("#transcript .entry", "els => els.map(e => e.dataset.key)")
        return keys.index(cursor.get_attribute("data-key")), keys.index(first_key)

    # On a loaded machine the window before can arrive after the last press (the presses meanwhile
    # stop at the first prompt shown): a few more once it is there must then move into it.
    for _ in range(5):
        if cursor_place()[0] < cursor_place()[1]:
            break
        page.keyboard.press("[")
        page.wait_for_timeout(300)
    assert cursor.count() == 1 and "k-user" in (cursor.get_attribute("class") or "")
    at, old_first = cursor_place()
    assert at < old_first  # before the old window
    for _ in range(3):
        page.keyboard.press("j")
    assert page.locator("#transcript .entry.cursor").count() == 1

    # The filter asks the server for the matching rows of all 50,000.
    started = time.perf_counter()
    page.fill("#tree-filter", "brand new question")
    page.wait_for_function("document.getElementById('tree-filter-count').textContent.startsWith('1 match')")
    timings["filter_s"] = round(time.perf_counter() - started, 3)
    rows = page.locator("#vtree-rows .row")
    assert rows.count() == 1 and "a brand new question" in rows.first.inner_text()
    labels = [json.loads(line).get("label") for line in session.open() if '"type":"label"' in line]
    label = next(text for text in labels if isinstance(text, str) and text)
    page.fill("#tree-filter", label)
    page.wait_for_function("document.querySelectorAll('#vtree-rows .row .tag').length > 0")
    screenshot(page, "big-session-filter")
    page.fill("#tree-filter", "")
    page.wait_for_function("document.getElementById('tree-filter-count').textContent === ''")

    # A fold hides the subtree below a fork and the rows after it move up.
    page.evaluate("document.getElementById('tree-panel').scrollTop = 0")
    for _ in range(60):  # down the tree to the first fork
        if page.locator("#vtree-rows .row .fold").count():
            break
        page.evaluate("document.getElementById('tree-panel').scrollTop += 19 * 40")
        page.wait_for_timeout(100)
    page.wait_for_selector("#vtree-rows .row .fold")
    height = page.evaluate("document.getElementById('vtree-space').offsetHeight")
    # The virtual tree draws its rows again as it scrolls: on a loaded machine a click can land while
    # the row is being replaced and do nothing (a user clicks again); the test does the same.
    for _attempt in range(3):
        row = page.locator("#vtree-rows .row:has(.fold)").first
        index = int(row.get_attribute("data-row") or "0")
        row.locator(".fold").click()
        try:
            page.wait_for_function(
                f"document.getElementById('vtree-space').offsetHeight < {height}", timeout=10_000
            )
            break
        except PlaywrightTimeoutError:
            continue
    else:
        raise AssertionError("a fold click never folded its branch")
    page.evaluate(
        "(i) => { const panel = document.getElementById('tree-panel');"
        " panel.scrollTop = document.getElementById('vtree').offsetTop + i * 19 - 100; }",
        index,
    )
    folded = page.locator(f'#vtree-rows .row[data-row="{index}"]')
    assert "folded" in (folded.get_attribute("class") or "")
    hidden = (height - page.evaluate("document.getElementById('vtree-space').offsetHeight")) // 19
    below = page.locator(f'#vtree-rows .row[data-row="{index + 1}"]')
    assert hidden > 0 and below.count() == 0  # the first row below the fork is gone
    screenshot(page, "big-session-folded")
    page.locator(f'#vtree-rows .row[data-row="{index}"] .fold').click()
    page.wait_for_function(f"document.getElementById('vtree-space').offsetHeight === {height}")

    # At a compaction: its summary first, the entries it replaced in a group that loads when opened.
    compactions = [json.loads(line)["id"] for line in session.open() if '"type":"compaction"' in line]
    page.evaluate("(key) => { location.hash = '#at=' + key; }", compactions[-1])
    page.wait_for_selector("#transcript details.compacted")
    assert page.locator("#transcript .entry.active-compaction").count() == 1
    page.locator("#transcript details.compacted > summary").click()
    page.wait_for_selector("#transcript details.compacted .entry.dropped")
    assert page.locator("#transcript details.compacted .entry.dropped").count() == 40
    page.locator("#transcript details.compacted .window-more").click()
    page.wait_for_function(
        "document.querySelectorAll('#transcript details.compacted .entry.dropped').length === 80"
    )
    screenshot(page, "big-session-compacted")


def test_the_export_of_a_50000_entry_session_renders_lazily(browser: Any, big: tuple[str, Path]) -> None:
    """The exported file opens from file:// with no server: a window at a time, the tree, a click,
    scrolling down to the end of the context and a search over every entry."""
    _url, session = big
    needle = "a needle only the export test wrote"
    with SessionManager.open(session) as writer:
        writer.append_message({"role": "user", "content": needle, "timestamp": 0})
    started = time.perf_counter()
    html = export_html(session, blobs_dir=session.parents[2] / "blobs")
    exported = session.parents[2] / "big.html"
    exported.write_text(html, encoding="utf-8")
    timings: dict[str, Any] = {
        "export_s": round(time.perf_counter() - started, 3),
        "export_bytes": exported.stat().st_size,
    }
    page_part = html[: html.index('<script type="application/json"')]
    assert page_part.count("<article") == 40  # only the first window is HTML; the rest is JSON data
    context = browser.new_context(viewport={"width": 1360, "height": 900})  # the file's own CSP on
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        started = time.perf_counter()
        page.goto(exported.as_uri(), timeout=120_000)
        page.wait_for_selector("html.ready #transcript .entry", timeout=120_000)
        timings["first_screen_s"] = round(time.perf_counter() - started, 3)  # script ready: all parsed
        timings["first_paint_s"] = round(page.evaluate(FIRST_PAINT) / 1000, 3)  # the first window drawn
        assert page.locator("#transcript .entry").count() == 40
        assert (
            page.locator("#vtree-rows .row.leaf").count() == 1
            and page.locator("#vtree-rows .row").count() < 200
        )
        assert page.locator("#bar-usage").inner_text().startswith("in ")
        screenshot(page, "big-export")

        # A deep link 200 entries before the leaf, then down to the end of the context.
        keys = [json.loads(line).get("id") for line in session.open(encoding="utf-8")][1:]
        leaf = keys[-1]
        page.evaluate("(key) => { location.hash = '#' + encodeURIComponent(key); }", keys[-200])
        page.wait_for_selector("#transcript .entry.target", state="attached")
        started = time.perf_counter()
        for _ in range(30):
            if page.locator(f'#transcript .entry[data-key="{leaf}"]').count():
                break
            page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
            page.wait_for_timeout(150)
        timings["scroll_to_end_s"] = round(time.perf_counter() - started, 3)
        assert page.locator(f'#transcript .entry[data-key="{leaf}"]').count() == 1
        assert page.locator("#window-after").is_hidden()

        # A click far down the tree shows the context there.
        page.evaluate("document.getElementById('tree-panel').scrollTop = 19 * 20000")
        clicked = page.evaluate(CLICK_AND_WAIT, 19 * 19500)
        timings["click_s"] = round(clicked["ms"] / 1000, 3)
        assert page.locator("#vtree-rows .row.sel").get_attribute("data-key") == clicked["key"]

        # Search inside the file: every entry's text, hits open their context.
        started = time.perf_counter()
        page.fill("#site-search", needle)
        page.press("#site-search", "Enter")
        page.wait_for_selector("#export-hits li a")
        timings["search_s"] = round(time.perf_counter() - started, 3)
        hits = page.locator("#export-hits li a")
        assert hits.count() == 1 and needle in hits.first.inner_text()
        screenshot(page, "big-export-search")
        hits.first.click()
        page.wait_for_function(
            "(text) => [...document.querySelectorAll('#transcript .entry.target')]"
            ".some(e => e.textContent.includes(text))",
            arg=needle,
        )
        assert errors == []
    finally:
        context.close()
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "big-export-timings.json").write_text(json.dumps(timings, indent=2) + "\n")
    assert timings["first_screen_s"] < 20 and timings["search_s"] < 20  # ceilings on a shared machine
