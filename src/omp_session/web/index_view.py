"""The index page: sessions filtered by project and full-text search, grouped by project, then paged.

Sessions are ordered by project (the project with the newest activity first), newest first within
a project, before the page is cut: one project's sessions are never spread over pages between other
projects' (issue 30). A search row embeds at most :data:`MORE_HITS` further hits of its session
and links to the session, where every match is marked, for the rest: a page of results stays small
whatever the query matches.

Internal module (part of the viewer, whose API is :mod:`omp_session.web`); not part of the public API.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Protocol

from omp_session.importers.base import AGENT_NAMES
from omp_session.rendering.format import date_time, format_cost, format_size, one_line
from omp_session.tools.search import SearchHit
from omp_session.web.catalog import SessionSummary
from omp_session.web.foreign import agent_of_ref
from omp_session.web.index_search import SessionHits

__all__ = ["IndexPage", "SearchBox", "build_index"]

PAGE_SIZE = 50
#: Further hits of one session listed in its row; the session page marks every one.
MORE_HITS = 20


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
    #: Occurrences of the query in the session, and the entries holding them (the hits).
    hit_count: int
    hit_entries: int = 0
    #: The next :data:`MORE_HITS` hits, each a link: ``(entry id, role, snippet parts)``; the
    #: session page (linked) marks the ``more_left`` others.
    more: list[tuple[str, str, tuple[str, str, str]]] = field(default_factory=list)
    more_left: int = 0
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
    #: What the narrow sidebar shows: the agent, then the shortest tail of the cwd that no other
    #: project of that agent ends with (``Claude Code · …/work/app``); ``cwd`` is the tooltip.
    label: str = ""


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


class SearchBox(Protocol):
    """The index's search (:class:`~omp_session.web.index_search.CatalogSearch`): which sessions
    match, then the hits of those shown."""

    def matching(self, summaries: list[SessionSummary], query: str) -> list[SessionSummary]: ...
    def hits(self, summaries: list[SessionSummary], query: str) -> list[SessionHits]: ...


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
        hit_entries=len(hits or []),
        more=[(hit.entry_id, hit.role, _snippet(hit)) for hit in (hits or [])[1 : 1 + MORE_HITS]],
        more_left=max(len(hits or []) - 1 - MORE_HITS, 0),
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
    _label(list(links.values()))
    return list(links.values())


def _agent_and_path(link: ProjectLink) -> tuple[str, str]:
    """``("Claude Code · ", "/home/alice/app")`` for another agent's project (its cwd is shown
    with the agent's name), ``("", cwd)`` for omp's own."""
    agent = AGENT_NAMES.get(agent_of_ref(link.project) or "")
    prefix = f"{agent} · " if agent else ""
    return (
        (prefix, link.cwd.removeprefix(prefix)) if prefix and link.cwd.startswith(prefix) else ("", link.cwd)
    )


def _label(links: list[ProjectLink]) -> None:
    """Give each link the shortest tail of its path (two parts at least) that sets it apart from
    every other project of the same agent: the sidebar cuts long names at its edge, so two
    projects under one home directory both read ``Claude Code · /h…`` (issue 30)."""
    split = {id(link): _agent_and_path(link) for link in links}
    parts = {id(link): [p for p in split[id(link)][1].replace("\\", "/").split("/") if p] for link in links}
    for link in links:
        prefix, path = split[id(link)]
        mine = parts[id(link)]
        others = [parts[id(o)] for o in links if o is not link and split[id(o)][0] == prefix]
        size = min(2, len(mine))
        while size < len(mine) and any(other[-size:] == mine[-size:] for other in others):
            size += 1
        tail = "/".join(mine[-size:])
        shortened = size < len(mine)
        link.label = prefix + (("…/" + tail) if shortened else path)


def build_index(
    summaries: list[SessionSummary],
    search: SearchBox,
    query: str = "",
    project: str | None = None,
    page: int = 1,
) -> IndexPage:
    """Filter newest-first ``summaries`` by ``project`` and the full-text ``query`` (the CLI's search),
    order them by project (the project of the newest session first, each project's sessions
    together, newest first), cut one page and group it by project. Only the page's sessions have
    their hits made."""
    searched = search.matching(summaries, query) if query.strip() else summaries
    in_project = [s for s in searched if project is None or s.project == project]
    rank: dict[str, int] = {}
    for summary in in_project:  # newest first: a project ranks by its newest session
        rank.setdefault(summary.project, len(rank))
    # A new list (the search's may be shared by the clients asking the same); the sort is stable,
    # so each project's sessions stay newest first.
    found = sorted(in_project, key=lambda summary: rank[summary.project])
    pages = max(1, math.ceil(len(found) / PAGE_SIZE))
    page = min(max(page, 1), pages)
    shown = found[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
    hits = {item.summary.ref: item.hits for item in search.hits(shown, query)} if query.strip() else {}
    groups: dict[str, ProjectGroup] = {}
    links = _projects(summaries)
    hints = {link.project: link.hint for link in links}
    for summary in shown:
        group = groups.setdefault(
            summary.project,
            ProjectGroup(summary.project, summary.cwd or "(root)", hint=hints.get(summary.project, "")),
        )
        group.rows.append(_row(summary, hits.get(summary.ref) if query.strip() else None))
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
