"""The heads of listed files, kept in this process by file version: a second listing of the same
files reads only what changed.

A listing without a cache reads each file's head (``summary.read_head``); :class:`HeadCache`
keeps what a head said (:data:`~.summary.Head`: the few fields of the head, never the file's bytes
nor the fields of the rest) under the file's :class:`~.info.FileKey` (size, mtime and ctime in ns,
inode) as it was ``fstat``-ed before the head was read. A later listing ``stat``-s each file and
reuses the kept head only when the key is the same, so a file that changed in any way since
(appended, rewritten, touched, replaced by another file, its mode changed: each changes the
ctime, which no call can set back) is read again. Each listing builds fresh infos from the kept
heads, whose other fields are read from the file when first used, as a first listing's are.

A key can miss one change: a rewrite of the same size within the same tick of the file system's
clock as the ``fstat`` (its times then do not change; "racy", as git calls it). So a file modified
within ``racy_ns`` of the moment its head was read is not kept (it is read again by every listing
until it has been still that long), as the offset index treats such files (``Tuning.racy_ns``).

Memory is bounded: the heads kept weigh at most ``budget_bytes`` (estimated from the bytes of the
head each was read from, which its fields come from), the least recently listed dropped first.

Internal module (used by :mod:`omp_session.store.listing`); not part of the public API.
"""

from __future__ import annotations

import os
import stat as stat_module
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from omp_session.gcpause import gc_paused
from omp_session.store.listing.info import FileKey, SessionInfo
from omp_session.store.listing.summary import HEAD_BYTES, TAIL_BYTES, Head, head_info, read_head
from omp_session.store.tuning import DEFAULT_TUNING

__all__ = ["HEADS", "HeadCache"]

#: What a kept head costs beyond the bytes it was read from: the key, the dict of its fields and
#: their objects (an estimate; a small info's own fields are counted in its bytes).
_OVERHEAD_BYTES = 1024


class HeadCache:
    """File heads by path and :class:`FileKey`, at most ``budget_bytes`` of them (see the module).

    Thread-safe: listings may run in several threads at once (each adds what it read at its end).
    """

    def __init__(
        self,
        budget_bytes: int = 64 << 20,
        *,
        racy_ns: int = DEFAULT_TUNING.racy_ns,
        head_bytes: int = HEAD_BYTES,
        tail_bytes: int = TAIL_BYTES,
    ) -> None:
        self.budget_bytes = budget_bytes
        self.racy_ns = racy_ns
        self.head_bytes = head_bytes
        self.tail_bytes = tail_bytes
        #: path -> (the file's key, its head, its weight), least recently listed first.
        self._heads: dict[str, tuple[FileKey, Head, int]] = {}
        self._weight = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._heads)

    @property
    def weight(self) -> int:
        """The estimated bytes of the heads kept (at most :attr:`budget_bytes`)."""
        return self._weight

    def clear(self) -> None:
        """Forget every head kept."""
        with self._lock:
            self._heads.clear()
            self._weight = 0

    def summaries(
        self, entries: Sequence[os.DirEntry[str]], under: Path, skipped: list[tuple[str, str]]
    ) -> list[SessionInfo]:
        """The sessions among ``entries`` (a :data:`~omp_session.store.listing.Summaries`): each
        from its kept head when the file's key is unchanged (one ``stat``), else from its head read
        now (then kept); the rest of each is read on first use. A file that cannot be read is added
        to ``skipped``. Writes nothing but this cache."""
        heads = self._heads
        infos: list[SessionInfo] = []
        listed: list[str] = []  # kept heads used, to mark them recently listed
        fresh: list[tuple[str, FileKey, Head, int]] = []
        tail_bytes = self.tail_bytes
        with gc_paused():  # thousands of acyclic objects at once: see gcpause.py
            for entry in entries:
                path = entry.path
                kept = heads.get(path)
                head: Head
                if kept is not None and _unchanged(entry, kept[0]):
                    head = kept[1]
                    listed.append(path)
                else:
                    try:
                        found, head, source = read_head(path, self.head_bytes)
                    except OSError:
                        skipped.append((path, "cannot be read"))
                        continue
                    if not self._racy(found):
                        weight = source + len(path) + _OVERHEAD_BYTES
                        fresh.append((path, FileKey.of(found), head, weight))
                info = head_info(head, tail_bytes)
                if info is not None:
                    infos.append(info)
        if listed or fresh:
            self._keep(listed, fresh)
        return infos

    def _racy(self, found: os.stat_result) -> bool:
        """Modified so recently that a change within the same clock tick would not show."""
        return time.time_ns() - max(found.st_mtime_ns, found.st_ctime_ns) < self.racy_ns

    def _keep(self, listed: list[str], fresh: list[tuple[str, FileKey, Head, int]]) -> None:
        """Mark ``listed`` as recently listed, add ``fresh``, and drop the least recently listed
        heads beyond the budget."""
        with self._lock:
            heads = self._heads
            for path in listed:
                kept = heads.pop(path, None)
                if kept is not None:
                    heads[path] = kept
            for path, key, head, weight in fresh:
                if weight > self.budget_bytes:
                    continue
                old = heads.pop(path, None)
                if old is not None:
                    self._weight -= old[2]
                heads[path] = (key, head, weight)
                self._weight += weight
            if self._weight > self.budget_bytes:
                for path in list(heads):
                    self._weight -= heads.pop(path)[2]
                    if self._weight <= self.budget_bytes:
                        break


def _unchanged(entry: os.DirEntry[str], key: FileKey) -> bool:
    """Whether the file ``entry`` names is still the regular file of ``key``."""
    try:
        found = entry.stat()
    except OSError:
        return False  # gone or unreadable: reading it says which
    return stat_module.S_ISREG(found.st_mode) and FileKey.of(found) == key


#: The heads every listing of this process without a cache of its own keeps
#: (``SessionManager.list``, ``list_all``).
HEADS = HeadCache()
