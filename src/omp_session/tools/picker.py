"""What ``omp-session pick`` shows: the sessions matching what the user typed, a transcript
preview of one, and the command that resumes it (issue 30 #4). No terminal code here: the picker's
Textual app (``cli/pick.py``) only lays these out.

Matching: a session matches when every word typed is in its title, first prompt, cwd or id
(case-insensitively), or when the store catalog's full-text index says its entries hold the whole
query (``catalog_search.candidate_paths``, the index ``search`` uses; queries too short for the
index match on the listing's fields only).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from omp_session.store import SessionStorage
from omp_session.store.listing import SessionInfo
from omp_session.tools.catalog import Catalog
from omp_session.tools.catalog_search import candidate_paths, needles_of
from omp_session.tools.summary import one_line
from omp_session.tools.transcript import load_transcript

__all__ = ["PickRow", "matching", "pick_rows", "preview", "resume_command"]


@dataclass(frozen=True)
class PickRow:
    """One session of the picker's list."""

    path: str
    session_id: str
    title: str
    cwd: str
    when: str

    @property
    def fields(self) -> str:
        """What typed words are looked for in, lower-cased."""
        return f"{self.title}\n{self.cwd}\n{self.session_id}".lower()


def pick_rows(infos: Sequence[SessionInfo]) -> list[PickRow]:
    """The listing's sessions as rows, in its order (newest first)."""
    return [
        PickRow(
            path=info.path,
            session_id=info.id,
            title=one_line(info.title or info.first_prompt or info.first_message or "", 200) or "(untitled)",
            cwd=info.cwd,
            when=(info.last_activity or info.modified).strftime("%Y-%m-%d %H:%M"),
        )
        for info in infos
    ]


def matching(rows: Sequence[PickRow], query: str, catalog: Catalog | None) -> list[PickRow]:
    """The rows matching ``query`` (see the module's docstring), order kept; all for an empty one.
    Brings the catalog up to date for the sessions it looks at (its only write)."""
    words = query.lower().split()
    if not words:
        return list(rows)
    by_fields = {row.path for row in rows if all(word in row.fields for word in words)}
    by_text: set[str] = set()
    if catalog is not None and needles_of(query, regex=False):
        paths = [Path(row.path) for row in rows]
        found = candidate_paths(paths, query, regex=False, catalog=catalog)
        if len(found) < len(paths):  # all of them: the index could not answer
            by_text = {os.fspath(path) for path in found}
    return [row for row in rows if row.path in by_fields or row.path in by_text]


def preview(
    path: str, *, limit: int = 60, width: int = 400, storage: SessionStorage | None = None
) -> list[tuple[str, str]]:
    """The last ``limit`` items of the current branch of the session (a file, else a row of
    ``storage``) as ``(kind, one-line text)`` (the kind in words: ``branch summary``, ``tool
    result``), import bookkeeping left out, each text cut to ``width`` characters."""
    transcript = load_transcript(path, all_entries=False, storage=storage)
    items = [item for branch in transcript.branches for item in branch.items]
    lines: list[tuple[str, str]] = []
    for item in items[-limit:]:
        text = item.text or item.summary or item.title or ""
        if item.kind == "assistant" and not text:
            calls = [part.tool_call.name for part in item.parts if part.tool_call is not None]
            text = "→ " + ", ".join(calls) if calls else ""
        if text:
            lines.append((item.kind.replace("_", " "), one_line(text, width)))
    return lines


def resume_command(row: PickRow) -> list[str]:
    """omp's own way back into a session: ``omp --resume <id>``."""
    return ["omp", "--resume", row.session_id]
