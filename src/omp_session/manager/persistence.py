"""Writing a session and following a live writer: the one writer every part of the manager goes through.

Appends are written synchronously as one ``write`` before the entry joins the tree; a failed
write leaves memory unchanged; a full rewrite is atomic (temp file, fsync, rename) and keeps a
backup of a migrated or malformed file (spec §7.2, §9; omp18-differences §5.4).

Internal module (part of :class:`~omp_session.SessionManager`, which is the API); not part of the public API.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omp_session.format.codec import decode_lines
from omp_session.format.entries import is_assistant_entry
from omp_session.format.title_slot import SLOT_BYTES, TitleSlot, encode_slot, fold_into_header, split_slot
from omp_session.format.transform import prepare_for_disk
from omp_session.manager.state import SessionState
from omp_session.store.loading import parse_session, transform_loaded

__all__ = ["Persistence"]

Entry = dict[str, Any]


class Persistence:
    """Persist, append, rewrite and refresh one session's state."""

    def __init__(self, state: SessionState) -> None:
        self._state = state

    # ------------------------------------------------------------------ the title slot

    def writes_slot(self) -> bool:
        """Whether a full write starts with the title slot: a file that has one keeps it; a
        slot-less file gains one only under an explicit omp 18 dialect (never in auto mode)."""
        state = self._state
        return state.has_slot or (state.dialect.title_slot and not state.layout_locked)

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
        if state.hold_writes:
            return  # inside append_entries_atomically: written by its one rewrite
        if not (state.ensured or state.has_assistant or is_assistant_entry(entry)):
            state.flushed = False  # held in memory until an assistant message exists (§7.2)
            return
        if state.migrated_from is not None or not state.flushed or state.rewrite_pending:
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
        backup = f".v{state.migrated_from}.bak" if state.migrated_from is not None else None
        if backup is None and state.rewrite_pending:
            backup = state.rewrite_backup  # omp 18 drops malformed lines; we keep the old file beside
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
        state.has_slot = with_slot
        state.flushed = True
        state.migrated_from = None
        state.rewrite_pending = False

    def append(self, entry: Entry) -> str:
        """Write ``entry``, then add it to the tree and move the leaf to it; returns its id."""
        state = self._state
        entry_id = entry["id"]
        if state.sealed:
            return str(entry_id)  # omp 18: appends after seal() are dropped
        self.persist(entry)
        state.index.add(entry)
        state.leaf = entry_id
        state.usage.add_entry(entry)
        if not state.has_assistant:
            state.has_assistant = is_assistant_entry(entry)
        return str(entry_id)

    def flush(self) -> None:
        self._state.storage.flush()

    def close(self) -> None:
        self._state.storage.close()

    # ------------------------------------------------------------------ following a writer

    def refresh(self) -> list[Entry]:
        """Entries appended to the file since it was read (complete lines only); they move the leaf."""
        state = self._state
        if not state.persistent or not state.storage.exists():
            return []
        if state.read_only and state.storage.replaced_since_read():
            return self._reload()
        data = state.storage.read_from(state.read_offset)
        complete = data[: data.rfind(b"\n") + 1]
        if not complete:
            return []
        state.read_offset += len(complete)
        added = decode_lines(complete).records
        # As a load would give them (blob references, OpenAI replay), and a replay dropped here
        # makes the next write a rewrite, as after an open (a read-only follower never writes).
        if transform_loaded(added, complete, state.storage.blobs, state.dialect.keeps_openai_replay):
            state.replay_dropped()
        for entry in added:
            state.index.add(entry)
            state.usage.add_entry(entry)
            state.has_assistant = state.has_assistant or is_assistant_entry(entry)
            if isinstance(entry.get("id"), str):
                state.leaf = entry["id"]
        if state.has_slot and any(entry.get("type") == "title_change" for entry in added):
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
        state.reset(loaded.header, loaded.entries, loaded.title_slot, index=loaded.entry_index())
        state.read_offset = data.rfind(b"\n") + 1
        return [entry for entry in loaded.entries if entry.get("id") not in seen]
