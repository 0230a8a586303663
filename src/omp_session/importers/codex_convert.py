"""A Codex rollout → omp entries (spec importers §2.2).

Two streaming passes: the first collects what ``response_item``s say (so that events repeating
them are skipped, as omp does), the second queues items; ids (``codex-<base 36 ordinal>``) are
given at the end, once rollbacks have settled the queue.

With ``lossless=True`` (the default) the named deviations of docs/importers.md apply: usage comes
from ``token_count`` events, rolled-back turns stay as an abandoned branch, a compaction's
``tokensBefore`` is the last reported context size, and every record that yields no entry is kept
as a ``codex_record`` custom entry; every entry keeps its record in ``sourceRecords``.
"""

from __future__ import annotations

from typing import Any

import orjson

from omp_session.errors import ForeignSessionError
from omp_session.format.ids import iso_from_ms
from omp_session.importers.base import ConvertedSession, ForeignSessionInfo
from omp_session.importers.codex_items import Canonical, Item, event, response_item, timestamp_ms
from omp_session.importers.jsonl import ReadStats, iter_records

Entry = dict[str, Any]

USAGE = "codex.token_usage"
ROLLBACK_BRANCH = "codex.rollback_branch"
KEPT_RECORD = "codex.kept_record"
TOKENS_BEFORE = "codex.compaction_tokens_before"
TOOL_ERROR = "codex.tool_error"
THINKING_LEVEL = "codex.thinking_level"

#: Codex reasoning efforts as omp 18's thinking levels (``none`` is omp's ``off``).
_THINKING_LEVELS = {
    "none": "off",
    "minimal": "minimal",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "xhigh",
}


def _base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        number, rest = divmod(number, 36)
        out = digits[rest] + out
        if number == 0:
            return out


def _compaction(payload: dict[str, Any]) -> dict[str, Any] | None:
    message = payload.get("message")
    summary = message.strip() if isinstance(message, str) else ""
    history = payload.get("replacement_history")
    if not (isinstance(history, list) and all(isinstance(h, dict) for h in history)):
        history = None
    if not summary and history is None:
        return None
    item = None
    for candidate in reversed(history or []):
        if (
            candidate.get("type") == "compaction" and isinstance(candidate.get("encrypted_content"), str)
        ) or (candidate.get("type") == "compaction_summary"):
            item = candidate
            break
    return {"summary": summary or "Context compacted by Codex.", "history": history, "item": item}


def failed_call(payload: dict[str, Any]) -> str | None:
    """The call id of an ``exec_command_end`` with a non-zero exit code or a ``patch_apply_end``
    that did not succeed: omp's own tools report such a result with ``isError: true``."""
    kind = payload.get("type")
    call_id = payload.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        return None
    if kind == "exec_command_end":
        code = payload.get("exit_code")
        return call_id if isinstance(code, int) and not isinstance(code, bool) and code != 0 else None
    if kind == "patch_apply_end" and payload.get("success") is False:
        return call_id
    return None


def _output_exit_code(output: Any) -> Any:
    """``metadata.exit_code`` of a function output written as Codex's ``{"output", "metadata"}``
    JSON text (older rollouts have no ``exec_command_end`` event)."""
    if not isinstance(output, str) or not output.startswith("{") or '"exit_code"' not in output:
        return None
    try:
        value = orjson.loads(output)
    except orjson.JSONDecodeError:
        return None
    metadata = value.get("metadata") if isinstance(value, dict) else None
    return metadata.get("exit_code") if isinstance(metadata, dict) else None


