"""The viewer over a store mixing omp 13.19 and omp 18.2.3 files, in a real browser.

Slot titles in the index, and omp 18's entries drawn meaningfully: a /clear divider, title
changes, model usage as a cost line, credential pins as metadata. Screenshots go to
test-artifacts/ (``omp18-index.png``, ``omp18-session.png``).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from .support import REPO, running_viewer, screenshot

CORPUS18 = REPO / "tests" / "conformance_omp18" / "load"
MIXED = {
    "legacy-1319-header-title-parent.jsonl": "Refactor the parser",  # omp 13.19, header title
    "api-renamed-twice.jsonl": "User picked title",  # omp 18: the slot wins over the stale header
    "api-reset-boundary.jsonl": None,
    "api-model-usage.jsonl": None,
    "api-credential-pins.jsonl": None,
}


@pytest.fixture(scope="module")
def mixed_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    root = tmp_path_factory.mktemp("mixed") / "sessions"
    project = root / "-Users-alice-src-app"
    project.mkdir(parents=True)
    for name in MIXED:
        shutil.copyfile(CORPUS18 / name, project / name)
    with running_viewer(root, poll_ms=200) as url:
        yield url, project


def _open(page: Any, url: str, name: str) -> None:
    page.goto(f"{url}/session/{quote('-Users-alice-src-app/' + name)}")
    page.wait_for_selector("html.ready")


def test_index_shows_slot_and_header_titles(page: Any, mixed_store: tuple[str, Path]) -> None:
    url, _project = mixed_store
    page.goto(url + "/")
    text = page.locator("section.project").inner_text()
    for title in (t for t in MIXED.values() if t):
        assert title in text
    assert "Fix the parser" not in text  # the stale header title of the renamed omp 18 file
    assert page.locator("section.project tbody tr").count() == len(MIXED)
    screenshot(page, "omp18-index")


def test_reset_boundary_is_a_visible_divider(page: Any, mixed_store: tuple[str, Path]) -> None:
    url, _project = mixed_store
    _open(page, url, "api-reset-boundary.jsonl")
    divider = page.locator("#transcript .entry.k-reset")
    assert divider.count() == 1
    assert "Context cleared" in divider.inner_text()
    box = divider.bounding_box()
    assert box is not None and box["width"] > 400  # drawn across the transcript
    border = page.evaluate(
        "getComputedStyle(document.querySelector('#transcript .entry.k-reset')).borderTopStyle"
    )
    assert border == "dashed"
    # what precedes the boundary is folded away: the model gets the two messages after it
    assert page.locator("#bar-count").inner_text().startswith("2 messages sent to the model")
    assert "cleared by /clear" in page.locator("#transcript details.compacted summary").inner_text()
    screenshot(page, "omp18-session", full_page=True)


def test_model_usage_title_changes_and_pins(page: Any, mixed_store: tuple[str, Path]) -> None:
    url, _project = mixed_store
    _open(page, url, "api-model-usage.jsonl")
    usage = page.locator("#transcript .entry.k-usage").first
    assert "title · anthropic/claude-haiku-4-5" in usage.inner_text()
    assert "$" in usage.inner_text()
    _open(page, url, "api-renamed-twice.jsonl")
    titles = page.locator("#transcript .entry.meta", has_text="title →").all_inner_texts()
    assert any("Fix the parser" in t for t in titles) and any("User picked title" in t for t in titles)
    assert "User picked title" in page.title()
    _open(page, url, "api-credential-pins.jsonl")
    pins = page.locator("#transcript .entry.meta", has_text="account pinned").all_inner_texts()
    assert len(pins) == 3 and "anthropic" in pins[0] and "openai" in pins[1]
