"""The slow reference of the listing summary (spec §6.9: omp 13.19's listing, plus our own fields),
kept as the oracle of ``test_listing_summary.py``: the rules of ``store/listing/summary.py`` over
decoded records, one record at a time, as they read in the spec. Not used by the package.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from omp_session.dialects import OMP_18_2
from omp_session.format.entries import FOREIGN_SESSION_IMPORT, is_import_bookkeeping
from omp_session.format.header import is_session_header
from omp_session.format.ids import iso_to_ms, ms_to_datetime
from omp_session.model.message_text import is_prompt, message_text
from omp_session.model.usage import UsageStatistics
from omp_session.store.listing.info import (
    SessionInfo,
    conversation_stamps,
    created_ms,
    fold_slot_record,
    is_canonical_time,
)

__all__ = ["summarize_records"]


def summarize_records(
    path: Path | str, records: Sequence[dict[str, Any]], mtime: float, size: int = 0
) -> SessionInfo | None:
    """A ``SessionInfo`` from decoded records (header first, after an omp 18 title slot if any),
    or ``None`` if not a session."""
    records = fold_slot_record(records)
    if not records or not is_session_header(records[0]) or not records[0].get("id"):
        return None
    header = records[0]
    title = header.get("title") if isinstance(header.get("title"), str) else None
    count, first, prompt, texts = 0, None, None, []
    newest_ms: float | None = None
    newest_canonical: str | None = None
    imported = False
    import_stamps: set[Any] = set()
    kept: list[dict[str, Any]] = []
    for record in records[1:]:
        if is_import_bookkeeping(record):
            # An import's marker and kept source records are dated at import time; the session's
            # times are its conversation's (issue 27 #5: a 2025 conversation "modified today").
            if record.get("customType") == FOREIGN_SESSION_IMPORT:
                imported = True
                if isinstance(stamp := record.get("timestamp"), str):
                    import_stamps.add(stamp)
            continue
        kept.append(record)
    stamps = conversation_stamps([record.get("timestamp") for record in kept], import_stamps)
    for record in kept:
        stamp = record.get("timestamp")
        if stamp in import_stamps and isinstance(stamp, str):
            stamp = None  # written by the import (its title change): not the conversation's time
        if is_canonical_time(stamp):  # what omp writes: orders as text, parsed once at the end
            if newest_canonical is None or stamp > newest_canonical:
                newest_canonical = stamp
        elif (ms := iso_to_ms(stamp)) is not None and (newest_ms is None or ms > newest_ms):
            newest_ms = ms
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
        if message.get("role") == "user" and prompt is None and is_prompt(text):
            prompt = text
        if text:
            texts.append(text)
    parent = header.get("parentSession")
    canonical_ms = iso_to_ms(newest_canonical) if newest_canonical is not None else None
    if newest_canonical is not None and canonical_ms is None:  # shaped like a time but not one
        canonical_ms = max((ms for ms in map(iso_to_ms, stamps) if ms is not None), default=None)
    if canonical_ms is not None and (newest_ms is None or canonical_ms > newest_ms):
        newest_ms = canonical_ms
    modified = datetime.fromtimestamp(mtime, timezone.utc)
    return SessionInfo(
        path=os.fspath(path),
        id=header["id"],
        cwd=header["cwd"] if isinstance(header.get("cwd"), str) else "",
        title=title,
        parent_session_path=parent if isinstance(parent, str) else None,
        created=ms_to_datetime(created_ms(header, stamps if imported else ())),
        modified=modified,
        message_count=count,
        first_message=first or "(no messages)",
        all_messages_text=" ".join(texts),
        size=size,
        last_activity=ms_to_datetime(newest_ms) or modified,
        cost=UsageStatistics.of(records[1:]).reported(OMP_18_2.usage).cost,  # model_usage included
        first_prompt=prompt or first or "",
    )
