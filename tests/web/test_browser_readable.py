"""Issue 13 in a real browser (Debian's Chromium through Playwright): readable tool calls, keyboard,
dark mode, local times, the small fixes. Each test saves a screenshot under test-artifacts/."""

from __future__ import annotations

from typing import Any

from .conftest import Viewer
from .support import FLAKY, PAGINATION, screenshot
from .test_browser import open_session


def test_an_edit_reads_as_a_diff(page: Any, viewer: Viewer) -> None:
    open_session(page, viewer, PAGINATION)
    edit = page.locator("#transcript details.toolcall:visible", has_text="edit").first
    edit.locator("> summary").click()
    diff = edit.locator("table.diff")
    assert diff.is_visible()
    added = diff.locator("tr.d-add td.dl").all_text_contents()
    removed = diff.locator("tr.d-del td.dl").all_text_contents()
    assert added and removed
    assert all("\\n" not in line for line in added + removed)  # one line per row, no escapes
    assert diff.locator("td.dl .hl-n").count() > 0  # highlighted as Python (from the .py extension)
    assert diff.locator("td.ln").first.text_content()  # numbered
    edit.scroll_into_view_if_needed()
    screenshot(page, "toolcall-edit-diff")


def test_a_write_is_the_file_and_bash_a_command(page: Any, viewer: Viewer) -> None:
    open_session(page, viewer, FLAKY)
    write = page.locator("#transcript details.toolcall:visible", has_text="write").first
    write.locator("> summary").click()
    # The written file as added lines numbered from 1 (issue 30: every write is a diff).
    lines = write.locator("table.diff tr.d-add td.dl").all_text_contents()
    assert lines[0] == "class Scheduler(Protocol):" and len(lines) == 2  # one row per real line
    numbers = write.locator("table.diff tr.d-add td.ln:nth-child(2)").all_text_contents()
    assert numbers == ["1", "2"]
    caption = write.locator(".diffblock > .cap").first.text_content()
    assert caption == "app/webhooks/scheduler.py · line numbers of the file"
    bash = page.locator("#transcript details.toolcall:visible", has_text="bash").first
    bash.locator("> summary").click()
    command = bash.locator(".codeblock pre.code").first
    assert (command.text_content() or "").startswith("for i in $(seq ")
    write.scroll_into_view_if_needed()
    screenshot(page, "toolcall-write-and-command")


def _cursor(page: Any) -> str:
    return str(page.evaluate("document.querySelector('#transcript .entry.cursor')?.getAttribute('data-key')"))


SHOWN_KEYS = """(selector) => [...document.querySelectorAll('#transcript ' + selector)]
    .filter(e => !e.closest('details.compacted:not([open])')).map(e => e.getAttribute('data-key'))"""


def test_keyboard_moves_between_entries_and_prompts(page: Any, viewer: Viewer) -> None:
    open_session(page, viewer, FLAKY)
    keys = page.evaluate(SHOWN_KEYS, ".entry")
    prompts = page.evaluate(SHOWN_KEYS, ".entry.k-user")
    assert len(keys) > 3 and len(prompts) >= 2
    page.keyboard.press("j")
    assert _cursor(page) == keys[0]
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert _cursor(page) == keys[2]
    page.keyboard.press("k")
    assert _cursor(page) == keys[1]
    page.keyboard.press("]")
    landed = _cursor(page)
    assert landed == next(key for key in prompts if keys.index(key) > 1)
    page.keyboard.press("[")
    earlier = [key for key in prompts if keys.index(key) < keys.index(landed)]
    assert _cursor(page) == (earlier[-1] if earlier else prompts[0])
    assert page.evaluate("document.querySelector('.entry.cursor').getBoundingClientRect().top") < 200
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "site-search"
    page.keyboard.press("Escape")
    page.keyboard.press("t")
    assert page.evaluate("document.activeElement.id") == "tree-filter"
    screenshot(page, "keyboard-cursor")


def test_the_tree_filters_by_text_and_label(page: Any, viewer: Viewer) -> None:
    open_session(page, viewer, PAGINATION)
    rows = page.locator(".tree .row")
    total = rows.count()
    page.locator("#tree-filter").fill("keyset pagination")  # a label
    page.wait_for_function(f"document.querySelectorAll('.tree .row').length < {total}")
    visible = page.locator(".tree .row:visible")
    assert 0 < visible.count() < total
    assert all("keyset pagination" in text.lower() for text in visible.all_text_contents())
    assert (
        page.locator("#tree-filter-count")
        .inner_text()
        .endswith("match" if visible.count() == 1 else "matches")
    )
    page.locator("#tree-filter").fill("")
    page.wait_for_function(f"document.querySelectorAll('.tree .row').length === {total}")
    assert page.locator(".tree .row:visible").count() == total
    assert page.evaluate("getComputedStyle(document.querySelector('.tree-panel')).resize") == "horizontal"
    screenshot(page, "tree-filter")


