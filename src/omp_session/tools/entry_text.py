"""The searchable text of an entry: what ``search`` matches and the store catalog indexes.

Every entry that carries conversation text has one: user, developer and assistant text and
thinking, tool-call names and arguments (as the JSON omp wrote), tool results, bash/python commands
and output, file mentions, custom messages, compaction and branch summaries.

Internal module (used by :mod:`omp_session.tools.search` and :mod:`omp_session.tools.catalog`);
``entry_text`` is documented as ``omp_session.tools.search.entry_text``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from omp_session.format.codec import encode_json
from omp_session.tools.entry_kinds import EntryKind, classify

Entry = dict[str, Any]

__all__ = ["EntryText", "entry_text"]


def _texts(content: Any) -> Iterator[str]:
    if isinstance(content, str):
        yield content
        return
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        for key in ("text", "thinking"):
            if isinstance(block.get(key), str):
                yield block[key]
        if block.get("type") == "toolCall":
            # The arguments as JSON, exactly as omp wrote them to the file (issue 13 #4).
            yield f"{block.get('name')} {encode_json(block.get('arguments')).decode('utf-8')}"


def _message_texts(message: Mapping[str, Any]) -> Iterator[str]:
    yield from _texts(message.get("content"))
    for key in ("command", "code", "output", "summary"):
        if isinstance(message.get(key), str):
            yield message[key]
    files = message.get("files")
    for item in files if isinstance(files, list) else ():
        if isinstance(item, dict):
            yield from (item[k] for k in ("path", "content") if isinstance(item.get(k), str))


def entry_text(entry: Entry) -> tuple[str, str] | None:
    """``(role, searchable text)`` of an entry, or ``None`` for entries without conversation text."""
    found = classify(entry)
    if found.is_message:
        return found.role or "message", "\n".join(_message_texts(found.fields))
    if found.kind == EntryKind.CUSTOM_MESSAGE:
        return "custom", "\n".join(_texts(entry.get("content")))
    if found.kind in (EntryKind.COMPACTION, EntryKind.BRANCH_SUMMARY) and isinstance(
        entry.get("summary"), str
    ):
        return str(entry.get("type")), entry["summary"]
    return None


class EntryText(NamedTuple):
    """One entry's searchable text (:func:`entry_text`) with what a hit reports of it."""

    entry_id: str
    role: str
    timestamp: str | None
    text: str