def _token_usage(info: Any) -> tuple[dict[str, Any], float] | None:
    """omp usage from ``last_token_usage`` (Codex's input tokens include the cached ones)."""
    last = info.get("last_token_usage") if isinstance(info, dict) else None
    if not isinstance(last, dict):
        return None

    def number(key: str) -> float:
        value = last.get(key)
        return value if isinstance(value, int | float) and not isinstance(value, bool) else 0

    cached = number("cached_input_tokens")
    usage: dict[str, Any] = {
        "input": max(number("input_tokens") - cached, 0),
        "output": number("output_tokens"),
        "cacheRead": cached,
        "cacheWrite": 0,
        "totalTokens": number("total_tokens") or number("input_tokens") + number("output_tokens"),
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }
    total: float = usage["totalTokens"]
    return usage, total


class _Queue:
    def __init__(
        self, info: ForeignSessionInfo, lossless: bool, out: ConvertedSession, failed: set[str]
    ) -> None:
        self.lossless = lossless
        #: Call ids whose command failed (lossless: their results get ``isError``).
        self.failed = failed
        self.out = out
        self.items: list[Item] = []
        #: Rolled-back items (lossless): (the entry-bearing item they hung from, the items).
        self.abandoned: list[tuple[Item | None, list[Item]]] = []
        self.kept_records: list[tuple[int, float, dict[str, Any]]] = []
        self.names: dict[str, str] = {}
        self.model = "codex"
        self.fallback: float = info.created_ms
        self.title = info.title
        self.cwd: str | None = None
        self.meta_seen = False
        self.usage_target: Item | None = None
        self.thinking_level: str | None = None
        self.last_token_info: Any = None
        self.context_tokens: float = 0

    def add(self, line: int, record: dict[str, Any], canonical: Canonical) -> None:
        ts = timestamp_ms(record.get("timestamp"), self.fallback)
        self.fallback = max(self.fallback + 1, ts)
        payload = record.get("payload")
        kind = record.get("type")
        if kind == "session_meta" and not self.meta_seen and isinstance(payload, dict):
            self.meta_seen = True  # the first session_meta anywhere gives the cwd (spec §2.2)
            cwd = payload.get("cwd")
            self.cwd = cwd if isinstance(cwd, str) else None
        item: Item | None = None
        effort: Item | None = None
        if isinstance(payload, dict):
            if kind == "turn_context":
                model = payload.get("model")
                if isinstance(model, str) and model and model != self.model:
                    self.model = model
                    item = Item(model=model, timestamp=ts)
                if self.lossless:
                    effort = self._effort(line, payload, ts)
            elif kind == "response_item":
                item = response_item(payload, ts, self.model, self.names)
                if self.lossless and item is not None:
                    self._tool_error(payload, item)
            elif kind == "event_msg":
                item = event(payload, ts, self.model, canonical, self.names)
                if item is None and self.lossless and payload.get("type") == "token_count":
                    self._token_count(payload.get("info"))
            elif kind == "compacted":
                compaction = _compaction(payload)
                if compaction is not None:
                    item = Item(compaction=compaction, timestamp=ts)
        # Records that yield no entry (titles and rollbacks included) are kept whole when lossless.
        if self.lossless and (item is None or item.is_title or item.rollback_turns is not None):
            self.kept_records.append((line, ts, record))
        if item is None:
            if effort is not None:
                self.items.append(effort)
            return
        item.line = line
        if self.lossless:
            item.record = record
        if item.rollback_turns:
            self._rollback(item.rollback_turns)
        else:
            self.items.append(item)
            if effort is not None:
                self.items.append(effort)
        if item.following is not None:
            self.items.append(Item(message=item.following, line=line))  # its record is on the call
        if item.title:
            self.title = item.title
        if item.compaction is not None and self.lossless and self.context_tokens:
            item.compaction["tokens_before"] = self.context_tokens
            self.out.note(TOKENS_BEFORE)
        message = self.items[-1].message if self.items else None
        if message is not None and message.get("role") == "assistant" and self.items[-1] is item:
            self.usage_target = item

    def _effort(self, line: int, payload: dict[str, Any], ts: float) -> Item | None:
        """A changed ``turn_context`` effort as omp's ``thinking_level_change`` (queued after the
        model change of the same record). omp's importer reads only the model (spec §2.2)."""
        effort = payload.get("effort")
        level = _THINKING_LEVELS.get(effort) if isinstance(effort, str) else None
        if level is None or level == self.thinking_level:
            return None
        self.thinking_level = level
        self.out.note(THINKING_LEVEL)
        return Item(thinking_level=level, timestamp=ts, line=line)

    def _tool_error(self, payload: dict[str, Any], item: Item) -> None:
        """A function output of a failed command is an error result, as omp's own tools write it
        (omp's importer: always ``isError: false``, spec §2.2)."""
        message = item.message
        if message is None or message.get("role") != "toolResult" or message["isError"]:
            return
        if payload.get("type") not in ("function_call_output", "custom_tool_call_output"):
            return
        code = _output_exit_code(payload.get("output"))
        failed = isinstance(code, int) and not isinstance(code, bool) and code != 0
        if failed or message["toolCallId"] in self.failed:
            message["isError"] = True
            self.out.note(TOOL_ERROR)

    def _token_count(self, info: Any) -> None:
        if info is None or info == self.last_token_info:
            return  # Codex repeats the last report; count each response once
        self.last_token_info = info
        parsed = _token_usage(info)
        if parsed is None:
            return
        usage, total = parsed
        self.context_tokens = total
        target, self.usage_target = self.usage_target, None
        if target is not None and target.message is not None:
            target.message["usage"] = usage
            self.out.note(USAGE)

    def _rollback(self, turns: float) -> None:
        remaining = turns
        while remaining > 0:
            index = next(
                (
                    i
                    for i in range(len(self.items) - 1, -1, -1)
                    if (self.items[i].message or {}).get("role") == "user"
                ),
                -1,
            )
            if index < 0:
                return
            if self.lossless:
                anchor = next((it for it in reversed(self.items[:index]) if _emits(it)), None)
                self.abandoned.append((anchor, self.items[index:]))
                self.out.note(ROLLBACK_BRANCH)
            del self.items[index:]
            remaining -= 1
        self.usage_target = None


