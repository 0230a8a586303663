"""Every agent's edits as diffs in the viewer, dark mode's highlighting, the import button's contrast
and the 404 page (issue 30 items 2 and the viewer rows of its table), in Debian's Chromium.

Screenshots are kept under /tmp/omp-screens/ for a person to look at; what they show is asserted
in the DOM (computed colours, contrast ratios, the rows of each diff table).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from omp_session.importers import SOURCES
from omp_session.importers.stores import make_store
from tests.foreign_edits import import_foreign_edits

from .support import running_viewer

SCREENS = Path("/tmp/omp-screens")


@dataclass
class Site:
    url: str
    root: Path
    imported: dict[str, Path]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """The viewer over the two imported sessions, with the same transcripts as foreign sessions."""
    base = tmp_path_factory.mktemp("diffs")
    imported = import_foreign_edits(base)
    stores = [make_store(source, env={"HOME": str(base / "home")}) for source in SOURCES]
    with running_viewer(base / "sessions", foreign_stores=stores) as url:
        yield Site(url, base / "sessions", imported)


def keep(page: Any, name: str) -> Path:
    """A screenshot kept under /tmp/omp-screens/ (listed in the issue's note)."""
    SCREENS.mkdir(parents=True, exist_ok=True)
    target = SCREENS / f"{name}.png"
    page.screenshot(path=str(target), full_page=True)
    assert target.stat().st_size > 5_000  # a drawn page, not an empty one
    return target


def _channels(colour: str) -> tuple[float, ...]:
    numbers = [float(n) for n in re.findall(r"[\d.]+", colour)[:3]]
    assert len(numbers) == 3, colour
    return tuple(numbers)


def contrast(foreground: str, background: str) -> float:
    """The WCAG contrast ratio of two computed ``rgb(…)`` colours."""

    def luminance(colour: str) -> float:
        linear = [c / 255 for c in _channels(colour)]
        r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in linear)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    high, low = sorted((luminance(foreground), luminance(background)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def _open(page: Any, site: Site, source: str) -> None:
    ref = site.imported[source].relative_to(site.root).as_posix()
    page.goto(f"{site.url}/session/{quote(ref)}")
    page.wait_for_selector("html.ready")
    for summary in page.locator("#transcript details.toolcall > summary").all():
        summary.click()


def _rows(table: Any) -> list[tuple[str, str, str, str]]:
    rows: list[tuple[str, str, str, str]] = table.evaluate(
        """t => [...t.querySelectorAll('tr')].map(r => [r.className,
              ...[...r.querySelectorAll('td')].filter(c => c.className !== 'sg').map(c => c.textContent)])"""
    )
    return [tuple(row) for row in rows]  # type: ignore[misc]


def test_a_codex_patch_is_a_diff_table_per_file(page: Any, site: Site) -> None:
    _open(page, site, "codex")
    call = page.locator("#transcript details.toolcall", has_text="apply_patch")
    assert call.locator("code.hint").inner_text() == "src/server.go +3 files"
    captions = call.locator(".diffblock > .cap").all_inner_texts()
    assert captions == [
        "src/server.go · no line numbers in the patch",
        "docs/PORT.md (new file) · line numbers of the file",
        "old/notes.txt (deleted)",
        "src/util.go → src/helpers.go · no line numbers in the patch",
    ]
    tables = call.locator("table.diff")
    assert _rows(tables.nth(0)) == [
        ("d-hunk", "", "", "@@ func main() {"),
        ("d-ctx", "", "", '\tlog.Println("starting")'),
        ("d-del", "", "", "\tport := 8080"),
        ("d-add", "", "", "\tport := 9090"),
        ("d-ctx", "", "", "\tserve(port)"),
    ]
    assert _rows(tables.nth(1)) == [
        ("d-add", "", "1", "# Port"),
        ("d-add", "", "2", ""),
        ("d-add", "", "3", "The server listens on 9090."),
    ]
    assert call.locator("table.diff .hl-err").count() == 0
    assert "*** Begin Patch" not in call.inner_text()
    # The result, a JSON string in the file, is shown decoded with its real line breaks.
    result = page.locator("#transcript article.k-tool pre.code").first.inner_text()
    assert result.startswith("Success. Updated the following files:\nM src/server.go\n")
    assert "\\n" not in result and '"output"' not in result
    call.scroll_into_view_if_needed()
    keep(page, "codex-patch-diff")


def test_claude_code_edits_are_diffs_numbered_and_highlighted_whole(page: Any, site: Site) -> None:
    _open(page, site, "claude")
    calls = page.locator("#transcript details.toolcall")
    edit = calls.filter(has_text="Edit").first
    assert edit.locator(".diffblock > .cap").inner_text().endswith("router.ts · line numbers of the file")
    assert _rows(edit.locator("table.diff")) == [
        ("d-hunk", "", "", "@@ -5,2 +5,4 @@"),
        ("d-ctx", "5", "5", " */"),
        ("d-del", "6", "", "export const routes = [];"),
        ("d-add", "", "6", "export const routes = ["),
        ("d-add", "", "7", "  '/home',"),
        ("d-add", "", "8", "];"),
    ]
    write = calls.filter(has_text="new_module.py")
    assert [row[2:] for row in _rows(write.locator("table.diff"))] == [
        ("1", '"""A new module."""'),
        ("2", ""),
        ("3", "VALUE = 1"),
    ]
    # The /** … */ edit: highlighted as one text, every line of the comment a comment (no error box).
    comment = calls.nth(3).locator("table.diff")
    assert comment.locator(".hl-err").count() == 0
    classes = comment.evaluate(
        "t => [...t.querySelectorAll('td.dl')].map(c => c.firstElementChild?.className)"
    )
    assert classes == ["hl-cm", "hl-cm", "hl-cm", "hl-cm"]
    assert page.locator("#transcript .hl-err").count() == 0
    keep(page, "claude-edit-diff")


def test_dark_mode_uses_a_dark_highlight_style(browser: Any, site: Site) -> None:
    for scheme in ("dark", "light"):
        context = browser.new_context(color_scheme=scheme, viewport={"width": 1360, "height": 900})
        page = context.new_page()
        try:
            _open(page, site, "claude")
            keyword = page.locator("#transcript table.diff tr.d-add .hl-k").first
            comment = page.locator("#transcript table.diff .hl-cm").first
            row = page.locator("#transcript table.diff tr.d-ctx").first
            styles = page.evaluate(
                """([k, c, r]) => [getComputedStyle(k).color, getComputedStyle(c).color,
                    getComputedStyle(r).backgroundColor, getComputedStyle(r.closest('table')).backgroundColor,
                    getComputedStyle(k.closest('tr')).backgroundColor]""",
                [keyword.element_handle(), comment.element_handle(), row.element_handle()],
            )
            key_colour, comment_colour, _row, table_bg, added_bg = styles
            if scheme == "dark":
                # github-dark's keyword red and comment grey, on the dark card (not friendly's dark
                # green and blue on near-black).
                assert key_colour == "rgb(255, 123, 114)" and comment_colour == "rgb(139, 148, 158)"
                assert table_bg == "rgb(22, 27, 34)"
                keep(page, "claude-edit-diff-dark")
            else:
                assert key_colour == "rgb(0, 128, 0)" and table_bg == "rgb(255, 255, 255)"
            assert contrast(key_colour, added_bg) >= 4.5, (scheme, key_colour, added_bg)
            assert contrast(comment_colour, table_bg) >= 4.5, (scheme, comment_colour, table_bg)
        finally:
            context.close()


def test_the_import_button_is_readable_in_both_themes(browser: Any, site: Site) -> None:
    for scheme in ("light", "dark"):
        context = browser.new_context(color_scheme=scheme, viewport={"width": 1360, "height": 900})
        page = context.new_page()
        try:
            page.goto(site.url + "/")
            page.locator('a.session-link[href^="/session/%40codex/"]').click()
            page.wait_for_selector("html.ready")
            button = page.locator("form.import button")
            assert button.inner_text() == "Import into omp"
            colour, background = button.evaluate(
                "b => [getComputedStyle(b).color, getComputedStyle(b).backgroundColor]"
            )
            assert colour == "rgb(255, 255, 255)"
            assert contrast(colour, background) >= 4.5, (scheme, colour, background)
            keep(page, f"import-button-{scheme}")
            page.goto(site.url + "/")  # the search form's button, on the index page
            search = page.locator("form.search button").first
            colour, background = search.evaluate(
                "b => [getComputedStyle(b).color, getComputedStyle(b).backgroundColor]"
            )
            assert contrast(colour, background) >= 4.5, (scheme, "search", colour, background)
        finally:
            context.close()


def test_an_unknown_session_gets_a_styled_escaped_404_page(browser: Any, site: Site) -> None:
    # Not the ``page`` fixture: Chromium logs every 404 answer as a console error, which it fails on.
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    page = context.new_page()
    scripts: list[str] = []
    page.on("dialog", lambda dialog: scripts.append(dialog.message))
    address = "/session/<img src=x onerror=alert(1)>nope.jsonl"
    response = page.goto(site.url + quote(address))
    assert response.status == 404
    assert page.locator("h1").inner_text() == "Not found"
    assert page.locator("code.missing-path").inner_text() == address
    assert page.locator("main img").count() == 0  # the address is text, never markup
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(246, 247, 249)"
    assert page.locator("header.topbar a.brand").get_attribute("href") == "/"
    keep(page, "not-found")
    other = page.goto(site.url + "/no/such/page")
    assert other.status == 404 and page.locator("h1").inner_text() == "Not found"
    assert page.locator("code.missing-path").count() == 0  # an address through directories: not repeated
    context.close()
    assert scripts == []  # the onerror payload never ran
