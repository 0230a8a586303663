"""Claude Code's store: discovery and listing (spec importers §1.1).

Sessions are ``<root>/projects/<encoded cwd>/<session id>.jsonl`` (and ``.projects/``), the root
being ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``. Listing reads ``history.jsonl`` and at most 64 KiB
of each transcript, never a whole transcript.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from omp_session.errors import CorruptSessionError
from omp_session.format.codec import decode_line
from omp_session.importers.base import (
    ConvertedSession,
    ForeignSessionInfo,
    HeaderHint,
    Sink,
    Source,
    clean_preview,
    file_mtime_ms,
    js_string,
    ns_to_ms,
)
from omp_session.importers.claude_convert import convert_claude
from omp_session.importers.claude_records import claude_timestamp_ms
from omp_session.importers.claude_resume import ImportedSession, tail_hash
from omp_session.importers.jsonl import iter_records, lines_containing
from omp_session.store.regular import read_regular
from omp_session.store.tuning import DEFAULT_TUNING, Tuning

_CWD_PREFIX_BYTES = 64 * 1024


def claude_root(env: Mapping[str, str] | None = None) -> Path:
    """``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    environ = os.environ if env is None else env
    configured = environ.get("CLAUDE_CONFIG_DIR")
    if configured:
        return Path(configured)
    return Path(environ.get("HOME") or os.path.expanduser("~")) / ".claude"


def _config_file(root: Path, env: Mapping[str, str] | None) -> Path:
    """``.claude.json``: beside the default root's home, else beside the given root (spec §1.1)."""
    environ = os.environ if env is None else env
    configured = environ.get("CLAUDE_CONFIG_DIR")
    if configured and Path(configured).resolve() == root.resolve():
        return root / ".claude.json"
    return root.parent / ".claude.json"


@dataclass
class _HistoryItem:
    created: float
    modified: float
    count: int
    first_message: str | None
    cwd: str | None


def _read_history(path: Path) -> dict[str, _HistoryItem]:
    items: dict[str, _HistoryItem] = {}
    try:
        for _, record in iter_records(path):
            session_id = js_string(record.get("sessionId")) or js_string(record.get("session_id"))
            raw_ts = record.get("timestamp", record.get("ts"))
            stamp = claude_timestamp_ms(raw_ts, 0)
            if not session_id or stamp <= 0:
                continue
            raw_text = js_string(record.get("display")) or js_string(record.get("text"))
            text = clean_preview(raw_text) if raw_text else None
            cwd = js_string(record.get("project"))
            item = items.get(session_id)
            if item is None:
                items[session_id] = _HistoryItem(stamp, stamp, 1, text, cwd)
                continue
            if stamp < item.created:
                item.created = stamp
                if text:
                    item.first_message = text
            item.modified = max(item.modified, stamp)
            if not item.first_message and text:
                item.first_message = text
            item.count += 1
            if not item.cwd and cwd:
                item.cwd = cwd
    except OSError:
        pass  # the history is an optional index (spec §1.1)
    return items


def _registered_projects(config: Path) -> list[str]:
    try:
        parsed = orjson.loads(read_regular(config))
    except (OSError, CorruptSessionError, orjson.JSONDecodeError):
        return []
    projects = parsed.get("projects") if isinstance(parsed, dict) else None
    if not isinstance(projects, dict):
        return []
    return [name for name in projects if os.path.isabs(name)]


def decode_project_dir(encoded: str, registered: list[str]) -> str:
    """omp's lossy decoding: a registered project that encodes to the name, else ``-`` → ``/``."""
    for project in registered:
        if project.replace(os.sep, "-") == encoded:
            return project
    if not encoded.startswith("-"):
        return encoded
    return encoded.replace("-", os.sep)


def _recorded_cwd(path: str) -> str | None:
    for _, record in iter_records(path, limit=_CWD_PREFIX_BYTES):
        cwd = js_string(record.get("cwd"))
        if cwd:
            return cwd
    return None


_TITLE_FIELDS = {"custom-title": "customTitle", "ai-title": "aiTitle"}


def _last_titles(path: str, last_bytes: int | None, window: int) -> tuple[str | None, str | None]:
    """The last non-empty ``customTitle`` and ``aiTitle`` of the title records, as the conversion
    finds them (spec §1.2): one backward byte search for the suffix both types share, and only
    the lines holding it parsed (in the last ``last_bytes`` of the file when given)."""
    found: dict[str, str] = {}
    for line in lines_containing(path, b'-title"', last_bytes, window=window):
        try:
            record = decode_line(line)
        except ValueError:
            continue
        kind = record.get("type") if isinstance(record, dict) else None
        field = _TITLE_FIELDS.get(kind) if isinstance(kind, str) else None
        if field is None or kind in found or not js_string(record.get(field)):
            continue
        found[str(kind)] = record[field]
        if "custom-title" in found:  # it wins over any AI title
            break
    return found.get("custom-title"), found.get("ai-title")


def _birth_ms(stat: os.stat_result) -> float:
    birth = getattr(stat, "st_birthtime", None)
    if isinstance(birth, float) and birth > 0:
        return birth * 1000
    return ns_to_ms(stat.st_ctime_ns) or ns_to_ms(stat.st_mtime_ns)


