"""Building new entries and headers with omp's exact writer key order (spec §2.1, §3).

Optional fields given as ``None`` are omitted, as JavaScript drops ``undefined``; the few fields
omp writes as ``null`` (``thinkingLevel``, ``serviceTier``, root ``parentId``) are kept.

Internal module (the manager and the tools build new entries with it); not part of the public API.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from typing import Any

from omp_session.format.entries import CURRENT_VERSION

__all__ = [
    "OMIT",
    "OMIT_NONE",
    "branched_entries",
    "custom",
    "custom_message",
    "fork_from_header",
    "header",
    "message",
    "ordered",
    "reparent_without_labels",
    "typed",
]

Entry = dict[str, Any]


class _Omit:
    """Marker for an optional field that is left out of the written entry."""

    def __repr__(self) -> str:
        return "OMIT"


OMIT: Any = _Omit()


def OMIT_NONE(value: Any) -> Any:
    """``None`` becomes :data:`OMIT` (JS ``undefined``): the key is not written."""
    return OMIT if value is None else value


def _fields(entry: Entry, fields: dict[str, Any]) -> Entry:
    for key, value in fields.items():
        if value is not OMIT:
            entry[key] = value
    return entry


def typed(entry_id: str, parent_id: str | None, timestamp: str, entry_type: str, **fields: Any) -> Entry:
    """``type, id, parentId, timestamp, <fields in the given order>``: most entry types."""
    entry: Entry = {"type": entry_type, "id": entry_id, "parentId": parent_id, "timestamp": timestamp}
    return _fields(entry, fields)


def message(entry_id: str, parent_id: str | None, timestamp: str, message: dict[str, Any]) -> Entry:
    # The literal of ``typed(..., "message", message=message)``: this is every append_message.
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent_id,
        "timestamp": timestamp,
        "message": message,
    }


def custom(entry_id: str, parent_id: str | None, timestamp: str, custom_type: str, data: Any) -> Entry:
    """``type, customType, data?, id, parentId, timestamp`` (omp spreads the base last)."""
    entry: Entry = {"type": "custom", "customType": custom_type}
    if data is not None:
        entry["data"] = data
    return _fields(entry, {"id": entry_id, "parentId": parent_id, "timestamp": timestamp})


def custom_message(
    entry_id: str,
    parent_id: str | None,
    timestamp: str,
    custom_type: str,
    content: Any,
    display: bool,
    details: Any,
    attribution: str,
) -> Entry:
    """``type, customType, content, display, details?, attribution, id, parentId, timestamp``."""
    entry: Entry = {
        "type": "custom_message",
        "customType": custom_type,
        "content": content,
        "display": display,
    }
    if details is not None:
        entry["details"] = details
    entry["attribution"] = attribution
    return _fields(entry, {"id": entry_id, "parentId": parent_id, "timestamp": timestamp})


def ordered(order: Sequence[str], **values: Any) -> Entry:
    """A header with the keys of ``order`` that have a value (``None`` is left out, as omp drops
    ``undefined``); the dialect gives the order per operation (omp18-differences §2.10)."""
    return {key: values[key] for key in order if values.get(key) is not None}


def header(session_id: str, timestamp: str, cwd: str, parent_session: str | None = None) -> Entry:
    """Header of ``create``/``newSession``/branched sessions.

    Key order: ``type, version, id, timestamp, cwd, parentSession?``.
    """
    entry: Entry = {
        "type": "session",
        "version": CURRENT_VERSION,
        "id": session_id,
        "timestamp": timestamp,
        "cwd": cwd,
    }
    if parent_session is not None:
        entry["parentSession"] = parent_session
    return entry


def fork_from_header(order: Sequence[str], session_id: str, timestamp: str, cwd: str, source: Entry) -> Entry:
    """``forkFrom()``: the source's id as ``parentSession``; its title (and omp 18's title source,
    prompt-cache key, else the source id, and extra directories) carried over."""
    title = source.get("title")
    key = source.get("providerPromptCacheKey")
    return ordered(
        order,
        type="session",
        version=CURRENT_VERSION,
        id=session_id,
        timestamp=timestamp,
        cwd=cwd,
        parentSession=source.get("id"),
        providerPromptCacheKey=key if isinstance(key, str) and key else source.get("id"),
        title=title if isinstance(title, str) else None,
        titleSource=source.get("titleSource") if isinstance(title, str) else None,
        additionalDirectories=source.get("additionalDirectories") or None,
    )


def reparent_without_labels(path: Sequence[Entry]) -> list[Entry]:
    """The path minus its label entries, each kept entry re-linked to its nearest kept ancestor.

    omp leaves the child of a dropped label pointing at it, orphaning the rest of the copy
    (conformance ``branched-session-label-on-path``). Re-linked entries are copies; others are shared.
    """
    kept: list[Entry] = []
    for entry in path:
        if entry.get("type") == "label":
            continue
        if kept and entry.get("parentId") != kept[-1].get("id"):
            entry = {**entry, "parentId": kept[-1].get("id")}
        kept.append(entry)
    return kept


def branched_entries(
    path: Sequence[Entry], labels: Mapping[str, str], new_id: Callable[[Container[str]], str], timestamp: str
) -> list[Entry]:
    """The entries of a branched session (spec §6.5): the path without its labels, re-linked, then
    one fresh label entry per label whose target is on the path, chained in label-index order."""
    kept = reparent_without_labels(path)
    used = {str(entry.get("id")) for entry in kept}
    on_path = set(used)
    previous = kept[-1].get("id") if kept else None
    for target, label in labels.items():
        if target in on_path:
            label_id = new_id(used)
            used.add(label_id)
            kept.append(typed(label_id, previous, timestamp, "label", targetId=target, label=label))
            previous = label_id
    return kept
