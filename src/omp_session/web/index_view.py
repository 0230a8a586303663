"""The index page: sessions filtered by project and full-text search, paged, then grouped by project.

Internal module (part of the viewer, whose API is :mod:`omp_session.web`); not part of the public API.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from omp_session.importers.base import AGENT_NAMES
from omp_session.rendering.format import date_time, format_cost, format_size, one_line
from omp_session.tools.search import SearchHit
from omp_session.web.catalog import SessionSummary
from omp_session.web.foreign import agent_of_ref
from omp_session.web.index_search import SessionHits

__all__ = ["IndexPage", "build_index"]

PAGE_SIZE = 50


@dataclass
class SessionRow:
    ref: str
    title: str
    created: str
    modified: str
    messages: int
    size: str
    cost: str
    forked: bool
    snippet: tuple[str, str, str] | None
    hit_entry: str | None
    hit_count: int
    #: Every further hit, so each one is reachable: ``(entry id, role, snippet parts)``.
    more: list[tuple[str, str, tuple[str, str, str]]] = field(default_factory=list)
    #: The agent that wrote a foreign session ("Claude Code", …); ``None`` for omp's own.
    agent: str | None = None


@dataclass
class ProjectGroup:
    project: str
    cwd: str
    rows: list[SessionRow] = field(default_factory=list)
    hint: str = ""


@dataclass
class ProjectLink:
    project: str
    cwd: str
    count: int
    #: The project's directory name, shown when another project has the same cwd (issue 13 #7).
    hint: str = ""


@dataclass
class IndexPage:
    groups: list[ProjectGroup]
    projects: list[ProjectLink]
    total: int
    matched: int
    page: int
    pages: int
    query: str
    project: str | None


def _snippet(hit: SearchHit) -> tuple[str, str, str]:
    text, start, end = hit.snippet, hit.match_start, hit.match_end
    return text[:start], text[start:end], text[end:]


def _row(summary: SessionSummary, hits: list[SearchHit] | None) -> SessionRow:
    first = hits[0] if hits else None
    return SessionRow(
        ref=summary.ref,
        title=one_line(summary.title, 140),
        created=date_time(summary.created),
        modified=date_time(summary.last_activity),
        messages=summary.message_count,
        size=format_size(summary.size),
        cost=format_cost(summary.cost),
        forked=summary.parent_session is not None,
        snippet=_snippet(first) if first else None,
        hit_entry=first.entry_id if first else None,
        hit_count=sum(hit.matches for hit in hits) if hits else 0,
        more=[(hit.entry_id, hit.role, _snippet(hit)) for hit in (hits or [])[1:]],
        agent=AGENT_NAMES.get(agent_of_ref(summary.ref) or ""),
    )


def _projects(summaries: list[SessionSummary]) -> list[ProjectLink]:
    links: dict[str, ProjectLink] = {}
    for summary in summaries:  # newest first: the first session seen names the project's cwd
        link = links.setdefault(summary.project, ProjectLink(summary.project, summary.cwd or "(root)", 0))
        link.count += 1
    by_cwd = Counter(link.cwd for link in links.values())
    for link in links.values():
        if by_cwd[link.cwd] > 1:
            link.hint = link.project or "(root)"
    return list(links.values())


def build_index(
    summaries: list[SessionSummary],
    search: Callable[[list[SessionSummary], str], list[SessionHits]],
    query: str = "",
    project: str | None = None,
    page: int = 1,
) -> IndexPage:
    """Filter newest-first ``summaries`` by ``project`` and the full-text ``query`` (the CLI's search),
    cut one page, and group that page by project (groups ordered by their newest session)."""
    in_project = [s for s in summaries if project is None or s.project == project]
    found: list[SessionHits] = (
        search(in_project, query) if query.strip() else [SessionHits(s, []) for s in in_project]
    )
    pages = max(1, math.ceil(len(found) / PAGE_SIZE))
    page = min(max(page, 1), pages)
    groups: dict[str, ProjectGroup] = {}
    links = _projects(summaries)
    hints = {link.project: link.hint for link in links}
    for item in found[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]:
        summary = item.summary
        group = groups.setdefault(
            summary.project,
            ProjectGroup(summary.project, summary.cwd or "(root)", hint=hints.get(summary.project, "")),
        )
        group.rows.append(_row(summary, item.hits))
    return IndexPage(
        groups=list(groups.values()),
        projects=links,
        total=len(summaries),
        matched=len(found),
        page=page,
        pages=pages,
        query=query,
        project=project,
    )
