"""Bringing an earlier import up to date (spec importers §3 plus what omp lacks).

Two ways: :func:`resumed_update` continues from where a lossless Claude import stopped reading
(its ``resume`` state, :mod:`claude_resume`), reading only what the source gained; otherwise the
whole source is converted again and :func:`append_update` appends the entries the session lacks,
unless :func:`conflict` finds an entry already written that now converts differently (the caller
then imports the source afresh). Nothing already written is ever changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson

from omp_session.errors import CorruptSessionError
from omp_session.format.codec import decode_line, encode_line
from omp_session.format.ids import now_iso
from omp_session.importers.base import ConvertedSession, ForeignSessionInfo, ForeignSessionStore
from omp_session.importers.session_file import (
    append_lines,
    encode_entry,
    import_entry,
    last_import_data,
    resume_state,
)
from omp_session.store.regular import regular_file

Entry = dict[str, Any]
Status = Literal["imported", "updated", "unchanged", "reimported"]


@dataclass
class ImportOutcome:
    """What one import did. ``path`` is the omp session written (or that would be, on a dry run)."""

    info: ForeignSessionInfo
    status: Status
    path: Path | None
    added: int
    converted: ConvertedSession
    reason: str = ""
    dry_run: bool = False


@dataclass
class _Existing:
    path: Path
    ids: dict[str, Entry] = field(default_factory=dict)
    #: The entries written without a string id (a pi session may carry such odd entries as they
    #: are), by their content: an update recognises them by it instead of appending them again.
    anonymous: set[bytes] = field(default_factory=set)

    def has(self, entry: Entry) -> bool:
        """Whether ``entry`` was written already (by its id, or its content when it has none)."""
        entry_id = entry.get("id")
        if isinstance(entry_id, str):
            return entry_id in self.ids
        return _content_key(entry) in self.anonymous


def read_existing(path: Path) -> _Existing:
    found = _Existing(path)
    with regular_file(path) as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                value = decode_line(line)
            except ValueError as error:
                raise CorruptSessionError(path, f"unreadable line: {error}", number) from error
            if not isinstance(value, dict) or value.get("type") == "session":
                continue
            if isinstance(value.get("id"), str):
                found.ids[value["id"]] = value
            else:
                found.anonymous.add(_content_key(value))
    return found


def _comparable(entry: Entry) -> Entry:
    """An entry without its timestamps (a re-read source may fall back to a new file mtime)."""
    out = {k: v for k, v in entry.items() if k != "timestamp"}
    message = out.get("message")
    if isinstance(message, dict):
        out["message"] = {k: v for k, v in message.items() if k != "timestamp"}
    return out


def _content_key(entry: Entry) -> bytes:
    """An entry's content without its timestamps, as canonical bytes."""
    comparable = _comparable(entry)
    try:
        return orjson.dumps(comparable, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # a lone surrogate or an integer beyond 64 bits: any stable form will do
        return repr(comparable).encode("utf-8", "surrogatepass")


def append_update(
    existing: _Existing, converted: ConvertedSession, info: ForeignSessionInfo, dry_run: bool
) -> int:
    """Append the entries ``existing`` lacks; returns how many were written (0: up to date)."""
    new = [e for e in converted.entries if not existing.has(e)]
    title_entry: list[Entry] = []
    now = now_iso()
    if not new:
        return 0
    entries, leaf = converted.with_title(now)
    if len(entries) > len(converted.entries) and _last_title(existing) != entries[-1]["title"]:
        title_entry = [entries[-1]]
    else:
        leaf = converted.leaf_id
    marker = import_entry(info, leaf, set(existing.ids), now, resume_state(converted))
    lines = [encode_line(e) for e in [*new, *title_entry, marker]]
    if not dry_run:
        append_lines(existing.path, lines, title_entry[0] if title_entry else None, now)
    return len(lines)


def resumed_update(
    store: ForeignSessionStore, info: ForeignSessionInfo, previous: Path, dry_run: bool
) -> ImportOutcome | None:
    """Bring an import up to date from where it stopped (``resume``), reading only what the
    source gained; ``None`` when that is not possible (no state, or the source was rewritten)."""
    data = last_import_data(previous)
    state = data.get("resume") if data is not None else None
    if not isinstance(state, dict):
        return None
    try:
        converted = store.convert_update(info, state, previous)
    except (KeyError, TypeError, ValueError):
        return None  # a state this version cannot read: the full update path decides
    if converted is None:
        return None
    now = now_iso()
    entries, leaf = converted.with_title(now)
    title_change = entries[-1] if len(entries) > len(converted.entries) else None
    if title_change is not None and title_change["title"] == state.get("title"):
        title_change, leaf = None, converted.leaf_id
    if not converted.entries and title_change is None:
        return ImportOutcome(info, "unchanged", previous, 0, converted, dry_run=dry_run)
    new = [*converted.entries, *([title_change] if title_change is not None else [])]
    ids = {*converted.source_lines, *(str(e.get("id")) for e in new)}
    marker = import_entry(info, leaf, ids, now, resume_state(converted))
    lines = [encode_entry(e) for e in [*new, marker]]
    if not dry_run:
        append_lines(previous, lines, title_change, now)
    return ImportOutcome(info, "updated", previous, len(lines), converted, dry_run=dry_run)


def _last_title(existing: _Existing) -> str | None:
    titles = [e.get("title") for e in existing.ids.values() if e.get("type") == "title_change"]
    return titles[-1] if titles and isinstance(titles[-1], str) else None


def conflict(existing: _Existing, converted: ConvertedSession) -> str | None:
    for entry in converted.entries:
        old = existing.ids.get(str(entry.get("id")))
        if old is not None and _comparable(old) != _comparable(entry):
            return f"entry {entry['id']} now converts differently"
    return None


__all__ = ["ImportOutcome", "Status", "append_update", "conflict", "read_existing", "resumed_update"]
