"""omp 18's display transcript (``buildSessionContext({transcript: true})``, omp18-differences §3).

The LLM context drops what the model must not see; the transcript is what a user is shown:
every entry of the path with compactions inline (superseded ones elided), or with
``collapse_compacted_history`` only the latest compacted tail after the last ``/clear``. Tool calls
without a result are still stripped (unless ``keep_dangling_tool_calls``), but a turn left empty
is kept with a ``strippedToolCalls`` count. ``cacheMissExplainedAt`` marks assistant turns whose
prompt-cache miss a model, compaction or plan-mode change explains.

Internal module (used by :mod:`omp_session.model.context`); not part of the public API.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from omp_session.format.javascript import UNDEFINED, template_string
from omp_session.model.context import (
    SessionContext,
    _compaction_message,
    _scan_state,
    entry_to_message,
    summary_and_kept,
)
from omp_session.model.context_filters import strip_dangling_tool_calls

__all__ = ["SUPERSEDED_SHORT_SUMMARY", "SUPERSEDED_SUMMARY", "transcript_from_path"]

Entry = dict[str, Any]
SUPERSEDED_SUMMARY = "[Superseded compaction summary elided after a newer compaction]"
SUPERSEDED_SHORT_SUMMARY = "Superseded compaction elided"


def _is_turn_start(entry: Entry) -> bool:
    if entry.get("type") in ("branch_summary", "custom_message"):
        return True
    message = entry.get("message")
    return (
        entry.get("type") == "message"
        and isinstance(message, dict)
        and message.get("role") in ("user", "bashExecution")
    )


class _Transcript:
    """Collects messages with the cache-miss markers omp 18 computes alongside."""

    def __init__(self, context: SessionContext) -> None:
        self.context = context
        self.explained: list[bool] = []
        self.pending_reset = False
        self.current_mode = "none"
        self.last_model: str | None = None

    def track_entry(self, entry: Entry) -> None:
        kind = entry.get("type")
        if kind in ("compaction", "model_change"):
            self.pending_reset = True
        elif kind == "mode_change":
            mode = entry.get("mode")
            if (mode == "plan") != (self.current_mode == "plan"):
                self.pending_reset = True
            self.current_mode = mode if isinstance(mode, str) else self.current_mode

    def track_message(self, message: dict[str, Any]) -> bool:
        if message.get("role") != "assistant":
            return False
        provider = template_string(message.get("provider", UNDEFINED))
        model = f"{provider}/{template_string(message.get('model', UNDEFINED))}"
        changed = self.last_model is not None and self.last_model != model
        self.last_model = model
        explained = self.pending_reset or changed
        self.pending_reset = False
        return explained

    def push(self, message: dict[str, Any]) -> None:
        self.context.messages.append(message)
        self.explained.append(self.track_message(message))

    def add(self, entry: Entry) -> None:
        self.track_entry(entry)
        # A transcript shows what the model is spared (failed turns, internal custom messages).
        message = entry_to_message(entry, self.context.rules, for_model=False)
        if message is not None:
            self.push(message)


def transcript_from_path(
    path: Sequence[Entry],
    context: SessionContext,
    *,
    collapse_compacted_history: bool = False,
    keep_dangling_tool_calls: bool = False,
) -> SessionContext:
    """Fill ``context`` (state already unset) with the transcript of ``path``."""
    compaction = _scan_state(path, context)
    out = _Transcript(context)
    position = next((i for i, entry in enumerate(path) if entry is compaction), -1)
    reset = max((i for i, e in enumerate(path) if e.get("type") == "reset_boundary"), default=-1)
    if not collapse_compacted_history:
        _full(path, compaction, out)
    elif reset >= 0 and reset > position:
        for entry in path[reset + 1 :]:
            out.add(entry)
    elif compaction is not None:
        _collapsed(path, compaction, position, out)
    else:
        for entry in path:
            out.add(entry)
    if not keep_dangling_tool_calls:
        strip_dangling_tool_calls(context.messages, keep_empty=True)
    context.cache_miss_explained_at = out.explained
    return context


def _full(path: Sequence[Entry], latest: Entry | None, out: _Transcript) -> None:
    for index, entry in enumerate(path):
        out.track_entry(entry)
        if entry.get("type") != "compaction":
            out.add(entry)
            continue
        following = path[index + 1] if index + 1 < len(path) else None
        if _is_rescued(entry, following):
            continue
        active = entry is latest
        shown = (
            entry
            if active
            else {**entry, "summary": SUPERSEDED_SUMMARY, "shortSummary": SUPERSEDED_SHORT_SUMMARY}
        )
        message = _compaction_message(shown, None, out.context.rules)
        out.push(message)


def _is_rescued(entry: Entry, following: Entry | None) -> bool:
    """An immediate snapcompact frame-rescue replacement supersedes its source compaction."""
    return (
        following is not None
        and following.get("type") == "compaction"
        and entry.get("method") == "snapcompact"
        and following.get("method") == "snapcompact"
        and following.get("parentId") == entry.get("id")
        and following.get("firstKeptEntryId") == entry.get("firstKeptEntryId")
        and following.get("tokensBefore") == entry.get("tokensBefore")
    )


def _collapsed(path: Sequence[Entry], compaction: Entry, position: int, out: _Transcript) -> None:
    summary, first_kept = summary_and_kept(path, position, out.context.rules)
    if first_kept is not None:
        start = next((i for i in range(first_kept, position) if _is_turn_start(path[i])), first_kept)
        for i in range(first_kept, position):
            entry = path[i]
            if i < start:  # hidden, but still moves the cache-miss state
                out.track_entry(entry)
                message = entry.get("message")
                if entry.get("type") == "message" and isinstance(message, dict):
                    out.track_message(message)
                continue
            out.add(entry)
    out.track_entry(compaction)
    out.push(summary)
    for entry in path[position + 1 :]:
        out.add(entry)
