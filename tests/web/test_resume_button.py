"""The session page's "Copy resume command" button (issue 30 #4): omp's ``omp --resume <id>`` on
the clipboard, in real Chromium under the viewer's Content-Security-Policy; the id escaped."""

from __future__ import annotations

import re
import urllib.request
from typing import Any
from urllib.parse import quote

from playwright.sync_api import expect

from omp_session.store.loading import load_session

from .conftest import Viewer
from .support import PAGINATION, screenshot, write_session


def test_the_button_copies_omp_s_resume_command(strict_page: Any, viewer: Viewer) -> None:
    session_id = load_session(viewer.root / PAGINATION).header["id"]
    strict_page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=viewer.url)
    strict_page.goto(f"{viewer.url}/session/{quote(PAGINATION)}")
    strict_page.wait_for_selector("html.ready")
    button = strict_page.locator("button.copy-resume")
    assert button.inner_text() == "Copy resume command"
    button.click()
    # Polled through the locator: a ``wait_for_function`` string is evaluated in the page, which
    # its Content-Security-Policy refuses once the first check fails (a console error, so a
    # failure whenever the clipboard answered a moment late).
    expect(button).to_have_text(re.compile(r"^Copied"), timeout=10_000)
    assert button.inner_text() == f"Copied: omp --resume {session_id}"
    assert strict_page.evaluate("navigator.clipboard.readText()") == f"omp --resume {session_id}"
    screenshot(strict_page, "session-copy-resume")


def test_the_command_is_escaped(viewer: Viewer) -> None:
    hostile = 'x"><b>y'
    header = {
        "type": "session",
        "version": 3,
        "id": hostile,
        "timestamp": "2025-06-02T14:05:00.000Z",
        "cwd": "/w",
    }
    message = {"role": "user", "content": "hello", "timestamp": 1}
    entry = {"type": "message", "id": "u1", "parentId": None, "timestamp": "2025-06-02T14:05:01.000Z"}
    write_session(viewer.root / "-resume" / "hostile.jsonl", [header, {**entry, "message": message}])
    with urllib.request.urlopen(
        f"{viewer.url}/session/{quote('-resume/hostile.jsonl')}", timeout=10
    ) as reply:
        page = reply.read().decode()
    assert 'data-command="omp --resume x&#34;&gt;&lt;b&gt;y"' in page
    assert "<b>y" not in page
