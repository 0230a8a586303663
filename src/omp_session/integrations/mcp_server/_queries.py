"""What the MCP tools answer, as plain JSON-shaped dicts (no ``mcp`` import here).

Every answer is bounded: lists come in pages (``limit`` items and a ``nextCursor`` to continue, or
``None`` at the end) and long texts are cut at ``max_chars`` with ``"truncated": true`` beside them.
Everything only reads: sessions are opened read-only and no listing cache is written.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omp_session.format.codec import encode_json
from omp_session.model.llm import convert_to_llm
from omp_session.store import SessionStorage
from omp_session.store.listing import SessionInfo
from omp_session.tools.listing import list_all_sessions, list_sessions
from omp_session.tools.reading import read_session, resolve_entry, session_context
from omp_session.tools.resolve import project_dir, resolve_session
from omp_session.tools.search import compile_query, entry_text, search_sessions
from omp_session.tools.stats import session_stats
from omp_session.tools.summary import entry_summary
from omp_session.tools.usage_report import VIEWS, usage_report

__all__ = ["MAX_LIMIT", "SessionQueries"]

#: The most items one page may hold, whatever the caller asks for.
MAX_LIMIT = 200


def _limit(value: int) -> int:
    if value < 1:
        raise ValueError("limit must be at least 1")
    return min(value, MAX_LIMIT)


def _offset(cursor: str | None) -> int:
    if cursor in (None, ""):
        return 0
    try:
        offset = int(str(cursor))
    except ValueError:
        raise ValueError(f"invalid cursor {cursor!r}") from None
    if offset < 0:
        raise ValueError(f"invalid cursor {cursor!r}")
    return offset


def _page(items: Iterable[Any], cursor: str | None, limit: int) -> tuple[list[Any], str | None]:
    """One page of ``items`` from the cursor's offset, and the cursor of the next page."""
    offset = _offset(cursor)
    size = _limit(limit)
    page: list[Any] = []
    for index, item in enumerate(items):
        if index < offset:
            continue
        if len(page) == size:
            return page, str(offset + size)
        page.append(item)
    return page, None


def _cut(text: str, max_chars: int) -> tuple[str, bool]:
    if max_chars < 1:
        raise ValueError("max_chars must be at least 1")
    return (text, False) if len(text) <= max_chars else (text[:max_chars], True)


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


