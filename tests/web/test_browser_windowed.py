"""The session page, a window at a time (every session, issue 23 #2), in Chromium: one script runs
and payloads stay inert while every node is clicked, the keys help opens, a fork links to its
parent, live updates follow a new branch and a compaction, a deep link opens a compacted group."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from omp_session.store.loading import load_session

from .conftest import Viewer
from .support import FORK, PAGINATION, screenshot
from .test_browser import _assert_not_pwned, entry_id, open_session, transcript


def test_one_script_runs_and_payloads_stay_text_in_the_windowed_page(page: Any, viewer: Viewer) -> None:
    open_session(page, viewer, viewer.xss.relative_to(viewer.root).as_posix())
    page.wait_for_selector("html.tree-ready #vtree-rows .row")
    for number in range(page.locator("#vtree-rows .row a").count()):
        page.locator("#vtree-rows .row a").nth(number).click()
        page.wait_for_timeout(20)
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    page.wait_for_timeout(300)
    assert "<script>window.__pwned=1</script>" in str(page.locator("#transcript").text_content())
    _assert_not_pwned(page)


def test_the_keys_help_opens_and_a_fork_links_to_its_parent(page: Any, viewer: Viewer) -> None:
    open_session(page, viewer, FORK)
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


def test_live_updates_follow_a_new_branch_and_a_compaction(page: Any, viewer: Viewer) -> None:
    """New entries that do not continue the window shown (a new branch, a compaction) show the
    context afresh, as the whole page's re-render does; plain new entries are appended."""
    from omp_session import SessionManager
    from tests.helpers import assistant, user

    with SessionManager.create("/work/live", viewer.root / "-work-live-windowed") as session:
        first = session.append_message(user("first question"))
        session.append_message(assistant("first answer"))
        ref = str(session.get_session_file())[len(str(viewer.root)) + 1 :]
        open_session(page, viewer, ref)
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


def test_a_deep_link_to_a_replaced_entry_opens_the_compacted_group(page: Any, viewer: Viewer) -> None:
    from omp_session.rendering.images import linked_images
    from omp_session.rendering.windowed_open import open_windowed

    from .support import FLAKY

    session = open_windowed(viewer.root / FLAKY, linked_images(None, str))
    assert session.leaf is not None
    dropped = session.route(session.leaf).arranged.dropped
    assert len(dropped) == 8
    target = session.keys[dropped[len(dropped) // 2]]
    open_session(page, viewer, FLAKY, "#" + quote(target))
    entry = page.locator(f'#transcript details.compacted .entry.target[data-key="{target}"]')
    entry.wait_for()
    assert page.locator("#transcript details.compacted").get_attribute("open") is not None
    assert entry.is_visible() and "dropped" in (entry.get_attribute("class") or "")
    assert page.locator("#transcript .entry.target").count() == 1
    assert page.locator("#transcript > .entry.active-compaction").count() == 1  # the context stays


def test_a_deep_link_keeps_the_context_shown_when_it_holds_the_entry(page: Any, viewer: Viewer) -> None:
    """As the whole page did: a link to an entry on the path of the node shown stays on that node's
    context (an abandoned branch here), instead of jumping to the leaf's."""
    abandoned = entry_id(viewer.root / PAGINATION, "Pagination is in.", "assistant")
    first = load_session(viewer.root / PAGINATION).entries[1]["id"]  # on every branch
    open_session(page, viewer, PAGINATION, f"#at={abandoned}")
    page.locator("#bar-where", has_text="Context at").wait_for()
    page.evaluate("id => { location.hash = id; }", first)
    page.wait_for_selector(f'#transcript .entry.target[data-key="{first}"]')
    assert "Context at" in page.locator("#bar-where").inner_text()
    assert "Pagination is in." in transcript(page)  # still the abandoned branch
    leaf_only = "Keyset pagination it is"
    assert leaf_only not in transcript(page)
