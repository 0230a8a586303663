"""Listing sessions (spec §6.9): ``SessionInfo`` for every valid session file of a directory."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .codec import decode_lines
from .ids import iso_to_ms
from .loading import is_session_header, read_header
from .paths import sessions_root


@dataclass
class SessionInfo:
    """What a session list shows. ``modified`` is the file's mtime, as in omp 13.19.0."""

    path: str
    id: str
    cwd: str
    title: str | None
    parent_session_path: str | None
    created: datetime | None
    modified: datetime
    message_count: int
    first_message: str
    all_messages_text: str

    def to_dict(self) -> dict[str, Any]:
        """omp's camelCase JSON shape (dates as ISO strings; absent optional keys omitted)."""
        out: dict[str, Any] = {"path": self.path, "id": self.id, "cwd": self.cwd}
        if self.title is not None:
            out["title"] = self.title
        if self.parent_session_path is not None:
            out["parentSessionPath"] = self.parent_session_path
        out["created"] = _iso(self.created)
        out["modified"] = _iso(self.modified)
        out["messageCount"] = self.message_count
        out["firstMessage"] = self.first_message
        out["allMessagesText"] = self.all_messages_text
        return out


def _iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return (
        moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    )


def message_text(message: dict[str, Any]) -> str:
    """String content, or the text blocks joined by a single space."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return " ".join(t for t in texts if isinstance(t, str))
    return ""


def summarize_records(path: Path, records: list[dict[str, Any]], mtime: float) -> SessionInfo | None:
    """A ``SessionInfo`` from decoded records (header first), or ``None`` if not a session."""
    if not records or not is_session_header(records[0]) or not records[0].get("id"):
        return None
    header = records[0]
    title = header.get("title") if isinstance(header.get("title"), str) else None
    count, first, texts = 0, None, []
    for record in records[1:]:
        kind = record.get("type")
        if (
            kind == "compaction"
            and header.get("title") is None
            and isinstance(record.get("shortSummary"), str)
        ):
            title = record["shortSummary"]
        if kind != "message" or not isinstance(record.get("message"), dict):
            continue
        count += 1
        message = record["message"]
        if message.get("role") not in ("user", "assistant"):
            continue
        text = message_text(message)
        if message.get("role") == "user" and first is None:
            first = text
        if text:
            texts.append(text)
    created_ms = iso_to_ms(header.get("timestamp"))
    parent = header.get("parentSession")
    return SessionInfo(
        path=os.fspath(path),
        id=header["id"],
        cwd=header["cwd"] if isinstance(header.get("cwd"), str) else "",
        title=title,
        parent_session_path=parent if isinstance(parent, str) else None,
        created=datetime.fromtimestamp(created_ms / 1000, timezone.utc) if created_ms is not None else None,
        modified=datetime.fromtimestamp(mtime, timezone.utc),
        message_count=count,
        first_message=first or "(no messages)",
        all_messages_text=" ".join(texts),
    )


def session_info(path: Path) -> SessionInfo | None:
    """Read one file completely and summarise it; ``None`` for anything that is not a session."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
            mtime = os.fstat(handle.fileno()).st_mtime
    except OSError:
        return None
    return summarize_records(path, decode_lines(data).records, mtime)


def _sorted_newest_first(infos: list[SessionInfo]) -> list[SessionInfo]:
    return sorted(infos, key=lambda info: info.modified, reverse=True)


def list_sessions(directory: Path | str) -> list[SessionInfo]:
    """Every valid ``*.jsonl`` directly inside ``directory``, newest first (no side effects)."""
    try:
        paths = [p for p in Path(directory).iterdir() if p.suffix == ".jsonl" and p.is_file()]
    except OSError:
        return []
    return _sorted_newest_first([info for p in paths if (info := session_info(p)) is not None])


def list_all_sessions(root: Path | str | None = None) -> list[SessionInfo]:
    """Sessions of every project directory under the sessions root (XDG-aware, unlike omp §9 #16).

    Only project directories are scanned, not sub-agent sessions inside artifact directories.
    """
    base = Path(root) if root is not None else sessions_root()
    try:
        directories = [d for d in base.iterdir() if d.is_dir()]
    except OSError:
        return []
    infos: list[SessionInfo] = []
    for directory in directories:
        infos.extend(list_sessions(directory))
    return _sorted_newest_first(infos)


def find_most_recent_session(directory: Path | str) -> Path | None:
    """The newest-mtime ``*.jsonl`` whose first line is a valid header (any length, §9 #18)."""
    best: tuple[float, Path] | None = None
    try:
        candidates = [p for p in Path(directory).iterdir() if p.suffix == ".jsonl" and p.is_file()]
    except OSError:
        return None
    for path in candidates:
        try:
            mtime = path.stat().st_mtime
        except OSError:
            continue
        if (best is None or mtime > best[0]) and read_header(path) is not None:
            best = (mtime, path)
    return best[1] if best else None
