"""The HTML export of a session of several blocks in Debian's Chromium (issue 30 item 3): the page
opened from ``file://`` with its own Content-Security-Policy, its windows inflated from the
embedded blocks, edits drawn as highlighted diffs in the light and the dark scheme, every entry in
the file, and a hostile session's payloads shown as text, never run.

Screenshots are kept under /tmp/omp-screens/ (listed in the issue's note).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from omp_session import SessionManager
from omp_session.export.html import export_html
from omp_session.rendering.windowed_export import HTML_CHUNK

from .test_browser_diffs import keep
from .xss import PWN, TEXT

#: A docstring comment spans lines: highlighted as one text, each of its lines stays a comment.
OLD = 'def greet(name):\n    """Say hello."""\n    return "hi " + name\n'
NEW = 'def greet(name: str) -> str:\n    """Say hello\n    to someone."""\n    return f"hello {name}"\n'
FILLER = "Plain words of a long answer about the build, the cache and the tests. " * 40


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[str]]]:
    """A session of several blocks of entries: a hostile turn first, then turns that each edit a
    file; exported to one HTML file. Yields the file and the session's entry ids in file order."""
    base = tmp_path_factory.mktemp("export")
    with SessionManager.create("/home/x/app", base) as session:
        session.append_message({"role": "user", "content": TEXT, "timestamp": 1})
        session.append_message(
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": TEXT},
                    {"type": "text", "text": TEXT},
                    {
                        "type": "toolCall",
                        "id": "evil",
                        "name": f"<img src=x onerror={PWN}>",
                        "arguments": {"command": TEXT},
                    },
                ],
                "provider": f"<b>{PWN}</b>",
                "model": f"<script>{PWN}</script>",
                "timestamp": 2,
            }
        )
        session.append_message(
            {
                "role": "toolResult",
                "toolCallId": "evil",
                "toolName": "bash",
                "content": [{"type": "text", "text": TEXT}],
                "isError": False,
                "timestamp": 3,
            }
        )
        turn = 0
        path = Path(session.get_session_file() or "")
        while len(session.get_entries()) < 2 * HTML_CHUNK + 100:
            call = f"edit-{turn}"
            session.append_message(
                {"role": "user", "content": f"Change greet number {turn}.", "timestamp": 4}
            )
            session.append_message(
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": FILLER},
                        {
                            "type": "toolCall",
                            "id": call,
                            "name": "edit",
                            "arguments": {"path": f"src/greet_{turn}.py", "oldText": OLD, "newText": NEW},
                        },
                    ],
                    "provider": "anthropic",
                    "model": "claude-sonnet-4-5",
                    "timestamp": 5,
                }
            )
            session.append_message(
                {
                    "role": "toolResult",
                    "toolCallId": call,
                    "toolName": "edit",
                    "content": [{"type": "text", "text": "Edited."}],
                    "isError": False,
                    "timestamp": 6,
                }
            )
            turn += 1
        ids = [entry["id"] for entry in session.get_entries()]
    html = export_html(path)
    target = base / "export.html"
    target.write_text(html, encoding="utf-8")
    yield target, ids


def _open(browser: Any, target: Path, scheme: str) -> tuple[Any, Any, list[str]]:
    context = browser.new_context(color_scheme=scheme, viewport={"width": 1360, "height": 900})
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))

    def on_dialog(dialog: Any) -> None:  # an alert() from the session would be a script that ran
        problems.append(f"dialog: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.goto(target.as_uri())
    page.wait_for_selector("html.ready #transcript .entry")
    return context, page, problems


def _go_to(page: Any, key: str) -> None:
    page.evaluate("(key) => { location.hash = '#' + encodeURIComponent(key); }", key)
    page.wait_for_selector(f'#transcript .entry[data-key="{key}"]', state="attached")


#: Every entry's article from the file's blocks, inflated the way the page inflates them.
ALL_KEYS = """async () => {
    const keys = [];
    const blocks = 'script[data-encoding="gzip-base64"][id^="export-html-"]';
    for (const block of document.querySelectorAll(blocks)) {
        const bytes = Uint8Array.from(atob(block.textContent.trim()), c => c.charCodeAt(0));
        const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
        for (const html of JSON.parse(await new Response(stream).text())) {
            const parsed = new DOMParser().parseFromString(html, "text/html");
            keys.push(parsed.querySelector("article").dataset.key);
        }
    }
    return keys;
}"""


def test_the_export_loads_windows_and_draws_diffs_in_both_schemes(
    browser: Any, exported: tuple[Path, list[str]]
) -> None:
    target, ids = exported
    for scheme in ("light", "dark"):
        context, page, problems = _open(browser, target, scheme)
        try:
            assert page.locator("#transcript .entry").count() == 40  # the first window: the leaf's
            assert page.locator("#window-before").is_visible()
            # Scrolling up from the leaf's window loads the window before it.
            page.mouse.move(700, 400)
            for _ in range(4):
                page.mouse.wheel(0, -4000)
                page.wait_for_timeout(200)
            page.wait_for_function("() => document.querySelectorAll('#transcript .entry').length > 40")
            # An edit early in the file: its window comes from an inflated block, its diff highlighted.
            edit = ids[4]
            _go_to(page, edit)
            article = page.locator(f'#transcript .entry[data-key="{edit}"]')
            article.locator("details.toolcall > summary").click()
            rows = article.locator("table.diff tr")
            assert rows.count() >= 6 and article.locator("tr.d-add").count() >= 1
            assert "src/greet_0.py" in article.locator(".diffblock .cap").first.inner_text()
            comment = article.locator("tr.d-add .hl-s2, tr.d-add .hl-sd").first
            keyword = article.locator("tr.d-add .hl-k").first
            colours = page.evaluate(
                "([k, c]) => [getComputedStyle(k).color, getComputedStyle(c).color]",
                [keyword.element_handle(), comment.element_handle()],
            )
            if scheme == "dark":  # github-dark's keyword red and string blue
                assert colours == ["rgb(255, 123, 114)", "rgb(165, 214, 255)"], colours
                keep(page, "export-diff-dark")
            else:  # Pygments' default: green keywords, red strings
                assert colours[0] == "rgb(0, 128, 0)" and colours[1] == "rgb(186, 33, 33)", colours
                keep(page, "export-diff-light")
            assert problems == []
        finally:
            context.close()


def test_every_entry_is_in_the_export_and_hostile_text_stays_text(
    browser: Any, exported: tuple[Path, list[str]]
) -> None:
    target, ids = exported
    context, page, problems = _open(browser, target, "light")
    try:
        assert page.evaluate(ALL_KEYS) == ids  # each entry once, in file order
        hostile = ids[1]
        _go_to(page, hostile)
        article = page.locator(f'#transcript .entry[data-key="{hostile}"]')
        for summary in article.locator("summary").all():
            summary.click()
        text = article.inner_text()
        assert "<script>window.__pwned=1</script>" in text and "onerror" in text
        assert (
            article.locator("script, iframe, svg, img, style, [onerror], [onload], [ontoggle]").count() == 0
        )
        assert article.locator('a[href^="javascript"]').count() == 0
        page.wait_for_timeout(300)  # let any handler that slipped through fire
        assert page.evaluate("window.__pwned") is None
        assert problems == []
        keep(page, "export-hostile")
    finally:
        context.close()
