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
    code = write.locator(".codeblock pre.code").first
    assert "class Scheduler(Protocol):" in (code.text_content() or "")
    assert (code.text_content() or "").count("\n") >= 2  # the file with its real line breaks
    assert write.locator(".codeblock .cap").first.text_content() == "app/webhooks/scheduler.py"
    bash = page.locator("#transcript details.toolcall:visible", has_text="bash").first
    bash.locator("> summary").click()
    command = bash.locator(".codeblock pre.code").first
    assert (command.text_content() or "").startswith("for i in $(seq ")
    write.scroll_into_view_if_needed()
    screenshot(page, "toolcall-write-and-command")
