"""Fixtures for the viewer tests: one server over a copy of the samples plus crafted sessions, and
one headless Debian Chromium (never a downloaded browser) shared by all browser tests."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .support import CHROMIUM, CHROMIUM_ARGS, REPO, copy_samples, running_viewer
from .xss import xss_session


@dataclass
class Viewer:
    url: str
    root: Path
    blobs: Path
    xss: Path


@pytest.fixture(scope="session")
def viewer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Viewer]:
    """The viewer over the samples, an XSS session and room for live sessions (polling every 200 ms)."""
    base = tmp_path_factory.mktemp("viewer")
    root, blobs = copy_samples(base)
    xss = xss_session(root, blobs)
    conformance = root / "-conformance"
    conformance.mkdir()
    for source in sorted((REPO / "tests" / "conformance" / "load").glob("v3-*.jsonl")):
        shutil.copy(source, conformance / source.name)
    with running_viewer(root, blobs, poll_ms=200) as url:
        yield Viewer(url, root, blobs, xss)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    # Per module, not per session: Playwright's sync API runs an asyncio loop in this thread for
    # as long as it is started, and any later test calling asyncio.run() (the agent SDK bridges')
    # would fail with "cannot be called from a running event loop".
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def _open_page(browser: Any, *, bypass_csp: bool) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1360, "height": 900}, bypass_csp=bypass_csp)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(f"page error: {error}"))
    tab.on(
        "console",
        lambda message: errors.append(f"console: {message.text}") if message.type == "error" else None,
    )

    def dismiss(dialog: Any) -> None:
        errors.append(f"dialog: {dialog.message}")
        dialog.dismiss()

    tab.on("dialog", dismiss)
    yield tab
    context.close()
    assert errors == []


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page with the Content-Security-Policy switched off, so that escaping alone is what
    keeps payloads inert (and Playwright may evaluate test code); any script error fails the test."""
    yield from _open_page(browser, bypass_csp=True)


@pytest.fixture
def strict_page(browser: Any) -> Iterator[Any]:
    """A fresh page under the viewer's real Content-Security-Policy (a violation is a console error)."""
    yield from _open_page(browser, bypass_csp=False)
