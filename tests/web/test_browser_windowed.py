"""The windowed page (forced for every session: a size limit of 0) does what the whole page does, in
Chromium: a search hit lands marked, one script runs and payloads stay inert, the keys help opens,
a fork links to its parent. Each test runs the whole page's own check on the windowed page."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from .conftest import Viewer
from .support import FORK, PAGINATION, copy_samples, running_viewer, screenshot
from .test_browser import _assert_not_pwned, open_session
from .test_browser_readable import test_every_search_hit_is_reachable_and_lands_marked as search_hit_check
from .xss import xss_session


@pytest.fixture(scope="module")
def windowed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Viewer]:
    base = tmp_path_factory.mktemp("windowed-viewer")
    root, blobs = copy_samples(base)
    xss = xss_session(root, blobs)
    with running_viewer(root, blobs, poll_ms=200, windowed_bytes=0) as url:
        yield Viewer(url, root, blobs, xss)


def test_the_page_is_windowed(page: Any, windowed: Viewer) -> None:
    open_session(page, windowed, PAGINATION)
    assert page.locator("#window-data").count() == 1 and page.locator("#session-data").count() == 0


def test_a_search_hit_lands_marked_in_the_windowed_page(page: Any, windowed: Viewer) -> None:
    search_hit_check(page, windowed)
    assert page.locator("#window-data").count() == 1
    screenshot(page, "windowed-search-landed")


def test_one_script_runs_and_payloads_stay_text_in_the_windowed_page(page: Any, windowed: Viewer) -> None:
    open_session(page, windowed, windowed.xss.relative_to(windowed.root).as_posix())
    page.wait_for_selector("html.tree-ready #vtree-rows .row")
    for number in range(page.locator("#vtree-rows .row a").count()):
        page.locator("#vtree-rows .row a").nth(number).click()
        page.wait_for_timeout(20)
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    page.wait_for_timeout(300)
    assert "<script>window.__pwned=1</script>" in str(page.locator("#transcript").text_content())
    _assert_not_pwned(page)


@pytest.mark.parametrize("mode", ["whole", "windowed"])
def test_the_keys_help_opens_and_a_fork_links_to_its_parent(
    page: Any, viewer: Viewer, windowed: Viewer, mode: str
) -> None:
    site = windowed if mode == "windowed" else viewer
    open_session(page, site, FORK)
    assert (page.locator("#window-data").count() == 1) == (mode == "windowed")
    link = page.locator(".facts a", has_text="its parent session")
    assert link.get_attribute("href") == "/session/" + quote(PAGINATION)
    help_line = page.locator("#keys-help")
    assert not help_line.is_visible()
    page.keyboard.press("?")
    assert help_line.is_visible() and "next/previous entry" in help_line.inner_text()
    page.keyboard.press("?")
    assert not help_line.is_visible()
    link.click()
    page.wait_for_selector("html.ready")
    assert "Keyset pagination it is" in str(page.locator("#transcript").text_content())


def _shows(page: Any, text: str) -> None:
    page.wait_for_function(
        "text => document.querySelector('#transcript').textContent.includes(text)", arg=text, timeout=20_000
    )


def test_live_updates_follow_a_new_branch_and_a_compaction(page: Any, windowed: Viewer) -> None:
    """New entries that do not continue the window shown (a new branch, a compaction) show the
    context afresh, as the whole page's re-render does; plain new entries are appended."""
    from omp_session import SessionManager
    from tests.helpers import assistant, user

    with SessionManager.create("/work/live", windowed.root / "-work-live-windowed") as session:
        first = session.append_message(user("first question"))
        session.append_message(assistant("first answer"))
        ref = str(session.get_session_file())[len(str(windowed.root)) + 1 :]
        open_session(page, windowed, ref)
        page.evaluate("window.__marker = 42")
        session.append_message(user("a second question, appended"))
        _shows(page, "a second question, appended")
        # A new branch from the first question: its answer replaces what followed it.
        session.branch(first)
        session.append_message(assistant("another first answer, on a new branch"))
        _shows(page, "another first answer, on a new branch")
        text = str(page.locator("#transcript").text_content())
        assert "a second question, appended" not in text and "first answer" in text
        # A compaction keeping nothing: its summary comes first, the rest in the collapsed group.
        session.append_compaction("the story so far", None, None, 1234)
        page.wait_for_selector("#transcript .entry.active-compaction", timeout=20_000)
        assert (
            page.locator("#transcript > .entry").first.get_attribute("class").count("active-compaction") == 1
        )
        group = page.locator("#transcript details.compacted > summary")
        assert "earlier entries are replaced by the compaction summary" in group.inner_text()
        session.append_message(user("after the compaction"))
        _shows(page, "after the compaction")
    assert page.evaluate("window.__marker") == 42  # never reloaded
    assert page.locator("#transcript .entry", has_text="after the compaction").count() == 1
    screenshot(page, "windowed-live")


@pytest.mark.parametrize("mode", ["whole", "windowed"])
def test_a_deep_link_to_a_replaced_entry_opens_the_compacted_group(
    page: Any, viewer: Viewer, windowed: Viewer, mode: str
) -> None:
    from omp_session.rendering.images import linked_images
    from omp_session.rendering.windowed_open import open_windowed

    from .support import FLAKY

    site = windowed if mode == "windowed" else viewer
    session = open_windowed(site.root / FLAKY, linked_images(None, str))
    assert session.leaf is not None
    dropped = session.route(session.leaf).arranged.dropped
    assert len(dropped) == 8
    target = session.keys[dropped[len(dropped) // 2]]
    open_session(page, site, FLAKY, "#" + quote(target))
    entry = page.locator(f'#transcript details.compacted .entry.target[data-key="{target}"]')
    entry.wait_for()
    assert page.locator("#transcript details.compacted").get_attribute("open") is not None
    assert entry.is_visible() and "dropped" in (entry.get_attribute("class") or "")
    assert page.locator("#transcript .entry.target").count() == 1
    assert page.locator("#transcript > .entry.active-compaction").count() == 1  # the context stays
