"""Codex's store: discovery and listing (spec importers §2.1).

The newest ``state_<N>.sqlite`` under the root (``~/.codex``) answers when it lists any thread;
otherwise every ``*.jsonl`` under ``sessions/``, ``.sessions/`` and ``archived_sessions/`` whose
first record is a ``session_meta`` with a cwd, titled from ``session_index.jsonl``. Listing reads
the database, the index and each rollout's first record only.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Mapping
from pathlib import Path

from omp_session.importers.base import (
    ConvertedSession,
    ForeignSessionInfo,
    Source,
    WholeSourceConversion,
    ns_to_ms,
)
from omp_session.importers.codex_convert import convert_codex
from omp_session.importers.codex_items import timestamp_ms
from omp_session.importers.jsonl import first_record, iter_records

_STATE_DB = re.compile(r"^state_(\d+)\.sqlite$")
_ROLLOUT_ID = re.compile(r"([0-9a-f]{8}-[0-9a-f-]{27})\.jsonl$", re.IGNORECASE)
_ROLLOUT_DIRS = ("sessions", ".sessions", "archived_sessions")


def state_database(root: Path) -> Path | None:
    """The newest ``state_<N>.sqlite`` of a Codex home, from which Codex (and omp) list threads."""
    try:
        names = os.listdir(root)
    except OSError:
        return None
    versions = [(int(m.group(1)), name) for name in names if (m := _STATE_DB.match(name))]
    return root / max(versions)[1] if versions else None


def codex_root(env: Mapping[str, str] | None = None) -> Path:
    """``~/.codex`` (omp does not read ``$CODEX_HOME``, spec §2.1)."""
    environ = os.environ if env is None else env
    return Path(environ.get("HOME") or os.path.expanduser("~")) / ".codex"


def rollout_id(path: str) -> str:
    match = _ROLLOUT_ID.search(path)
    return match.group(1) if match else os.path.basename(path)[: -len(".jsonl")]


def _epoch(value: object, fallback: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return fallback
    return value * 1000 if value < 10_000_000_000 else value


def _sorted(infos: list[ForeignSessionInfo]) -> list[ForeignSessionInfo]:
    infos.sort(key=lambda info: info.id)
    infos.sort(key=lambda info: info.modified_ms, reverse=True)
    return infos


class CodexSessionStore(WholeSourceConversion):
    """Codex rollouts under ``root`` (default: :func:`codex_root`)."""

    source: Source = "codex"

    def __init__(
        self, root: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None
    ) -> None:
        self.root = Path(root).absolute() if root is not None else codex_root(env).absolute()

    def _state_db(self) -> Path | None:
        return state_database(self.root)

    def _from_database(self, path: Path) -> list[ForeignSessionInfo]:
        query = "SELECT id, rollout_path, created_at, updated_at, cwd, title, first_user_message FROM threads"
        try:
            with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True) as connection:
                rows = connection.execute(query).fetchall()
        except sqlite3.Error:
            return []  # an older schema: fall back to the rollout files
        infos = []
        for thread_id, rollout, created, updated, cwd, title, first in rows:
            if not thread_id or not rollout or not cwd:
                continue
            modified = _epoch(updated, 0)
            infos.append(
                ForeignSessionInfo(
                    source="codex",
                    id=str(thread_id),
                    path=rollout if os.path.isabs(rollout) else str(self.root / rollout),
                    cwd=str(cwd),
                    created_ms=_epoch(created, modified),
                    modified_ms=modified,
                    title=title if isinstance(title, str) else None,
                    first_message=first if isinstance(first, str) else None,
                )
            )
        return _sorted(infos)

    def _index(self) -> dict[str, tuple[str, str]]:
        index: dict[str, tuple[str, str]] = {}
        try:
            for _, record in iter_records(self.root / "session_index.jsonl"):
                thread_id, name, updated = (
                    record.get("id"),
                    record.get("thread_name"),
                    record.get("updated_at"),
                )
                strings = isinstance(thread_id, str) and isinstance(name, str) and isinstance(updated, str)
                if strings and thread_id and name and updated:
                    index[thread_id] = (name, updated)
        except OSError:
            pass
        return index

    def _rollouts(self) -> list[str]:
        files: list[str] = []
        for name in _ROLLOUT_DIRS:
            for directory, _, filenames in os.walk(self.root / name):
                files.extend(os.path.join(directory, f) for f in sorted(filenames) if f.endswith(".jsonl"))
        return files

    def _info(self, path: str, index: dict[str, tuple[str, str]]) -> ForeignSessionInfo | None:
        first = first_record(path)
        if first is None or first.get("type") != "session_meta" or not isinstance(first.get("payload"), dict):
            return None
        payload = first["payload"]
        cwd = payload.get("cwd")
        if not isinstance(cwd, str) or not cwd:
            return None
        thread_id = payload.get("id") if isinstance(payload.get("id"), str) else rollout_id(path)
        stat = os.stat(path)
        created = payload.get("timestamp") if isinstance(payload.get("timestamp"), str) else None
        indexed = index.get(thread_id)
        mtime = ns_to_ms(stat.st_mtime_ns)
        return ForeignSessionInfo(
            source="codex",
            id=thread_id,
            path=path,
            cwd=cwd,
            created_ms=timestamp_ms(created, ns_to_ms(stat.st_ctime_ns)),
            modified_ms=timestamp_ms(indexed[1], mtime) if indexed else mtime,
            title=indexed[0] if indexed else None,
        )

    def list(self) -> list[ForeignSessionInfo]:
        database = self._state_db()
        if database is not None:
            infos = self._from_database(database)
            if infos:
                return infos
        index = self._index()
        found = []
        for path in self._rollouts():
            try:
                info = self._info(path, index)
            except OSError:
                continue
            if info is not None:
                found.append(info)
        return _sorted(found)

    def info_for(self, path: str) -> ForeignSessionInfo:
        """The info of one rollout; a rollout omp would not list gets its file's facts (spec §2.1)."""
        absolute = os.path.abspath(path)
        info = self._info(absolute, self._index())
        if info is not None:
            return info
        stat = os.stat(absolute)
        mtime = ns_to_ms(stat.st_mtime_ns)
        return ForeignSessionInfo(
            source="codex",
            id=rollout_id(absolute),
            path=absolute,
            cwd=os.getcwd(),
            created_ms=mtime,
            modified_ms=mtime,
        )

    def convert(self, info: ForeignSessionInfo, *, lossless: bool = True) -> ConvertedSession:
        return convert_codex(info, lossless=lossless)


__all__ = ["CodexSessionStore", "codex_root", "rollout_id", "state_database"]