def _emits(item: Item) -> bool:
    return (
        item.message is not None
        or item.model is not None
        or item.compaction is not None
        or item.thinking_level is not None
    )


def _entry(item: Item, entry_id: str, parent: str | None, fallback: float) -> Entry | None:
    entry = _bare_entry(item, entry_id, parent, fallback)
    if entry is not None and item.record is not None:
        entry["sourceRecords"] = [{"line": item.line, "record": item.record}]
    return entry


def _bare_entry(item: Item, entry_id: str, parent: str | None, fallback: float) -> Entry | None:
    stamp = item.message["timestamp"] if item.message is not None else item.timestamp
    iso = iso_from_ms(int(stamp if stamp is not None else fallback))
    if item.message is not None:
        return {
            "type": "message",
            "id": entry_id,
            "parentId": parent,
            "timestamp": iso,
            "message": item.message,
        }
    if item.model is not None:
        return {
            "type": "model_change",
            "id": entry_id,
            "parentId": parent,
            "timestamp": iso,
            "model": f"openai-codex/{item.model}",
        }
    if item.thinking_level is not None:  # omp's appendThinkingLevelChange shape
        return {
            "type": "thinking_level_change",
            "id": entry_id,
            "parentId": parent,
            "timestamp": iso,
            "thinkingLevel": item.thinking_level,
            "configured": None,
        }
    if item.compaction is not None:
        compaction = item.compaction
        entry: Entry = {
            "type": "compaction",
            "id": entry_id,
            "parentId": parent,
            "timestamp": iso,
            "summary": compaction["summary"],
            "shortSummary": "Imported Codex compaction",
            "firstKeptEntryId": entry_id,
            "tokensBefore": compaction.get("tokens_before", 0),
        }
        if compaction["history"] is not None:
            remote: dict[str, Any] = {"provider": "openai-codex", "replacementHistory": compaction["history"]}
            if compaction["item"] is not None:
                remote["compactionItem"] = compaction["item"]
            entry["preserveData"] = {"openaiRemoteCompaction": remote}
        return entry
    return None