def test_times_are_local_with_utc_on_hover(browser: Any, viewer: Viewer) -> None:
    context = browser.new_context(timezone_id="Asia/Tokyo", viewport={"width": 1360, "height": 900})
    page = context.new_page()
    try:
        open_session(page, viewer, PAGINATION)
        stamp = page.locator("#transcript time[datetime]").first
        iso = stamp.get_attribute("datetime")
        assert iso == "2025-06-02T09:32:01.000Z" or iso.startswith("2025-06-02T09:3")
        hours = (int(iso[11:13]) + 9) % 24  # Tokyo is UTC+9, no daylight saving
        assert (stamp.text_content() or "").startswith(f"{hours:02d}:{iso[14:16]}")
        assert (stamp.get_attribute("title") or "").startswith(f"UTC {iso[:10]} {iso[11:19]}")
        created = page.locator(".facts time").first
        assert "UTC" not in (created.text_content() or "")
    finally:
        context.close()


def test_dark_mode_follows_the_system(browser: Any, viewer: Viewer) -> None:
    context = browser.new_context(color_scheme="dark", viewport={"width": 1360, "height": 900})
    page = context.new_page()
    try:
        open_session(page, viewer, PAGINATION)
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert background == "rgb(13, 17, 23)"
        edit = page.locator("#transcript details.toolcall:visible", has_text="edit").first
        edit.locator("> summary").click()
        screenshot(page, "session-dark")
        page.goto(viewer.url + "/")
        assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(13, 17, 23)"
        screenshot(page, "index-dark")
    finally:
        context.close()
    light = browser.new_context(color_scheme="light")
    page = light.new_page()
    try:
        open_session(page, viewer, PAGINATION)
        assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(246, 247, 249)"
    finally:
        light.close()


def test_the_usage_page_charts_cost_and_tokens(strict_page: Any, viewer: Viewer) -> None:
    page = strict_page  # the real Content-Security-Policy: the charts need no script, no style attribute
    page.goto(viewer.url + "/")
    page.locator("a.button", has_text="Usage").click()
    page.wait_for_selector("#cost-chart")
    bars = page.locator("#cost-chart g.bar")
    assert bars.count() >= 7  # one per day of the samples
    tips = page.locator("#cost-chart rect title").all_text_contents()
    # Aliases merged (issue 27 #5): the samples name it with and without "anthropic/".
    assert any("· claude-sonnet-4-5:" in tip for tip in tips)
    assert page.locator("#cost-chart rect").first.bounding_box()["height"] > 0
    projects = page.locator("#project-chart li .hlabel").all_text_contents()
    assert "/home/ada/projects/shop-api" in projects
    widths = page.evaluate(
        "[...document.querySelectorAll('#project-chart rect')].map(r => r.getBBox().width)"
    )
    assert widths[0] == 100 and all(0 <= width <= 100 for width in widths)
    screenshot(page, "usage", full_page=True)
    page.goto(viewer.url + "/usage?since=2025-06-03&until=2025-06-04")
    assert page.locator("#cost-chart g.bar").count() == 2
    assert page.locator("#cost-chart g.bar text").all_text_contents() == ["06-03", "06-04"]


def test_every_search_hit_is_reachable_and_lands_marked(page: Any, viewer: Viewer) -> None:
    page.goto(viewer.url + "/?q=passed")
    row = page.locator("table.sessions tbody tr", has_text="returns every order").first
    more = row.locator("details.more-hits")
    assert more.locator("summary").inner_text() == "2 more entries with a match in this session"
    more.locator("summary").click()
    links = more.locator("li a")
    assert links.count() == 2
    screenshot(page, "search-every-hit")
    links.last.click()
    page.wait_for_selector(".entry.target mark.found")
    target = page.locator("#transcript .entry.target")
    marks = target.locator("mark.found")
    assert marks.first.inner_text().lower() == "passed" and marks.first.is_visible()
    # The hit sits in a tool result's output: the collapsed block holding it was opened.
    assert page.evaluate(
        "[...document.querySelectorAll('mark.found')].every(m => { for (let e = m; e; e = e.parentElement)"
        " if (e.tagName === 'DETAILS' && !e.open) return false; return true; })"
    )
    bars_bottom = page.evaluate("document.getElementById('branch-bar').getBoundingClientRect().bottom")
    assert marks.first.bounding_box()["y"] >= bars_bottom  # not hidden under the sticky bars
    screenshot(page, "search-landed")


def test_branches_fold_and_unfold(page: Any, viewer: Viewer) -> None:
    open_session(page, viewer, PAGINATION)
    total = page.locator(".tree .row:visible").count()
    branch = page.locator(".tree .row", has=page.locator("button.fold")).first
    branch.locator("button.fold").click()
    folded = page.locator(".tree .row:visible").count()
    assert folded < total
    assert "folded" in (branch.get_attribute("class") or "")
    assert branch.is_visible()  # the branch's own row stays
    screenshot(page, "tree-folded")
    branch.locator("button.fold").click()
    assert page.locator(".tree .row:visible").count() == total
    assert "Keyset pagination it is" in (page.locator("#transcript").text_content() or "")  # no navigation
