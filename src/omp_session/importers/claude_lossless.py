"""The lossless half of the Claude conversion: each named deviation from omp (docs/importers.md).

:class:`LosslessParts` is mixed into the converter (``claude_convert``); it keeps what omp drops
(records as ``claude_record`` entries in their place in the tree, a ``compact_boundary`` as a real
``compaction``, sub-agent transcripts), merges a response split over records, and adds omp's own
fields for what its importer loses (``details``, ``stopDetails``, ``redactedThinking``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from omp_session.format.ids import iso_from_ms
from omp_session.importers.base import ConvertedSession, js_string
from omp_session.importers.claude_records import (
    Converted,
    claude_timestamp_ms,
    message_text,
    stop_details,
    with_redacted_thinking,
)
from omp_session.importers.jsonl import ReadStats, complete_length, iter_raw_records

Entry = dict[str, Any]

#: A compaction's summary record follows its boundary at once; after this many lines it is final.
_FOLD_WINDOW = 8

#: The fields of an assistant message with a ``responseId`` and no error or stop details
#: (``claude_records._assistant``).
_PLAIN_ASSISTANT_FIELDS = 9

#: Deviation names (docs/importers.md).
KEPT_RECORD = "claude.kept_record"
COMPACTION = "claude.compaction"
MERGED_RESPONSE = "claude.merged_response"
TOOL_DETAILS = "claude.tool_result_details"
STOP_DETAILS = "claude.stop_details"
REDACTED_THINKING = "claude.redacted_thinking"
SUBAGENT = "claude.subagent_transcript"


class LosslessParts:
    """The converter's lossless deviations; the state and the three helpers are the converter's."""

    out: ConvertedSession
    raw_records: bool
    mtime_ms: int | float
    tails: dict[str, tuple[int, str]]
    meta_tail: str | None
    compactions: dict[str, tuple[int, Entry]]
    counter: int
    upstream_leaf: str | None
    last_assistant: Entry | None
    pending_redacted: tuple[Any, list[dict[str, Any]]] | None
    subagent_progress: dict[str, dict[str, Any]]
    float_free: set[int]

    def unique(self, base: str) -> str:
        raise NotImplementedError

    def resolve(self, parent_uuid: str | None, line: int) -> tuple[str | None, str | None]:
        raise NotImplementedError

    def emit(self, entry: Entry, pending_cursor: str | None, line: int) -> None:
        raise NotImplementedError

    def _keep_dropped(
        self, line: int, record: dict[str, Any], kept: Any, key: str, uuid: str | None, iso: str
    ) -> None:
        if record.get("type") == "system" and record.get("subtype") == "compact_boundary" and uuid:
            self._compaction(line, record, kept, key, uuid, iso)
            return
        entry_id = self.unique(f"claude-{key}-record")
        entry: Entry = {
            "type": "custom",
            "customType": "claude_record",
            "data": {"line": line, "record": kept},
            "id": entry_id,
            "parentId": None,
            "timestamp": iso,
        }
        if uuid:
            parent_uuid = js_string(record.get("parentUuid"))
            parent, cursor = self.resolve(parent_uuid, line)
            entry["parentId"] = parent
            self.emit(entry, cursor, line)
            self.tails[key] = (line, entry_id)
        else:  # records outside the uuid tree form one chain of their own, in file order
            entry["parentId"] = self.meta_tail
            self.emit(entry, None, line)
            self.meta_tail = entry_id
        if type(kept) is orjson.Fragment:  # the line number and strings only: no float
            self.float_free.add(id(entry))
        self.out.note(KEPT_RECORD)

    def _compaction(
        self, line: int, record: dict[str, Any], kept: Any, key: str, uuid: str, iso: str
    ) -> None:
        parent, cursor = self.resolve(js_string(record.get("logicalParentUuid")), line)
        if parent is None and cursor is None:
            parent, cursor = self.resolve(js_string(record.get("parentUuid")), line)
        meta = record.get("compactMetadata")
        pre_tokens = meta.get("preTokens") if isinstance(meta, dict) else None
        entry_id = self.unique(f"claude-{key}-compaction")
        content = record.get("content")
        entry: Entry = {
            "type": "compaction",
            "id": entry_id,
            "parentId": parent,
            "timestamp": iso,
            "summary": content if isinstance(content, str) and content else "Conversation compacted",
            "shortSummary": "Imported Claude Code compaction",
            "firstKeptEntryId": entry_id,
            "tokensBefore": pre_tokens if isinstance(pre_tokens, int | float) else 0,
            "details": {"source": "claude", "boundary": {"line": line, "record": kept}},
        }
        self.emit(entry, cursor, line)
        self.tails[key] = (line, entry_id)
        self.compactions[uuid] = (line, entry)
        self.out.note(COMPACTION)

    def _fold_into_compaction(
        self, record: dict[str, Any], kept: Any, key: str, line: int, converted: list[Converted]
    ) -> bool:
        """The ``isCompactSummary`` record after a boundary is that compaction's summary."""
        if record.get("isCompactSummary") is not True:
            return False
        boundary = js_string(record.get("parentUuid")) or ""
        pending = self.compactions.pop(boundary, None)
        if pending is None or line - pending[0] > _FOLD_WINDOW:
            return False
        compaction = pending[1]
        self.counter += len(converted)  # keep omp's ids for every later record
        compaction["summary"] = message_text(converted[0][0])
        compaction["details"]["summary"] = {"line": line, "record": kept}
        self.tails[key] = (line, compaction["id"])
        self.upstream_leaf = compaction["id"]
        return True

    def _merge_split_response(
        self,
        record: dict[str, Any],
        kept: Any,
        key: str,
        line: int,
        parent: str | None,
        converted: list[Converted],
    ) -> bool:
        """A record continuing the response of its parent (same ``message.id``) joins that message."""
        previous = self.last_assistant
        if previous is None or parent != previous["id"] or record.get("type") != "assistant":
            return False
        message, new = previous["message"], converted[0][0]
        response = new.get("responseId")
        if response is None or response != message.get("responseId") or new["model"] != message["model"]:
            return False
        self.counter += 1
        message["content"].extend(new["content"])
        # Claude Code repeats the response's usage on every record: take it once, from the last.
        message["usage"] = new["usage"]
        message["stopReason"] = new["stopReason"]
        if len(new) > _PLAIN_ASSISTANT_FIELDS:  # an error or stop details: those too
            for field in ("stopDetails", "errorMessage", "errorStatus"):
                if field in new:
                    message[field] = new[field]
        previous.setdefault("sourceRecords", []).append({"line": line, "record": kept})
        self.tails[key] = (line, previous["id"])
        self.upstream_leaf = previous["id"]
        self.out.note(MERGED_RESPONSE)
        return True

    def _assistant_extras(self, record: dict[str, Any], message: dict[str, Any]) -> None:
        """omp's own fields for what its importer drops: ``stopDetails`` of an unknown stop reason,
        ``redactedThinking`` blocks (with those of earlier skipped records of the same response)."""
        source = record["message"]
        raw_stop = source.get("stop_reason")
        if raw_stop is not None and (details := stop_details(record, source)) is not None:
            message["stopDetails"] = details
            self.out.note(STOP_DETAILS)
        blocks = source.get("content")
        if type(blocks) is list and any(
            type(block) is dict and block.get("type") == "redacted_thinking" for block in blocks
        ):
            content, added = with_redacted_thinking(blocks, message["content"])
            if added:
                message["content"] = content
                self.out.note(REDACTED_THINKING, added)
        if self.pending_redacted is not None:
            pending, self.pending_redacted = self.pending_redacted, None
            if pending[0] == message.get("responseId"):
                message["content"][0:0] = pending[1]

    def _hold_redacted(self, record: dict[str, Any]) -> None:
        """A record omp skips that holds only redacted thinking: Claude Code writes one content
        block per record, so it is the start (or a middle part) of a response whose message is
        built from the next records. Its blocks join that message (the record itself is kept)."""
        source = record.get("message")
        if not isinstance(source, dict) or record.get("isSidechain") is True or record.get("isMeta") is True:
            return
        blocks, added = with_redacted_thinking(source.get("content"), [])
        if not added:
            return
        self.out.note(REDACTED_THINKING, added)
        response = js_string(source.get("id"))
        previous = self.last_assistant
        if response and previous is not None and previous["message"].get("responseId") == response:
            previous["message"]["content"].extend(blocks)  # still held back from the sink
        else:
            self.pending_redacted = (response, blocks)

    def _attach_tool_details(self, record: dict[str, Any], converted: list[Converted]) -> None:
        for item in converted:
            if item[0].get("role") == "toolResult":
                item[0]["details"] = record["toolUseResult"]
                self.out.note(TOOL_DETAILS)
                return

    def keep_subagents(self, transcript: str) -> None:
        directory = Path(transcript).with_suffix("") / "subagents"
        try:
            files = sorted(p for p in directory.iterdir() if p.name.endswith(".jsonl") and p.is_file())
        except OSError:
            return
        for path in files:
            name = f"subagents/{path.name}"
            progress = self.subagent_progress.get(name, {"bytes": 0, "line": 0, "tail": None})
            parent: str | None = progress["tail"]
            start, line = progress["bytes"], progress["line"]
            # A last line without LF is still being written: the next update reads it whole.
            complete = complete_length(path)
            if complete <= start:
                continue
            read = ReadStats()
            records = iter_raw_records(path, read, complete - start, start=start, first_line=line + 1)
            for line, record, raw in records:
                kept = orjson.Fragment(raw) if raw is not None and self.raw_records else record
                iso = iso_from_ms(int(claude_timestamp_ms(record.get("timestamp"), self.mtime_ms)))
                entry_id = self.unique(f"claude-subagent-{path.stem}-{line}")
                data = {"file": name, "line": line, "record": kept}
                self.emit(
                    {
                        "type": "custom",
                        "customType": "claude_subagent_record",
                        "data": data,
                        "id": entry_id,
                        "parentId": parent,
                        "timestamp": iso,
                    },
                    None,
                    line,
                )
                parent = entry_id
            self.subagent_progress[name] = {"bytes": complete, "line": read.lines, "tail": parent}
            self.out.note(SUBAGENT)


__all__ = [
    "COMPACTION",
    "KEPT_RECORD",
    "MERGED_RESPONSE",
    "REDACTED_THINKING",
    "STOP_DETAILS",
    "SUBAGENT",
    "TOOL_DETAILS",
    "LosslessParts",
]
