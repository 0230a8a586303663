"""Per-entry usage facts (issue 27): which entries spend, what each spent, and the key by which a
copy a fork made is recognised. One rule each, used by the full reads and by the store catalog,
which keeps each session's facts precomputed (:mod:`omp_session.tools.catalog`), so that a
store-wide report needs neither the entries nor this module's work again.

Internal module (used by :mod:`omp_session.tools.usage_records`, :mod:`omp_session.tools.stats`
and the catalog); not part of the public API.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from omp_session.format.ids import iso_to_ms
from omp_session.tools.entry_kinds import EntryKind, classify

Entry = dict[str, Any]
#: How a copy is recognised: ``(id, timestamp, type)``, each non-string value as its repr.
CopyKey = tuple[str, str, str]
#: A record without its session (``UsageRecord``'s fields from ``timestamp_ms`` to ``cost``).
RecordFields = tuple[int | None, str, str | None, float, float, float, float, float | None]

__all__ = [
    "NO_PROJECT",
    "SUB_AGENT",
    "UNKNOWN_MODEL",
    "CopyKey",
    "RecordFields",
    "UsageRecord",
    "copy_key",
    "entry_facts",
    "record_fields",
]

#: The model of a ``task`` result's usage (the sub-agent's, which the result does not name).
SUB_AGENT = "(sub-agent tasks)"
#: The model of an assistant message that names none.
UNKNOWN_MODEL = "(unknown model)"
#: The project of a session whose header has no cwd.
NO_PROJECT = "(no cwd)"


@dataclass(frozen=True, slots=True)
class UsageRecord:
    """One entry's spend."""

    #: Milliseconds since the epoch (UTC); ``None`` without a readable timestamp.
    timestamp_ms: int | None
    #: The model as recorded (any of its names; reports merge them), or :data:`SUB_AGENT`.
    model: str
    provider: str | None
    input: float
    output: float
    cache_read: float
    cache_write: float
    #: ``usage.cost.total`` as recorded; ``None`` when there is none. (A zero for spent tokens is
    #: what importers and unknown models record: the reports estimate it, see usage_report.)
    cost: float | None
    session_id: str
    project: str

    @property
    def tokens(self) -> float:
        return self.input + self.output + self.cache_read + self.cache_write


def _number(value: Any) -> float:
    """A token count or cost; anything but a number counts 0 (as UsageStatistics counts it)."""
    if type(value) is int or type(value) is float:
        return value
    return 0


def record_fields(entry: Entry) -> RecordFields | None:
    """What ``entry`` spent, as a :class:`UsageRecord` without its session; ``None`` for an entry
    that spent nothing (spec §6.3: an assistant message with ``usage``, a ``task`` result with
    ``details.usage``)."""
    found = classify(entry)
    fields = found.fields
    provider: str | None = None
    if found.kind == EntryKind.ASSISTANT:
        usage = fields.get("usage")
        if not isinstance(usage, dict):
            return None
        model, raw_provider = fields.get("model"), fields.get("provider")
        provider = raw_provider if isinstance(raw_provider, str) and raw_provider else None
        name = model if isinstance(model, str) and model else UNKNOWN_MODEL
    elif found.kind == EntryKind.TOOL_RESULT and fields.get("toolName") == "task":
        details = fields.get("details")
        usage = details.get("usage") if isinstance(details, dict) else None
        if not isinstance(usage, dict):
            return None
        name = SUB_AGENT
    else:
        return None
    tokens = (
        _number(usage.get("input")),
        _number(usage.get("output")),
        _number(usage.get("cacheRead")),
        _number(usage.get("cacheWrite")),
    )
    cost_object = usage.get("cost")
    raw_cost = cost_object.get("total") if isinstance(cost_object, dict) else None
    cost: float | None = raw_cost if type(raw_cost) is int or type(raw_cost) is float else None
    return (iso_to_ms(entry.get("timestamp")), name, provider, *tokens, cost)


def copy_key(entry: Entry) -> CopyKey | None:
    """The key of an entry a fork may have copied (``None`` without a string id)."""
    entry_id = entry.get("id")
    # repr: timestamp and type may be any JSON value in a damaged file (a list is not hashable).
    return (
        (entry_id, repr(entry.get("timestamp")), repr(entry.get("type")))
        if isinstance(entry_id, str)
        else None
    )


def entry_facts(entries: list[Entry]) -> tuple[list[CopyKey | None], dict[int, RecordFields]]:
    """Each entry's copy key, and the record fields of the entries that spent (by position)."""
    keys = [copy_key(entry) for entry in entries]
    spent = {}
    for position, entry in enumerate(entries):
        fields = record_fields(entry)
        if fields is not None:
            spent[position] = fields
    return keys, spent
