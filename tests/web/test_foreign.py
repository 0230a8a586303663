"""Other agents' sessions in the viewer: listed beside omp's, marked, searchable, importable by POST.

A real server over real fixture stores of Claude Code, Codex and pi (the importer corpus), and
Debian's Chromium for the page itself.
"""

from __future__ import annotations

import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from omp_session import SessionManager
from omp_session.importers import SOURCES
from omp_session.importers.stores import make_store
from tests.importers.helpers import stage_all

from .support import running_viewer, screenshot, snapshot


@dataclass
class Agents:
    url: str
    root: Path
    home: Path


@pytest.fixture
def agents(tmp_path: Path) -> Iterator[Agents]:
    """The viewer over the agents' fixture stores."""
    home = tmp_path / "home"
    home.mkdir()
    stage_all(home)
    root = tmp_path / "sessions"
    (root / "-w").mkdir(parents=True)
    with SessionManager.create("/w", root / "-w") as own:
        own.append_message({"role": "user", "content": "an omp session of my own", "timestamp": 1})
        own.append_message(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "ok"}],
                "api": "x",
                "provider": "p",
                "model": "m",
                "usage": {},
                "stopReason": "stop",
                "timestamp": 2,
            }
        )
    stores = [make_store(source, env={"HOME": str(home)}) for source in SOURCES]
    with running_viewer(root, foreign_stores=stores) as url:
        yield Agents(url, root, home)


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as response:
        return str(response.read().decode("utf-8"))


def _post(url: str, data: dict[str, str], headers: dict[str, str] | None = None) -> tuple[int, str, str]:
    request = urllib.request.Request(url, data=urllib.parse.urlencode(data).encode(), headers=headers or {})

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, response.headers.get("location", ""), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("location", ""), error.read().decode()


def _foreign_refs(index: str) -> list[str]:
    return [urllib.parse.unquote(r) for r in re.findall(r'href="/session/(%40[^"#]+)"', index)]


def test_index_lists_every_agent_beside_omp(agents: Agents) -> None:
    index = _get(agents.url + "/")
    refs = _foreign_refs(index)
    assert sorted({ref.split("/")[0] for ref in refs}) == ["@claude", "@codex", "@pi"]
    assert len(refs) == 3 + 2 + 1
    assert "an omp session of my own" in index
    for name in ("Claude Code", "Codex", "pi"):
        assert f'<span class="badge agent">{name}</span>' in index
    assert "Claude Code · /home/alice/work/app" in index


def test_search_reaches_foreign_sessions(agents: Agents) -> None:
    found = _get(agents.url + "/?q=" + urllib.parse.quote("The router, please"))
    assert [ref.split("/")[0] for ref in _foreign_refs(found)] == ["@claude"]
    found = _get(agents.url + "/?q=gardening")
    assert [ref.split("/")[0] for ref in _foreign_refs(found)] == ["@pi"]


def test_foreign_page_and_guarded_import(agents: Agents) -> None:
    sources_before = snapshot(agents.home)
    ref = next(r for r in _foreign_refs(_get(agents.url + "/")) if r.startswith("@claude/"))
    page = _get(agents.url + "/session/" + urllib.parse.quote(ref))
    assert 'id="window-data"' in page
    assert '<span class="badge agent"' in page and "Import into omp" in page
    assert "Copy resume command" not in page  # omp --resume would not find another agent's session
    token = re.search(r'name="token" value="([^"]+)"', page)
    assert token is not None
    action = agents.url + "/api/import/" + urllib.parse.quote(ref)
    assert _post(action, {"token": "wrong"})[0] == 403
    assert _post(action, {"token": token.group(1)}, {"Origin": "http://evil.example"})[0] == 403
    assert _post(action, {"token": token.group(1)}, {"Sec-Fetch-Site": "cross-site"})[0] == 403
    assert _post(agents.url + "/api/window/" + urllib.parse.quote(ref), {"token": token.group(1)})[0] == 405
    before = set(agents.root.rglob("*.jsonl"))
    status, location, _ = _post(action, {"token": token.group(1)}, {"Origin": agents.url})
    assert status == 303 and location.startswith("/session/") and "imported=imported" in location
    created = set(agents.root.rglob("*.jsonl")) - before
    assert len(created) == 1
    with SessionManager.open(created.pop()) as imported:
        assert imported.get_entries()[-1]["customType"] == "foreign_session_import"
    status, again, _ = _post(action, {"token": token.group(1)}, {"Origin": agents.url})
    assert status == 303 and again.split("?")[0] == location.split("?")[0] and "unchanged" in again
    assert snapshot(agents.home) == sources_before  # the agents' own files are never written


def test_foreign_session_in_chromium(agents: Agents, strict_page: Any) -> None:
    page = strict_page
    page.goto(agents.url + "/")
    page.wait_for_selector(".badge.agent")
    assert page.locator(".badge.agent", has_text="Codex").count() == 2
    page.fill("input[name=q]", "gardening")
    page.click("form.search button")
    page.wait_for_selector("a.session-link")
    assert page.locator("a.session-link").count() == 1
    page.click("a.session-link")
    page.wait_for_selector("html.ready")
    assert page.locator(".topbar .badge.agent").inner_text() == "pi"
    assert "A second answer." in page.locator("#transcript").text_content()
    screenshot(page, "foreign-pi-session")
    page.click("form.import button")
    page.wait_for_url(re.compile(r"/session/[^@]+\?imported=imported"))
    page.wait_for_selector("html.ready")
    assert page.locator(".topbar .badge.agent").count() == 0  # now an omp session of its own
    assert "A second answer." in page.locator("#transcript").text_content()
    screenshot(page, "foreign-pi-imported")
