"""The checks of a session file's first lines (spec §7.5 step 3; omp18-differences §1.3): is a
value a session header, is a file blank or only a title slot, where a header was expected, and
peeling omp 18's title slot off the decoded records.

Pure: callers pass bytes or decoded lines (the readers are in :mod:`omp_session.store.loading`).
"""

from __future__ import annotations

import re
from typing import Any

from omp_session.format.codec import BLANK, DecodedFile, decode_lines
from omp_session.format.title_slot import TitleSlot, slot_from_value

__all__ = ["header_problem_line", "is_blank", "is_session_header", "is_slot_only", "peel_title_slot"]


def is_session_header(value: Any) -> bool:
    """``{type: "session", id: <string>}``: the only validity test omp applies (§7.5 step 3)."""
    return isinstance(value, dict) and value.get("type") == "session" and isinstance(value.get("id"), str)


_NOT_BLANK = re.compile(rb"[^ \t\r\n\xef\xbb\xbf]")


def is_blank(data: bytes) -> bool:
    """True for a file with no data at all (empty or whitespace only): safe to start afresh."""
    return _NOT_BLANK.search(data) is None  # stops at the first byte of data (no copy)


def header_problem_line(decoded: DecodedFile) -> int | None:
    """``None`` when the first JSON value of the file is a session header (§7.5 step 3), else the
    line where the header was expected: the first line that holds anything."""
    records = decoded.records
    if records and decoded.first_value_line() == decoded.line_numbers[0] and is_session_header(records[0]):
        return None
    non_blank = [issue.line for issue in decoded.issues if issue.reason != BLANK]
    return min(non_blank + decoded.line_numbers[:1], default=1)


def peel_title_slot(decoded: DecodedFile, data: bytes) -> TitleSlot | None:
    """Remove an omp 18 title slot from the decoded records (omp18-differences §1.3) and return it.

    Only line 1 can be a slot, and only when a newline ends it (omp parses the text before the
    first ``\n``). Line numbers of everything else stay physical, so errors name real lines.
    """
    if not decoded.records or decoded.line_numbers[0] != 1 or b"\n" not in data:
        return None
    slot = slot_from_value(decoded.records[0])
    if slot is not None:
        del decoded.records[0]
        del decoded.line_numbers[0]
        del decoded.offsets[:1]  # (empty where a caller collects records without their spans)
        del decoded.lengths[:1]
    return slot


def is_slot_only(data: bytes) -> bool:
    """A title slot and nothing else (blank lines aside): omp 18 starts a fresh session there."""
    decoded = decode_lines(data)
    slot = peel_title_slot(decoded, data)
    return slot is not None and not decoded.records and not decoded.skipped