@dataclass(frozen=True)
class SessionQueries:
    """The read-only questions the MCP server answers, over the sessions under ``root``.

    ``active_seconds``: a session whose file changed less than this many seconds ago counts as
    still being written; the listing and search tools leave it out when asked to
    (``exclude_active``).
    """

    root: Path
    active_seconds: float = 60.0
    #: Where the sessions live (``None``: files under the root; the command line's ``--store``).
    storage: SessionStorage | None = None

    # ----------------------------------------------------------------- sessions

    def _infos(self, project: str | None, exclude_active: bool) -> list[SessionInfo]:
        infos: list[SessionInfo] = list(
            list_sessions(project_dir(project, self.root), storage=self.storage)
            if project
            else list_all_sessions(self.root, storage=self.storage)
        )
        if exclude_active:
            cutoff = time.time() - self.active_seconds
            infos = [info for info in infos if info.modified.timestamp() < cutoff]
        return infos

    def _resolve(self, session: str) -> Path:
        return resolve_session(session, self.root, cwd=os.fspath(self.root), storage=self.storage)

    def list_sessions(
        self,
        project: str | None = None,
        limit: int = 20,
        cursor: str | None = None,
        exclude_active: bool = False,
    ) -> dict[str, Any]:
        """Sessions newest first: id, path, cwd, title, times, message count, cost, first prompt."""
        page, next_cursor = _page(self._infos(project, exclude_active), cursor, limit)
        sessions = []
        for info in page:
            first, cut = _cut(info.first_prompt or info.first_message, 200)
            sessions.append(
                {
                    "id": info.id,
                    "path": info.path,
                    "cwd": info.cwd,
                    "title": info.title,
                    "created": _iso(info.created),
                    "modified": _iso(info.modified),
                    "lastActivity": _iso(info.last_activity),
                    "messageCount": info.message_count,
                    "cost": info.cost,
                    "firstPrompt": first,
                    "firstPromptTruncated": cut,
                    "parentSessionPath": info.parent_session_path,
                }
            )
        return {"sessions": sessions, "nextCursor": next_cursor}

    def search_sessions(
        self,
        query: str,
        regex: bool = False,
        project: str | None = None,
        limit: int = 20,
        cursor: str | None = None,
        exclude_active: bool = False,
    ) -> dict[str, Any]:
        """Entries whose text matches ``query`` (literal words, or a regular expression), newest
        sessions first; each hit names its session, entry, role, branch and a snippet."""
        pattern = compile_query(query, regex=regex)
        paths = [info.path for info in self._infos(project, exclude_active)]
        hits: Iterator[Any] = (hit.to_dict() for hit in search_sessions(paths, pattern, storage=self.storage))
        page, next_cursor = _page(hits, cursor, limit)
        return {"hits": page, "nextCursor": next_cursor}

    def session_overview(self, session: str) -> dict[str, Any]:
        """One session: header facts, entry count, current leaf, each branch's totals, labels."""
        path = self._resolve(session)
        stats = session_stats(path, storage=self.storage).to_dict()
        with read_session(path, storage=self.storage) as opened:
            header = opened.get_header()
            entries = opened.get_entries()
            labels = {
                str(entry.get("targetId")): entry.get("label")
                for entry in entries
                if entry.get("type") == "label" and entry.get("label")
            }
            models = sorted(
                {
                    f"{message.get('provider')}/{message.get('model')}"
                    for entry in entries
                    if entry.get("type") == "message"
                    and isinstance(message := entry.get("message"), Mapping)
                    and message.get("role") == "assistant"
                }
            )
            return {
                "id": opened.get_session_id(),
                "path": os.fspath(path),
                "cwd": header.get("cwd"),
                "created": header.get("timestamp"),
                "title": stats["title"],
                "parentSession": stats["parentSession"],
                "entryCount": len(entries),
                "leafId": opened.get_leaf_id(),
                "models": models,
                "labels": labels,
                "total": stats["total"],
                "branches": stats["branches"][:50],
                "branchCount": len(stats["branches"]),
            }

    # ----------------------------------------------------------------- one branch

    def get_messages(
        self,
        session: str,
        entry: str | None = None,
        before: int = 10,
        after: int = 10,
        max_chars: int = 2000,
    ) -> dict[str, Any]:
        """The entries of one branch around ``entry`` (default: the current leaf).

        The branch is the path from the root through ``entry`` to the newest leaf below it, so the
        answer shows what came before the entry and what followed on that branch.
        """
        path = self._resolve(session)
        with read_session(path, storage=self.storage) as opened:
            anchor = resolve_entry(opened, entry) if entry is not None else opened.get_leaf_id()
            if anchor is None:
                return {
                    "sessionId": opened.get_session_id(),
                    "entries": [],
                    "hasMoreBefore": False,
                    "hasMoreAfter": False,
                    "anchorId": None,
                    "leafId": None,
                }
            leaf = _newest_leaf_below(opened, anchor)
            branch = list(opened.get_branch(leaf))
            position = next(i for i, item in enumerate(branch) if item.get("id") == anchor)
            start = max(0, position - max(0, before))
            end = min(len(branch), position + max(0, after) + 1)
            window = branch[start:end][:MAX_LIMIT]
            return {
                "sessionId": opened.get_session_id(),
                "anchorId": anchor,
                "leafId": leaf,
                "onCurrentBranch": leaf == opened.get_leaf_id(),
                "entries": [_entry_view(item, max_chars) for item in window],
                "hasMoreBefore": start > 0,
                "hasMoreAfter": end < len(branch),
            }

    def context_at(
        self,
        session: str,
        entry: str,
        llm: bool = True,
        offset: int = 0,
        limit: int = 50,
        max_chars: int = 4000,
    ) -> dict[str, Any]:
        """The context the model saw at ``entry``: omp's built context with that entry as the leaf
        (compaction, branch summaries and omp's message conversion applied), as LLM messages or,
        with ``llm=False``, agent messages. Paged by message; long texts are cut."""
        path = self._resolve(session)
        with read_session(path, storage=self.storage) as opened:
            entry_id = resolve_entry(opened, entry)
        built = session_context(path, leaf_id=entry_id, storage=self.storage)
        messages = convert_to_llm(built.messages) if llm else built.messages
        page, next_cursor = _page(messages, str(offset), limit)
        return {
            "entryId": entry_id,
            "messageCount": len(messages),
            "thinkingLevel": built.thinking_level,
            "models": built.models,
            "messages": [_bounded(message, max_chars) for message in page],
            "nextOffset": int(next_cursor) if next_cursor is not None else None,
        }

    # ----------------------------------------------------------------- usage

    def usage_summary(
        self,
        session: str | None = None,
        view: str = "session",
        project: str | None = None,
        limit: int = 20,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """Tokens and cost by ``view`` (daily, monthly, session, model, project) of one session or
        of every session (of ``project`` when given); rows paged, the total of all rows included."""
        if view not in VIEWS:
            raise ValueError(f"unknown view {view!r}: one of {', '.join(VIEWS)}")
        paths: Sequence[Path | str] = (
            [self._resolve(session)] if session else [info.path for info in self._infos(project, False)]
        )
        report = usage_report(paths, view, storage=self.storage).to_dict()
        rows, next_cursor = _page(report["rows"], cursor, limit)
        return {
            "view": view,
            "rows": rows,
            "total": report["total"],
            "nextCursor": next_cursor,
            "skipped": report["skipped"][:20],
        }


def _newest_leaf_below(opened: Any, anchor: str) -> str:
    """The current leaf when ``anchor`` is on the current branch, else the newest leaf below it."""
    current = opened.get_leaf_id()
    if current is not None and any(item.get("id") == anchor for item in opened.get_branch(current)):
        return str(current)
    order = {str(item.get("id")): index for index, item in enumerate(opened.get_entries())}
    best = anchor
    stack = [anchor]
    while stack:
        node = stack.pop()
        children = [str(child.get("id")) for child in opened.get_children(node)]
        if not children and order.get(node, -1) > order.get(best, -1):
            best = node
        stack.extend(children)
    return best


def _entry_view(entry: dict[str, Any], max_chars: int) -> dict[str, Any]:
    found = entry_text(entry)
    if found is not None:
        role, text = found
    else:
        summary = entry_summary(entry)
        role, text = summary.kind, summary.text
    body, cut = _cut(text, max_chars)
    view: dict[str, Any] = {
        "id": entry.get("id"),
        "parentId": entry.get("parentId"),
        "type": entry.get("type"),
        "role": role,
        "timestamp": entry.get("timestamp"),
        "text": body,
    }
    if cut:
        view["truncated"] = True
    return view


def _bounded(value: Any, max_chars: int) -> Any:
    """``value`` with every string longer than ``max_chars`` cut (and the object marked)."""
    if isinstance(value, str):
        return _cut(value, max_chars)[0]
    if isinstance(value, list):
        return [_bounded(item, max_chars) for item in value]
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        cut = False
        for key, item in value.items():
            if isinstance(item, str) and len(item) > max_chars:
                cut = True
            out[key] = _bounded(item, max_chars)
        if cut:
            out["truncated"] = True
        return out
    return value


def json_text(value: Any) -> str:
    return encode_json(value).decode("utf-8")