def _emit(queue: _Queue, out: ConvertedSession) -> None:
    ids: dict[int, str] = {}
    parent: str | None = None
    ordinal = 0
    for item in queue.items:
        if item.thinking_level is not None:  # our extra: omp's ordinals stay as they are
            entry_id = f"codex-effort-{item.line}"
        else:
            ordinal += 1
            entry_id = f"codex-{_base36(ordinal)}"
        entry = _entry(item, entry_id, parent, queue.fallback)
        if entry is not None:
            out.entries.append(entry)
            out.source_lines[entry["id"]] = item.line
            parent = ids[id(item)] = entry["id"]
    out.leaf_id = parent
    for number, (_, segment) in enumerate(queue.abandoned, start=1):
        for ordinal, item in enumerate(segment, start=1):
            if _emits(item):
                ids[id(item)] = f"codex-rollback-{number}-{_base36(ordinal)}"
    branch: list[tuple[Item, str | None]] = []
    for anchor, segment in queue.abandoned:
        branch_parent = ids.get(id(anchor)) if anchor is not None else None
        for item in segment:
            if id(item) in ids:
                branch.append((item, branch_parent))
                branch_parent = ids[id(item)]
    # In file order, so a parent (possibly in a later rollback's segment) precedes its children.
    for item, branch_parent in sorted(branch, key=lambda pair: pair[0].line):
        entry = _entry(item, ids[id(item)], branch_parent, queue.fallback)
        if entry is not None:
            out.entries.append(entry)
            out.source_lines[entry["id"]] = item.line
    meta_parent: str | None = None
    for line, ts, record in queue.kept_records:
        entry_id = f"codex-record-{line}"
        out.entries.append(
            {
                "type": "custom",
                "customType": "codex_record",
                "data": {"line": line, "record": record},
                "id": entry_id,
                "parentId": meta_parent,
                "timestamp": iso_from_ms(int(ts)),
            }
        )
        out.source_lines[entry_id] = line
        meta_parent = entry_id
        out.note(KEPT_RECORD)


def convert_codex(info: ForeignSessionInfo, *, lossless: bool = True) -> ConvertedSession:
    """Convert ``info.path``; raises :class:`ForeignSessionError` as omp does (spec §2.2)."""
    canonical = Canonical()
    stats = ReadStats()
    failed: set[str] = set()
    try:
        for _, record in iter_records(info.path, stats):
            kind, payload = record.get("type"), record.get("payload")
            if kind == "response_item" and isinstance(payload, dict):
                canonical.add(payload)
            elif kind == "event_msg" and isinstance(payload, dict) and (call := failed_call(payload)):
                failed.add(call)
    except OSError as error:
        raise ForeignSessionError(
            info.path, f"Unable to read Codex session {info.id} at {info.path}"
        ) from error
    if stats.records == 0:
        raise ForeignSessionError(info.path, f"Codex session {info.id} at {info.path} is empty or malformed")
    out = ConvertedSession(source="codex", cwd=info.cwd, entries=[], leaf_id=None, stats=stats)
    queue = _Queue(info, lossless, out, failed)
    for line, record in iter_records(info.path):
        queue.add(line, record, canonical)
    _emit(queue, out)
    out.cwd = queue.cwd if queue.cwd is not None else info.cwd
    out.title = queue.title
    out.title_source = "auto"
    out.title_trigger = "codex-import"
    return out


__all__ = [
    "KEPT_RECORD",
    "ROLLBACK_BRANCH",
    "THINKING_LEVEL",
    "TOKENS_BEFORE",
    "TOOL_ERROR",
    "USAGE",
    "convert_codex",
]
