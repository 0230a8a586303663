"""omp 18's session listing (omp18-differences §8.1): a 4 KB prefix and a 32 KB tail per file.

Only the first ``prefix_bytes`` of a file are parsed, so ``message_count``, ``first_message`` and
``all_messages_text`` describe that prefix (as in omp 18); the title is the slot's, else the
header's, else the last ``shortSummary`` in the prefix; ``status`` comes from the last message in
the tail. Reading two windows per file makes the listing fast whatever the session sizes, so no
cache is needed (nothing can go stale).

Internal module (used by :mod:`omp_session.store.listing`); not part of the public API.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from omp_session.dialects import JS_TRIM
from omp_session.errors import CorruptSessionError, SessionError
from omp_session.format.codec import BOM, decode_lines
from omp_session.format.ids import iso_to_ms, ms_to_datetime
from omp_session.format.title_slot import slot_from_value
from omp_session.model.message_text import message_text
from omp_session.store import SessionStorage
from omp_session.store.file_sessions import FileSessionStorage
from omp_session.store.listing.info import SessionInfo
from omp_session.store.regular import regular_file

__all__ = [
    "SUFFIX_BYTES",
    "for_picker",
    "is_empty_session",
    "list_files",
    "scan_session_file",
    "session_status",
]

#: ``(path) -> bool``: the storage's full-line scan for an assistant message (omp 18.3
#: ``hasAssistantTurn``); given, a listing counts ``assistantTurns`` (omp 18.2.9+).
FullScan = Callable[[Path], bool]

SUFFIX_BYTES = 32_768


def _string_property(source: str, name: str, start: int = 0) -> str | None:
    """The string value of ``"name": "..."`` found textually (for a prefix cut mid-line)."""
    at = source.find(f'"{name}"', start)
    if at < 0:
        return None
    colon = source.find(":", at + len(name) + 2)
    if colon < 0:
        return None
    i = colon + 1
    while i < len(source) and source[i] in " \t\n\r":
        i += 1
    if i >= len(source) or source[i] != '"':
        return None
    begin, escaped = i + 1, False
    for j in range(begin, len(source)):
        char = source[j]
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            return _decode_fragment(source[begin:j])
    return _decode_fragment(source[begin:])


def _decode_fragment(value: str) -> str:
    value = value[:-1] if value.endswith("\\") else value
    try:
        decoded = json.loads(f'"{value}"')
        return decoded if isinstance(decoded, str) else value
    except ValueError:
        return value.replace("\\n", "\n").replace("\\r", "\r").replace("\\t", "\t").replace('\\"', '"')


def _count_key_value(content: str, key: str, wanted: str) -> int:
    """How many ``"<key>"`` keys of ``content`` have the string value ``wanted``, nested ones and
    those of any branch included (a cut prefix: counted textually, as omp 18 does; omp 18.3's
    ``countAssistantMarkers`` for ``role``/``assistant``)."""
    quoted_key, quoted_value = f'"{key}"', f'"{wanted}"'
    count, index, end = 0, 0, len(content)
    while True:
        at = content.find(quoted_key, index)
        if at < 0:
            return count
        colon = content.find(":", at + len(quoted_key))
        if colon < 0:
            return count
        value = colon + 1
        while value < end and content[value] in " \t\n\r":
            value += 1
        if content.startswith(quoted_value, value):
            count += 1
        elif value < end and content[value] == '"':
            close = content.find('"', value + 1)
            # Without a backslash before its closing quote the value is its text as written, which
            # is not ``wanted``; only an escape or a value cut at the end needs the decoding rule.
            if (close < 0 or "\\" in content[value + 1 : close]) and _string_property(
                content, key, at
            ) == wanted:
                count += 1
        index = colon + 1


def _first_display_message(content: str) -> str | None:
    fallback = None
    index = content.find('"role"')
    while index >= 0:
        role = _string_property(content, "role", index)
        text = _string_property(content, "content", index) or _string_property(content, "text", index)
        if text:
            if role == "user":
                return text
            if fallback is None and role in ("developer", "assistant"):
                fallback = text
        index = content.find('"role"', index + 6)
    return fallback


def session_status(suffix: bytes) -> str:
    """``complete|interrupted|aborted|error|pending|unknown`` from the last message in ``suffix``."""
    for line in reversed(suffix.split(b"\n")):
        if not line.startswith(b"{"):
            continue
        try:
            entry = orjson.loads(line)  # the same value as json.loads wherever orjson reads it
        except orjson.JSONDecodeError:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
        message = entry.get("message") if isinstance(entry, dict) else None
        if entry.get("type") == "message" and isinstance(message, dict):
            return _status_of(message)
    return "unknown"


def _status_of(message: dict[str, Any]) -> str:
    role = message.get("role")
    if role == "assistant":
        stop = message.get("stopReason")
        if stop in ("error", "aborted"):
            return str(stop)
        if stop == "length":
            return "interrupted"
        content = message.get("content")
        calls = isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "toolCall" for b in content
        )
        return "interrupted" if calls else "complete"
    return {"toolResult": "interrupted", "user": "pending"}.get(str(role), "unknown")


def _header_and_title(records: list[dict[str, Any]], text: str) -> tuple[dict[str, Any] | None, Any]:
    """The header (from records, else textually from a cut prefix) and the slot's title override:
    a string, ``None`` for "no title" (an empty slot title), or ``...`` for "no slot"."""
    override: Any = ...
    first = records[0] if records else None
    slot = slot_from_value(first) if first is not None and first.get("type") == "title" else None
    if first is not None and first.get("type") == "title" and isinstance(first.get("title"), str):
        override = first["title"] if first["title"].strip() else None
    candidate = (
        records[1 if slot is not None or (first or {}).get("type") == "title" else 0] if records else None
    )
    if (
        isinstance(candidate, dict)
        and candidate.get("type") == "session"
        and isinstance(candidate.get("id"), str)
    ):
        return candidate, override
    lines = [line.strip() for line in text.replace("\r\n", "\n").split("\n") if line.strip()]
    if lines and _string_property(lines[0], "type") == "title":
        title = _string_property(lines[0], "title")
        override = ... if title is None else (title if title.strip() else None)
        lines = lines[1:]
    if not lines or _string_property(lines[0], "type") != "session" or not _string_property(lines[0], "id"):
        return None, override
    line = lines[0]
    header = {
        key: _string_property(line, key) for key in ("id", "cwd", "title", "parentSession", "timestamp")
    }
    return {"type": "session", **{k: v for k, v in header.items() if v is not None}}, override


def scan_session_file(
    path: Path, prefix_bytes: int = 4096, full_scan: FullScan | None = None
) -> SessionInfo | None:
    """One file as omp 18 lists it, or ``None`` when its prefix holds no session header (with
    ``full_scan``, omp 18.3's ``assistantTurns`` too)."""
    try:
        with regular_file(path) as handle:
            stat = os.fstat(handle.fileno())
            prefix = handle.read(prefix_bytes)
            handle.seek(max(0, stat.st_size - SUFFIX_BYTES))
            suffix = handle.read(SUFFIX_BYTES)
    except (OSError, CorruptSessionError):  # gone, unreadable, or not a regular file: skipped
        return None
    return summarize_ends(path, prefix, suffix, stat.st_size, stat.st_mtime, full_scan)


def summarize_ends(
    path: Path,
    prefix: bytes,
    suffix: bytes,
    size: int,
    mtime: float,
    full_scan: FullScan | None = None,
) -> SessionInfo | None:
    """What omp 18 lists for a session from its first ``prefix`` bytes and last ``suffix`` bytes
    (a file's, or a database row's, as omp's SQL storage reads them with ``readTextSlices``).

    With ``full_scan`` (omp 18.3) ``assistant_turns`` is the largest of the assistant messages
    parsed from the prefix and the ``"role":"assistant"`` markers of prefix and suffix; when all are
    0, ``full_scan(path)`` (every line of the session) can make it 1."""
    text = prefix.removeprefix(BOM).decode("utf-8", errors="replace")
    records = decode_lines(prefix.removeprefix(BOM)).records
    header, override = _header_and_title(records, text)
    if header is None:
        return None
    count, assistants, first, texts, short = 0, 0, "", [], None
    for record in records[1:]:
        if record.get("type") == "compaction" and isinstance(record.get("shortSummary"), str):
            short = record["shortSummary"]
        message = record.get("message")
        if record.get("type") == "message" and isinstance(message, dict) and message:
            count += 1
            assistants += message.get("role") == "assistant"
            if message.get("role") in ("user", "assistant"):
                content = message_text(message)
                if content:
                    texts.append(content)
                    if not first and message.get("role") == "user":
                        first = content
    first = first or _first_display_message(text) or ""
    title = None if override is None else (override if override is not ... else header.get("title"))
    created = iso_to_ms(header.get("timestamp"))
    turns: int | None = None
    if full_scan is not None:
        tail = suffix.decode("utf-8", errors="replace")
        turns = max(
            assistants,
            _count_key_value(text, "role", "assistant"),
            _count_key_value(tail, "role", "assistant"),
        )
        if turns == 0 and full_scan(path):
            turns = 1
    return SessionInfo(
        path=os.fspath(path),
        id=str(header["id"]),
        cwd=header["cwd"] if isinstance(header.get("cwd"), str) else "",
        title=title if isinstance(title, str) else short,
        parent_session_path=header["parentSession"] if isinstance(header.get("parentSession"), str) else None,
        created=ms_to_datetime(created),
        modified=datetime.fromtimestamp(mtime, timezone.utc),
        message_count=max(count, _count_key_value(text, "type", "message")),
        assistant_turns=turns,
        first_message=first or "(no messages)",
        all_messages_text=" ".join(texts) if texts else first,
        size=size,
        status=session_status(suffix),
    )


def list_files(
    files: list[Path], prefix_bytes: int = 4096, assistant_turns: bool = False
) -> list[SessionInfo]:
    """The sessions among ``files``, sorted as omp 18 sorts: mtime, then created, then path, each
    descending (``assistant_turns``: with omp 18.3's count, falling back to a full scan)."""
    full_scan = FileSessionStorage().has_assistant_turn if assistant_turns else None
    infos = []
    for path in files:
        info = scan_session_file(path, prefix_bytes, full_scan)
        if info is not None:
            infos.append(info)
    return _sorted(infos)


def list_stored(
    store: SessionStorage, paths: list[Path], prefix_bytes: int = 4096, assistant_turns: bool = False
) -> list[SessionInfo]:
    """:func:`list_files` for the sessions of a database store (its ``has_assistant_turn`` is
    the full scan)."""
    full_scan = store.has_assistant_turn if assistant_turns else None
    infos = []
    for path in paths:
        stat = store.stat_session(path)
        try:
            data = store.read_session(path)
        except SessionError:
            continue
        if stat is not None:
            info = summarize_ends(
                path, data[:prefix_bytes], data[-SUFFIX_BYTES:], len(data), stat.mtime, full_scan
            )
            if info is not None:
                infos.append(info)
    return _sorted(infos)


def _sorted(infos: list[SessionInfo]) -> list[SessionInfo]:
    infos.sort(key=lambda i: i.path, reverse=True)
    infos.sort(key=lambda i: i.created.timestamp() if i.created else float("-inf"), reverse=True)
    infos.sort(key=lambda i: i.modified, reverse=True)
    return infos


def _sanitized(value: str | None) -> str:
    """omp 18.3's ``sanitizeSessionName``: the first line, control characters removed, trimmed."""
    if not value:
        return ""
    first = value.replace("\r\n", "\n").split("\n", 1)[0]
    return "".join(ch for ch in first if not (ord(ch) < 0x20 or ord(ch) == 0x7F)).strip(JS_TRIM)


def is_empty_session(info: SessionInfo) -> bool:
    """omp 18.3's ``isEmptySession``: status pending, unknown or absent, no assistant turn, and
    neither a title nor a first message (each sanitised; ``(no messages)`` is none)."""
    if info.status is not None and info.status not in ("pending", "unknown"):
        return False
    if (info.assistant_turns if info.assistant_turns is not None else 1) > 0:
        return False
    if _sanitized(info.title):
        return False
    first = None if info.first_message == "(no messages)" else info.first_message
    return not _sanitized(first)


def for_picker(infos: Iterable[SessionInfo], pinned: frozenset[str] | set[str]) -> list[SessionInfo]:
    """omp 18.3's ``filterSessionsForPicker``: the empty sessions dropped unless pinned."""
    return [info for info in infos if info.id in pinned or not is_empty_session(info)]
