"""pi's store (``~/.pi/agent/sessions/``): the session format omp grew from (spec Appendix B).

A pi session is already a tree of omp-shaped entries; importing keeps every entry verbatim (ids,
tree, unknown types and fields) and adds what omp needs to read it the same way:

* a ``model_change`` written as ``{provider, modelId}`` also gets omp's ``model: "provider/id"``
  (the original fields stay);
* the last ``session_info`` name becomes the session title (source ``user``, trigger
  ``pi-import``); the ``session_info`` entries stay;
* v1/v2 files are migrated in memory like omp's own (:mod:`omp_session.format.migrate`).

The pi root is ``~/.pi/agent``; ``$PI_CODING_AGENT_DIR`` is *not* read, because omp uses that
variable for its own agent directory.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from omp_session.errors import ForeignSessionError
from omp_session.format.ids import iso_to_ms
from omp_session.format.migrate import migrate_records
from omp_session.importers.base import (
    ConvertedSession,
    ForeignSessionInfo,
    Source,
    WholeSourceConversion,
    ns_to_ms,
)
from omp_session.importers.jsonl import ReadStats, first_record, iter_records, lines_containing

Entry = dict[str, Any]
MODEL_FIELD = "pi.model_field"


def pi_root(env: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if env is None else env
    return Path(environ.get("HOME") or os.path.expanduser("~")) / ".pi" / "agent"


def _model_change(entry: Entry) -> Entry:
    """omp's key order (``type, id, parentId, timestamp, model``) and then pi's own fields."""
    provider, model_id = entry.get("provider"), entry.get("modelId")
    head: Entry = {key: entry[key] for key in ("type", "id", "parentId", "timestamp") if key in entry}
    head["model"] = f"{provider}/{model_id}"
    head.update({key: value for key, value in entry.items() if key not in head})
    return head


_SESSION_INFO = b'"session_info"'  # the type's value, however the writer spaced the line


def session_name(entry: Entry) -> str | None:
    """The name a ``session_info`` entry gives the session (pi's ``/name``), else ``None``."""
    name = entry.get("name")
    return name if entry.get("type") == "session_info" and isinstance(name, str) and name else None


def last_session_name(path: str) -> str | None:
    """The last ``session_info`` name of a pi session, as pi's own listing shows it: a backward
    byte search for the entry's type, only the lines holding it parsed."""
    for line in lines_containing(path, _SESSION_INFO):
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(entry, dict) and (name := session_name(entry)) is not None:
            return name
    return None


def _header(path: str) -> dict[str, Any] | None:
    record = first_record(path)
    return record if record is not None and record.get("type") == "session" else None


class PiSessionStore(WholeSourceConversion):
    """pi sessions under ``<root>/sessions/<encoded cwd>/*.jsonl`` (root default: :func:`pi_root`)."""

    source: Source = "pi"

    def __init__(
        self, root: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None
    ) -> None:
        self.root = Path(root).absolute() if root is not None else pi_root(env).absolute()

    def _files(self) -> list[str]:
        found: list[str] = []
        try:
            projects = sorted(os.scandir(self.root / "sessions"), key=lambda e: e.name)
        except OSError:
            return found
        for project in projects:
            if not project.is_dir():
                continue
            try:
                children = sorted(os.scandir(project.path), key=lambda e: e.name)
            except OSError:
                continue
            found.extend(c.path for c in children if c.name.endswith(".jsonl") and c.is_file())
        return found

    def info_for(self, path: str) -> ForeignSessionInfo:
        """The header's id, cwd and time, and the last ``session_info`` name as the title."""
        absolute = os.path.abspath(path)
        stat = os.stat(absolute)
        header = _header(absolute) or {}
        mtime = ns_to_ms(stat.st_mtime_ns)
        session_id, cwd = header.get("id"), header.get("cwd")
        created = iso_to_ms(header.get("timestamp"))
        return ForeignSessionInfo(
            source="pi",
            id=session_id if isinstance(session_id, str) else Path(absolute).stem,
            path=absolute,
            cwd=cwd if isinstance(cwd, str) else "",
            created_ms=created if created is not None else mtime,
            modified_ms=mtime,
            title=last_session_name(absolute),
        )

    def list(self) -> list[ForeignSessionInfo]:
        infos = []
        for path in self._files():
            try:
                if _header(path) is not None:
                    infos.append(self.info_for(path))
            except OSError:
                continue
        infos.sort(key=lambda info: info.path)
        infos.sort(key=lambda info: info.modified_ms, reverse=True)
        return infos

    def convert(self, info: ForeignSessionInfo, *, lossless: bool = True) -> ConvertedSession:
        stats = ReadStats()
        try:
            records = [record for _, record in iter_records(info.path, stats)]
        except OSError as error:
            raise ForeignSessionError(info.path, f"Unable to read pi session {info.id}: {error}") from error
        if not records or records[0].get("type") != "session":
            raise ForeignSessionError(info.path, f"pi session {info.id} at {info.path} has no session header")
        migrate_records(records)  # v1 ids derived from the header: the same on every import
        header, entries = records[0], records[1:]
        out = ConvertedSession(
            source="pi", cwd=str(header.get("cwd") or info.cwd), entries=[], leaf_id=None, stats=stats
        )
        for entry in entries:
            if entry.get("type") == "model_change" and "model" not in entry and "provider" in entry:
                entry = _model_change(entry)
                out.note(MODEL_FIELD)
            elif (name := session_name(entry)) is not None:
                out.title = name
            out.entries.append(entry)
        last_id = out.entries[-1].get("id") if out.entries else None
        out.leaf_id = last_id if isinstance(last_id, str) else None
        out.title_source = "user"
        out.title_trigger = "pi-import"
        return out


__all__ = ["MODEL_FIELD", "PiSessionStore", "last_session_name", "pi_root", "session_name"]
