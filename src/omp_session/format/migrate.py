"""v1 → v2 → v3 migration (spec §2.2): pure functions over the parsed records, header first.

Migration runs in memory on load; the file itself is rewritten only on the next write (§2.3).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Container
from typing import Any

from omp_session.format.entries import CURRENT_VERSION
from omp_session.format.ids import StableEntryIds

__all__ = ["NewId", "header_version", "migrate_records", "migrate_v1_to_v2", "migrate_v2_to_v3"]

NewId = Callable[[Container[str]], str]


def header_version(header: dict[str, Any]) -> int:
    """``header.version ?? 1`` (a non-numeric version counts as 1, as in JS comparisons).

    A version too big for a double (``1e999`` parses as ``Infinity``) is never below 2 or 3 in
    JavaScript's comparisons, so it counts as the current version (loaded as it is); ``-Infinity``
    is below both (migrated from v1). ``int()`` of either would raise."""
    version = header.get("version")
    if isinstance(version, bool) or not isinstance(version, int | float):
        return 1
    if isinstance(version, float) and not math.isfinite(version):
        return 1 if version < 0 else CURRENT_VERSION  # (NaN, which JSON cannot hold: no migration)
    return int(version)


def migrate_v1_to_v2(records: list[dict[str, Any]], new_id: NewId) -> None:
    """Give every entry an id and chain them linearly in file order (in place).

    ``firstKeptEntryIndex`` counts the header as index 0 (v1 kept it in the same array). Unlike
    omp (§9 #11) the generated ids are checked against each other, so they never collide.
    """
    header = records[0]
    header["version"] = 2
    used: set[str] = set()
    previous: str | None = None
    for record in records[1:]:
        entry_id = new_id(used)
        used.add(entry_id)
        record["id"] = entry_id
        record["parentId"] = previous
        previous = entry_id
        if record.get("type") == "compaction" and "firstKeptEntryIndex" in record:
            _resolve_kept_index(records, record)


def _resolve_kept_index(records: list[dict[str, Any]], compaction: dict[str, Any]) -> None:
    # Resolved during the id walk, as omp does: an index pointing after the compaction names an
    # element without an id yet, so no kept id results (§2.2 step 3, verified upstream).
    index = compaction.pop("firstKeptEntryIndex")
    if isinstance(index, bool) or not isinstance(index, int | float) or index != int(index):
        return
    position = int(index)
    if 0 < position < len(records):
        kept_id = records[position].get("id")
        if isinstance(kept_id, str):
            compaction["firstKeptEntryId"] = kept_id


def migrate_v2_to_v3(records: list[dict[str, Any]]) -> None:
    """Rename the legacy ``hookMessage`` role to ``custom`` (in place)."""
    records[0]["version"] = 3
    for record in records[1:]:
        message = record.get("message")
        if (
            record.get("type") == "message"
            and isinstance(message, dict)
            and message.get("role") == "hookMessage"
        ):
            message["role"] = "custom"


def migrate_records(records: list[dict[str, Any]], new_id: NewId | None = None) -> int | None:
    """Migrate ``records`` (header first) to the current version in place.

    ``new_id`` makes the ids a v1 file needs; by default they are derived from the header, so the
    same file gets the same ids on every load (omp draws random ones, spec §2.2).

    Returns the version the file had before migration, or ``None`` when nothing changed (v3 and
    later, including future versions, are loaded as they are).
    """
    if not records:
        return None
    version = header_version(records[0])
    if version >= CURRENT_VERSION:
        return None
    if version < 2:
        header = records[0]
        seed = f"{header.get('id')}|{header.get('timestamp')}"
        migrate_v1_to_v2(records, new_id if new_id is not None else StableEntryIds(seed))
    migrate_v2_to_v3(records)
    return version
