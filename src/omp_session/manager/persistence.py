"""Writing a session and following a live writer: the one writer every part of the manager goes through.

Appends are written synchronously as one ``write`` before the entry joins the tree; a failed
write leaves memory unchanged; a full rewrite is atomic (temp file, fsync, rename) and keeps a
backup of a migrated or malformed file (spec §7.2, §9; omp18-differences §5.4).

It owns what is on disk (whether the file holds every entry, whether ``ensure_on_disk`` ran,
the title slot, a pending rewrite and its backup, how far a follower read, ``seal``, held
writes): the other parts read these through its properties and change them only through its
named transitions (``reset``, ``started_afresh``, ``written_whole``, ``lost_file``, ``seal``,
``holding_writes``, ``restore_flags``), never by setting a field.

Internal module (part of :class:`~omp_session.SessionManager`, which is the API); not part of the public API.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from omp_session.format.codec import BLANK, LineIssue, decode_lines
from omp_session.format.entries import is_assistant_entry
from omp_session.format.title_slot import SLOT_BYTES, TitleSlot, encode_slot, fold_into_header, split_slot
from omp_session.format.transform import prepare_for_disk
from omp_session.manager.state import SessionState
from omp_session.model.tree import EntryIndex
from omp_session.store.loading import parse_session, transform_loaded

__all__ = ["DiskFlags", "Persistence"]

Entry = dict[str, Any]


class DiskFlags(NamedTuple):
    """The write flags a snapshot keeps (``capture_state``) and a rollback restores."""

    has_slot: bool
    flushed: bool
    ensured: bool


class Persistence:
    """Persist, append, rewrite and refresh one session's state; owns what is on disk."""

    def __init__(
        self,
        state: SessionState,
        *,
        ensured: bool = False,
        flushed: bool = False,
        migrated_from: int | None = None,
        has_slot: bool = False,
        read_offset: int = 0,
        issues: Sequence[LineIssue] = (),
    ) -> None:
        """The persistence of ``state`` as it was opened or created: ``ensured`` (every later
        entry is written at once), ``flushed`` (the file holds every entry), ``migrated_from``
        (a v1/v2 file's version), ``has_slot`` (the file starts, or will start, with omp 18's
        title slot), ``read_offset`` (how far the file was read) and the load's ``issues``."""
        self._state = state
        self._ensured = ensured
        self._flushed = flushed
        self._migrated_from = migrated_from
        self._has_slot = has_slot
        self._read_offset = read_offset
        # omp 18: the first write after a load with malformed lines (§5.4), or one that dropped a
        # ``github-copilot`` OpenAI replay (``replay_dropped``), rewrites the file; the replaced
        # file is kept beside it under ``_rewrite_backup`` (we keep what omp drops).
        self._rewrite_pending = state.dialect.rewrite_after_malformed and any(
            issue.skipped and issue.reason != BLANK for issue in issues
        )
        self._rewrite_backup = ".malformed.bak"
        #: omp 18 ``seal()``: appends and renames are dropped.
        self._sealed = False
        #: Inside ``append_entries_atomically``: appends stay in memory until its one rewrite.
        self._hold_writes = False

    # ------------------------------------------------------------------ what is on disk

    @property
    def ensured(self) -> bool:
        """``ensure_on_disk`` ran (or the file was loaded): every later entry is written at once."""
        return self._ensured

    @property
    def flushed(self) -> bool:
        """The file holds every entry in memory (else the next write is a full rewrite)."""
        return self._flushed

    @property
    def migrated_from(self) -> int | None:
        """The version a v1/v2 file was migrated from; its first write rewrites it with a backup."""
        return self._migrated_from

    @property
    def has_slot(self) -> bool:
        """Whether the file starts (or will start) with omp 18's title slot."""
        return self._has_slot

    @property
    def sealed(self) -> bool:
        return self._sealed

    def get_migrated_from(self) -> int | None:
        """The format version the file had when it was opened, if it was migrated in memory and not
        yet written back (``None`` otherwise). Version 1 files get their entry ids at load."""
        return self._migrated_from

    def is_current(self) -> bool:
        """The file is exactly the entries in memory: an append (or a slot overwrite) suffices."""
        return self._flushed and self._migrated_from is None and not self._rewrite_pending

    def flags(self) -> DiskFlags:
        return DiskFlags(self._has_slot, self._flushed, self._ensured)

    # ------------------------------------------------------------------ transitions

    def replay_dropped(self) -> None:
        """A load (or a follower's refresh) dropped a kept OpenAI replay (``github-copilot``'s):
        the file no longer matches memory, so omp 18 rewrites it at the next write; the replaced
        file is kept as ``.replay.bak`` (unless a rewrite is already due for malformed lines)."""
        if not self._rewrite_pending:
            self._rewrite_pending, self._rewrite_backup = True, ".replay.bak"

    def reset(
        self,
        header: Entry,
        entries: Sequence[Entry],
        title_slot: TitleSlot | None = None,
        *,
        index: EntryIndex | None = None,
        keep_slot: bool = False,
    ) -> None:
        """Take ``header`` and ``entries`` as the whole session (a reload, a new file, a
        rollback; ``SessionState.reset``): no rewrite is pending, nothing is migrated, and the file
        has a title slot when ``title_slot`` is given (or, with ``keep_slot``, as it had)."""
        self._state.reset(header, entries, title_slot, index=index)
        if not keep_slot:
            self._has_slot = title_slot is not None
        self._rewrite_pending = False
        self._migrated_from = None

    def started_afresh(self, header: Entry) -> None:
        """A new session on a fresh storage (``new_session``): only ``header``, nothing written
        yet (it is held until an assistant message or ``ensure_on_disk``); the slot rule kept."""
        self.reset(header, [], keep_slot=True)
        self._ensured = self._flushed = False

    def written_whole(self) -> None:
        """The storage now holds every entry in memory, in the current version (a branch or
        fork written to its new file)."""
        self._flushed = True
        self._migrated_from = None

    def lost_file(self) -> None:
        """The storage was replaced by a fresh one (the file was dropped): the next write is
        whole."""
        self._flushed = False

    def restore_flags(self, flags: DiskFlags) -> None:
        """Back to ``flags`` (a rollback to a ``capture_state`` snapshot)."""
        self._has_slot, self._flushed, self._ensured = flags

    def seal(self) -> None:
        """omp 18 ``seal()``: appends and renames are dropped from now on."""
        self._sealed = True

    @contextmanager
    def holding_writes(self) -> Iterator[None]:
        """Keep appends in memory meanwhile (the caller rewrites once at the end)."""
        self._hold_writes = True
        try:
            yield
        finally:
            self._hold_writes = False

    def ensure_on_disk(self) -> None:
        """Write the session now and persist every later entry immediately (the file is written
        only when it does not hold every entry, is migrated, or is missing)."""
        state = self._state
        state.require_writable()
        if not self._flushed or self._migrated_from is not None or not state.storage.exists():
            self.rewrite_all()
        self._ensured = True

    # ------------------------------------------------------------------ the title slot

    def writes_slot(self) -> bool:
        """Whether a full write starts with the title slot: a file that has one keeps it; a
        slot-less file gains one only under an explicit omp 18 dialect (never in auto mode)."""
        state = self._state
        return self._has_slot or (state.dialect.title_slot and not state.layout_locked)

    def slot_line(self) -> bytes:
        state = self._state
        updated = state.title_updated_at or str(state.header.get("timestamp") or "")
        return encode_slot(TitleSlot(state.session_name or "", updated, state.title_source))

    # ------------------------------------------------------------------ writing

    def persist(self, entry: Entry) -> None:
        """Write ``entry`` (not yet in memory) or decide to hold it; raises before memory changes."""
        state = self._state
        if state.read_only:
            state.require_writable()
        if self._hold_writes:
            return  # inside append_entries_atomically: written by its one rewrite
        if not (self._ensured or state.has_assistant or is_assistant_entry(entry)):
            self._flushed = False  # held in memory until an assistant message exists (§7.2)
            return
        if self._migrated_from is not None or not self._flushed or self._rewrite_pending:
            self.rewrite_all(extra=entry)
            return
        storage = state.storage  # the disk line inlined: this is every append's path
        storage.append_entry(entry, prepare_for_disk(entry, storage.blobs, state.dialect.persist))

    def disk_line(self, entry: Entry) -> bytes:
        """The line written for ``entry`` (the dialect's persistence transform)."""
        return prepare_for_disk(entry, self._state.storage.blobs, self._state.dialect.persist)

    def head_lines(self, header: Entry) -> list[bytes]:
        """The lines before the entries of a full write: the title slot (if any), the header."""
        head = [self.disk_line(header)]
        if self.writes_slot():
            head.insert(0, self.slot_line())
        return head

    def rewrite_all(self, extra: Entry | None = None) -> None:
        """Atomically replace the file with header + every entry (+ ``extra``); the lines of
        entries that did not change are copied from the file as they are."""
        state = self._state
        state.require_writable()
        backup = f".v{self._migrated_from}.bak" if self._migrated_from is not None else None
        if backup is None and self._rewrite_pending:
            backup = self._rewrite_backup  # omp 18 drops malformed lines; we keep the old file beside
        with_slot = self.writes_slot()
        # The entries as the index holds them (a lazy index: a view decoding only the lines the
        # storage encodes again; it copies the others from its file).
        state.storage.write_entries(
            self.head_lines(state.header),
            state.index.entries,
            self.disk_line,
            extra=extra,
            backup_suffix=backup,
        )
        self._has_slot = with_slot
        self._flushed = True
        self._migrated_from = None
        self._rewrite_pending = False

    def append(self, entry: Entry) -> str:
        """Write ``entry``, then add it to the tree and move the leaf to it; returns its id."""
        state = self._state
        entry_id = entry["id"]
        if self._sealed:
            return str(entry_id)  # omp 18: appends after seal() are dropped
        self.persist(entry)
        state.index.add(entry)
        state.leaf = entry_id
        state.usage.add_entry(entry)
        if not state.has_assistant:
            state.has_assistant = is_assistant_entry(entry)
        return str(entry_id)

    def flush(self) -> None:
        """Make every written entry durable (fsync)."""
        self._state.storage.flush()

    def close(self) -> None:
        """Flush and release the file and its lock. The manager must not be used afterwards."""
        self._state.storage.close()

    # ------------------------------------------------------------------ following a writer

    def refresh(self) -> list[Entry]:
        """Read entries appended to the file since it was loaded (for read-only followers).

        Only complete lines are read; returns the new entries, which also move the leaf. If the
        writer replaced the file meanwhile (a full rewrite), it is read again in full.
        """
        """Entries appended to the file since it was read (complete lines only); they move the leaf."""
        state = self._state
        if not state.persistent or not state.storage.exists():
            return []
        if state.read_only and state.storage.replaced_since_read():
            return self._reload()
        data = state.storage.read_from(self._read_offset)
        complete = data[: data.rfind(b"\n") + 1]
        if not complete:
            return []
        self._read_offset += len(complete)
        added = decode_lines(complete).records
        # As a load would give them (blob references, OpenAI replay), and a replay dropped here
        # makes the next write a rewrite, as after an open (a read-only follower never writes).
        if transform_loaded(added, complete, state.storage.blobs, state.dialect.keeps_openai_replay):
            self.replay_dropped()
        for entry in added:
            state.index.add(entry)
            state.usage.add_entry(entry)
            state.has_assistant = state.has_assistant or is_assistant_entry(entry)
            if isinstance(entry.get("id"), str):
                state.leaf = entry["id"]
        if self._has_slot and any(entry.get("type") == "title_change" for entry in added):
            self._follow_title_slot()
        return added

    def _follow_title_slot(self) -> None:
        # omp 18 renames in place: a title_change line is appended and the slot overwritten (same
        # inode, so no reload). The slot, not the entry, is what a load would show: read it.
        state = self._state
        slot = split_slot(state.storage.read_from(0)[:SLOT_BYTES])[0]
        if slot is None:
            return
        fold_into_header(state.header, slot)
        state.session_name = slot.title or None
        state.title_source, state.title_updated_at = slot.source, slot.updated_at

    def _reload(self) -> list[Entry]:
        # The writer replaced the file (a migration, rename or repair): read it again in full and
        # report the entries this reader had not seen.
        state = self._state
        data = state.storage.read()
        keep = state.dialect.keeps_openai_replay
        loaded = parse_session(
            Path(str(state.session_file())), data, state.storage.blobs, lambda _has_slot: keep
        )
        seen = set(state.index.by_id)
        self.reset(loaded.header, loaded.entries, loaded.title_slot, index=loaded.entry_index())
        self._read_offset = data.rfind(b"\n") + 1
        return [entry for entry in loaded.entries if entry.get("id") not in seen]
