"""Whether a session file still holds what its offset index describes.

The index covers the file up to the last newline it saw (``covered``). It is used only
if the file still has at least ``covered`` bytes and the same header line and the same bytes at 18
sampled places of the covered part (start, 16 evenly spaced blocks, the last 64 KiB); bytes
appended since are indexed on open (that is what makes it append-only). A file that changed since
it was indexed (other size or times) must also still have the CRC-32 of the whole covered part
recorded when it was indexed: another program may have edited lines in place *and* appended, and
the usage totals, counted from every line, are not validated by any read (issue 11 item 8). An
unchanged file (the warm open) is not read for it. Every line read through
it is checked again (it sits between newlines, decodes to an object and has the recorded id).
Anything else (missing, truncated, corrupt, another format) and the file is loaded in full and the
index rebuilt. Deleting it changes no result, only the time ``open`` takes.

Internal module (part of ``SessionManager.open``); not part of the public API.
"""

from __future__ import annotations

import hashlib
import os
import time
import zlib
from collections.abc import Callable
from typing import Any

from omp_session.store.tuning import Tuning

__all__ = ["changed_in_place", "file_state", "fingerprint"]


def fingerprint(read: Callable[[int, int], bytes], covered: int, header_line: bytes, tuning: Tuning) -> str:
    """A hash of the header line and of sampled blocks of the first ``covered`` bytes (the sizes
    of ``tuning``); ``read(size, offset)`` reads the file (``os.pread`` with a descriptor, or a
    slice)."""
    sample, tail_sample = tuning.fingerprint_sample_bytes, tuning.fingerprint_tail_bytes
    digest = hashlib.blake2b(header_line, digest_size=16)
    digest.update(covered.to_bytes(8, "little"))
    starts = [0, *(covered * k // 17 for k in range(1, 17)), max(0, covered - tail_sample)]
    for start in starts:
        size = min(tail_sample if start == starts[-1] else sample, covered - start)
        block = read(size, start)
        if len(block) != size:
            return ""  # the file is shorter than the index says
        digest.update(block)
    return digest.hexdigest()


_CRC_CHUNK = 8 << 20


def _crc(read: Callable[[int, int], bytes], size: int) -> int:
    # CRC-32 of the first ``size`` bytes, read in chunks (no copy of a large file at once).
    crc, at = 0, 0
    while at < size:
        block = read(min(_CRC_CHUNK, size - at), at)
        if not block:
            return -1  # shorter than it was: never the recorded CRC
        crc, at = zlib.crc32(block, crc), at + len(block)
    return crc


def file_state(stat: os.stat_result, prefix_crc: int, tuning: Tuning) -> dict[str, Any]:
    """What the index records of the file it describes (issue 11 item 8): its size and its
    modification and change times in nanoseconds, ``prefix_crc`` (the CRC-32 of the covered part,
    computed by the caller where the bytes pass anyway) and, when the file was modified within
    ``tuning.racy_ns`` of now (a file modified this recently may be modified again within the same
    tick of the file system's clock, which the recorded times would not show: "racy", as git
    calls it), that CRC again as ``racy_crc``."""
    racy = time.time_ns() - max(stat.st_mtime_ns, stat.st_ctime_ns) < tuning.racy_ns
    return {
        "stat": [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns],
        "prefix_crc": prefix_crc,
        "racy_crc": prefix_crc if racy else None,
    }


def changed_in_place(meta: dict[str, Any], stat: os.stat_result, read: Callable[[int, int], bytes]) -> bool:
    """Whether the file was changed since it was indexed other than by appending (then the index
    may describe other content: the usage totals, the state of an entry no read validates).

    Same size but other times: an edit in place (or a ``touch``; the index is rebuilt once).
    Shorter: truncated. Longer: appended, which an index allows (the appended lines are
    indexed on open), but maybe edited in place as well: the covered part must still have the
    CRC recorded for it (one read of it, on the first open after the file grew; the index then
    written records the new size). A racy index (see :func:`file_state`) is checked against the
    CRC of what it covers."""
    recorded = meta.get("stat")
    if not isinstance(recorded, list) or len(recorded) != 3:
        return True  # an index written before these were recorded: rebuild it once
    size, mtime, ctime = recorded
    if stat.st_size < size or (
        stat.st_size == size and [stat.st_mtime_ns, stat.st_ctime_ns] != [mtime, ctime]
    ):
        return True
    if stat.st_size > size:
        recorded_crc = meta.get("prefix_crc")
        return type(recorded_crc) is not int or _crc(read, int(meta["covered"])) != recorded_crc
    racy = meta.get("racy_crc")
    return racy is not None and _crc(read, int(meta["covered"])) != racy