class ClaudeSessionStore:
    """Claude Code transcripts under ``root`` (default: :func:`claude_root`); ``tuning``: how
    much of a big transcript a header hint searches for title records."""

    source: Source = "claude"

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        *,
        tuning: Tuning = DEFAULT_TUNING,
    ) -> None:
        self.root = Path(root).absolute() if root is not None else claude_root(env).absolute()
        self._env = env
        self._tuning = tuning

    def _project_files(self) -> list[tuple[str, str]]:
        registered = _registered_projects(_config_file(self.root, self._env))
        found: list[tuple[str, str]] = []
        for container in ("projects", ".projects"):
            try:
                projects = sorted(os.scandir(self.root / container), key=lambda e: e.name)
            except OSError:
                continue
            for project in projects:
                if not project.is_dir():
                    continue
                cwd = decode_project_dir(project.name, registered)
                try:
                    children = sorted(os.scandir(project.path), key=lambda e: e.name)
                except OSError:
                    continue
                found.extend(
                    (child.path, cwd)
                    for child in children
                    if child.name.endswith(".jsonl") and child.is_file(follow_symlinks=False)
                )
        return found

    def list(self) -> list[ForeignSessionInfo]:
        history = _read_history(self.root / "history.jsonl")
        infos: list[ForeignSessionInfo] = []
        for path, cwd in self._project_files():
            try:
                infos.append(self._info(path, cwd, history))
            except OSError:
                continue  # rotated away while listing
        infos.sort(key=lambda info: info.path)
        infos.sort(key=lambda info: info.modified_ms, reverse=True)
        return infos

    def _info(self, path: str, dir_cwd: str, history: dict[str, _HistoryItem]) -> ForeignSessionInfo:
        stat = os.stat(path)
        session_id = os.path.basename(path)[: -len(".jsonl")]
        indexed = history.get(session_id)
        mtime = ns_to_ms(stat.st_mtime_ns)
        return ForeignSessionInfo(
            source="claude",
            id=session_id,
            path=path,
            cwd=(indexed.cwd if indexed else None) or _recorded_cwd(path) or dir_cwd,
            created_ms=indexed.created if indexed else _birth_ms(stat),
            modified_ms=max(indexed.modified if indexed else 0, mtime),
            message_count=indexed.count if indexed else None,
            first_message=indexed.first_message if indexed else None,
        )

    def info_for(self, path: str) -> ForeignSessionInfo:
        """The info of one transcript, whether or not it lies under this store's root."""
        absolute = os.path.abspath(path)
        registered = _registered_projects(_config_file(self.root, self._env))
        dir_cwd = decode_project_dir(os.path.basename(os.path.dirname(absolute)), registered)
        return self._info(absolute, dir_cwd, _read_history(self.root / "history.jsonl"))

    def convert(self, info: ForeignSessionInfo, *, lossless: bool = True) -> ConvertedSession:
        return convert_claude(info, mtime_ms=file_mtime_ms(info.path), lossless=lossless)

    def header_hint(self, info: ForeignSessionInfo) -> HeaderHint | None:
        """The cwd and title the conversion will find, read ahead cheaply (the first 64 KiB, one
        backward search for title records: the whole file up to 16 MiB, else its last 4 MiB, so
        a big transcript titled further back gets a wrong hint, which the import corrects), so a
        streaming import can write the header first."""
        try:
            cwd = _recorded_cwd(info.path)
            if cwd is None:
                return None  # the conversion would have to read further: no cheap answer
            # Up to ``title_search_whole_bytes`` the whole transcript is searched, beyond it only its
            # end. A whole search of 100 MB costs about a third of the parse floor
            # (bench/IMPORT_RESULTS.md) while a title record further back only makes the hint
            # wrong, which costs one in-kernel copy of the written entries (persist_streaming),
            # about as much.
            tuning = self._tuning
            big = os.path.getsize(info.path) > tuning.title_search_whole_bytes
            tail = tuning.title_tail_bytes if big else None
            custom, ai = _last_titles(info.path, tail, tuning.search_window_bytes)
        except OSError:
            return None
        if custom is not None:
            return HeaderHint(cwd, custom, "user")
        return HeaderHint(cwd, ai or info.title, "auto")

    def convert_update(
        self, info: ForeignSessionInfo, state: dict[str, Any], imported: Path
    ) -> ConvertedSession | None:
        """The records appended since the import that recorded ``state`` (claude_resume)."""
        try:
            size = os.path.getsize(info.path)
        except OSError:
            return None
        if size < state["bytes"] or tail_hash(info.path, state["bytes"]) != state["tailHash"]:
            return None  # rewritten or truncated since: not a continuation
        with ImportedSession(imported) as session:
            return convert_claude(
                info,
                mtime_ms=file_mtime_ms(info.path),
                raw_records=True,
                resume=(state, session),
            )

    def convert_streaming(
        self, info: ForeignSessionInfo, sink: Sink, *, lossless: bool = True
    ) -> ConvertedSession:
        """:meth:`convert`, handing entries to ``sink`` as they are final (bounded memory)."""
        return convert_claude(
            info, mtime_ms=file_mtime_ms(info.path), lossless=lossless, sink=sink, raw_records=True
        )


__all__ = ["ClaudeSessionStore", "claude_root", "decode_project_dir"]
