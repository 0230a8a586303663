"""The index's search rows, sidebar and paging (issue 30, viewer rows of its table): counts that
agree, a capped list of further hits with a link to the rest, projects told apart by the tail of
their path, and one project's sessions kept together across pages. A real server, and Debian's
Chromium for the sidebar."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from omp_session.importers.stores import make_store
from omp_session.web.catalog import SessionCatalog
from omp_session.web.index_search import CatalogSearch
from omp_session.web.index_view import MORE_HITS, PAGE_SIZE, ProjectLink, _label, build_index
from tests.foreign_edits import claude_records

from .support import running_viewer, write_session

SCREENS = Path("/tmp/omp-screens")


def _session(path: Path, cwd: str, texts: list[str], minute: int = 0) -> Path:
    stamp = f"2025-06-02T14:{minute:02d}"
    records: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": path.stem, "timestamp": f"{stamp}:00.000Z", "cwd": cwd}
    ]
    for number, text in enumerate(texts):
        records.append(
            {
                "type": "message",
                "id": f"e{number}",
                "parentId": f"e{number - 1}" if number else None,
                "timestamp": f"{stamp}:{number % 60:02d}.000Z",
                "message": {"role": "user", "content": text},
            }
        )
    return write_session(path, records)


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=60) as response:
        return str(response.read().decode("utf-8"))


def test_a_search_row_counts_alike_and_lists_a_few_hits(page: Any, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    entries = 3 * MORE_HITS
    _session(root / "-w" / "many.jsonl", "/w", [f"needle {n} and needle again" for n in range(entries)])
    _session(root / "-w" / "one.jsonl", "/w", ["a single needle here"], minute=1)
    with running_viewer(root) as url:
        html = _get(url + "/?q=needle")
        page.goto(url + "/?q=needle")
        row = page.locator("table.sessions tbody tr", has_text="needle 0 and")
        row.locator("details.more-hits > summary").click()
        assert row.locator("details.more-hits li a").count() == MORE_HITS
        assert row.locator(".more-left a").is_visible()
        SCREENS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENS / "search-row-counts.png"), full_page=True)
    rows = html.split('<tr>\n            <td class="t">')[1:]
    many = next(row for row in rows if "needle 0 and" in row)
    matches = re.search(r'<span class="hits">· ([\d,]+) matches in ([\d,]+) entries</span>', many)
    assert matches is not None and matches.groups() == (str(2 * entries), str(entries))
    summary = re.search(r"<summary>(.*?)</summary>", many)
    assert (
        summary is not None and summary.group(1) == f"{entries - 1} more entries with a match in this session"
    )
    assert many.count("<li>") == MORE_HITS  # the page embeds a few, not every hit
    rest = entries - 1 - MORE_HITS
    assert f"{rest} more: open the session, every match marked →" in many
    assert re.search(r'class="more-left"><a href="/session/-w/many.jsonl\?q=needle">', many)
    single = next(row for row in rows if "a single" in row)
    assert '<span class="hits">' not in single and "more-hits" not in single


def test_one_projects_sessions_stay_together_across_pages(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    # Two projects whose sessions alternate in time: paging by activity alone split both.
    for number in range(PAGE_SIZE + 10):
        project = "-a" if number % 2 else "-b"
        _session(root / project / f"s{number:03d}.jsonl", f"/{project[1:]}", [f"turn {number}"], number)
    summaries = SessionCatalog(root).sessions()
    pages = [build_index(summaries, CatalogSearch(), page=n) for n in (1, 2)]
    order = [(g.project, r.title) for p in pages for g in p.groups for r in g.rows]
    projects = [project for project, _ in order]
    assert projects == sorted(projects, key=projects.index)  # each project one block
    assert projects[0] == "-a"  # the project of the newest session first
    titles = [title for project, title in order if project == "-a"]
    assert titles == sorted(titles, key=lambda t: -int(t.split()[1]))  # newest first within it
    assert [g.project for g in pages[1].groups] == ["-b"]  # page 2 only continues the last one


def test_projects_are_told_apart_by_the_tail_of_their_path() -> None:
    links = [
        ProjectLink("@claude/--home-alice-work-app--", "Claude Code · /home/alice/work/app", 1),
        ProjectLink("@claude/--home-alice-work-api--", "Claude Code · /home/alice/work/api", 1),
        ProjectLink("@claude/--home-bob-work-app--", "Claude Code · /home/bob/work/app", 1),
        ProjectLink("@codex/--home-alice-work-app--", "Codex · /home/alice/work/app", 1),
        ProjectLink("--srv--", "/srv", 1),
        ProjectLink("--home-ada-projects-shop-api--", "/home/ada/projects/shop-api", 1),
    ]
    _label(links)
    assert [link.label for link in links] == [
        "Claude Code · …/alice/work/app",
        "Claude Code · …/work/api",
        "Claude Code · …/bob/work/app",
        "Codex · …/work/app",
        "/srv",
        "…/projects/shop-api",
    ]


@pytest.fixture
def two_claude_projects(tmp_path: Path) -> Iterator[str]:
    home = tmp_path / "home"
    for name in ("app", "api"):
        lines = [
            json.dumps(r).replace("/home/alice/work/app", f"/home/alice/work/{name}")
            for r in claude_records()
        ]
        text = "\n".join(lines).replace("0000000000e1", f"0000000000{'e1' if name == 'app' else 'e2'}")
        target = home / ".claude" / "projects" / f"-home-alice-work-{name}" / f"{name}.jsonl"
        target.parent.mkdir(parents=True)
        target.write_text(text + "\n", encoding="utf-8")
    (tmp_path / "sessions").mkdir()
    stores = [make_store("claude", env={"HOME": str(home)})]
    with running_viewer(tmp_path / "sessions", foreign_stores=stores) as url:
        yield url


def test_the_sidebar_names_two_claude_projects_apart(page: Any, two_claude_projects: str) -> None:
    page.goto(two_claude_projects + "/")
    names = page.locator("nav.projects li a .name")
    shown = names.all_inner_texts()
    assert shown[0] == "All projects"
    assert sorted(shown[1:]) == ["Claude Code · …/work/api", "Claude Code · …/work/app"]
    # Each label fits the sidebar: nothing cut at its edge.
    assert page.evaluate(
        "[...document.querySelectorAll('nav.projects .name')].every(n => n.scrollWidth <= n.clientWidth)"
    )
    titles = page.locator("nav.projects li a").evaluate_all("links => links.slice(1).map(a => a.title)")
    assert sorted(titles) == ["Claude Code · /home/alice/work/api", "Claude Code · /home/alice/work/app"]
    SCREENS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENS / "index-two-claude-projects.png"))
