"""``build_session_context`` (spec §5): the messages and state an LLM call needs at a leaf.

The cost is O(length of the path): the path is collected leaf→root once and reversed (omp
prepends per step, which is O(depth²), §9 #24).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from omp_session.format.ids import iso_to_ms
from omp_session.format.javascript import UNDEFINED, template_string
from omp_session.model.tree import SessionIndex

Entry = dict[str, Any]


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


#: Sentinel for "no leaf given": the last entry in file order is used, as in omp.
UNSET: Any = _Unset()


@dataclass
class SessionContext:
    """What :func:`build_session_context` returns; ``to_dict()`` gives omp's camelCase shape."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    thinking_level: str = "off"
    models: dict[str, str] = field(default_factory=dict)
    injected_ttsr_rules: list[str] = field(default_factory=list)
    service_tier: str | None = None
    mode: str = "none"
    mode_data: dict[str, Any] | None = None
    selected_mcp_tool_names: list[str] = field(default_factory=list)
    has_persisted_mcp_tool_selection: bool = False

    def to_dict(self) -> dict[str, Any]:
        """omp's ``SessionContext`` JSON: absent optional keys are omitted, as JS drops undefined."""
        out: dict[str, Any] = {
            "messages": self.messages,
            "thinkingLevel": self.thinking_level,
            "models": self.models,
            "injectedTtsrRules": self.injected_ttsr_rules,
            "selectedMCPToolNames": self.selected_mcp_tool_names,
            "hasPersistedMCPToolSelection": self.has_persisted_mcp_tool_selection,
            "mode": self.mode,
        }
        if self.service_tier is not None:
            out["serviceTier"] = self.service_tier
        if self.mode_data is not None:
            out["modeData"] = self.mode_data
        return out


#: The entry types whose effect on the context is a state change replayed along the path (§5 step 4):
#: the one list of them. The offset index (``store/index_builder.py``) records, for every entry,
#: the last entry of each of these kinds on its path, and a test checks it handles exactly these.
CONTEXT_STATE_ENTRY_TYPES = frozenset(
    {
        "message",  # an assistant message sets the default model
        "thinking_level_change",
        "model_change",
        "service_tier_change",
        "compaction",
        "ttsr_injection",
        "mcp_tool_selection",
        "mode_change",
    }
)


def _scan_state(path: Sequence[Entry], context: SessionContext) -> Entry | None:
    """Apply every state-changing entry root→leaf; return the last compaction on the path."""
    compaction: Entry | None = None
    rules: dict[str, None] = {}  # insertion-ordered set
    for entry in path:
        kind = entry.get("type")
        if kind == "message":
            message = entry.get("message")
            if isinstance(message, dict) and message.get("role") == "assistant":
                # omp 13.19.0: the assistant overrides an explicit default model (§5 step 4).
                context.models["default"] = (
                    f"{template_string(message.get('provider', UNDEFINED))}/"
                    f"{template_string(message.get('model', UNDEFINED))}"
                )
        elif kind == "thinking_level_change":
            level = entry.get("thinkingLevel")
            context.thinking_level = level if level is not None else "off"
        elif kind == "model_change":
            model = entry.get("model")
            if model:
                role = entry.get("role")
                context.models[role if role is not None else "default"] = model
        elif kind == "service_tier_change":
            context.service_tier = entry.get("serviceTier")
        elif kind == "compaction":
            compaction = entry
        elif kind == "ttsr_injection":
            for rule in entry.get("injectedRules") or ():
                rules[rule] = None
        elif kind == "mcp_tool_selection":
            context.selected_mcp_tool_names = list(entry.get("selectedToolNames") or ())
            context.has_persisted_mcp_tool_selection = True
        elif kind == "mode_change":
            context.mode = entry.get("mode")  # type: ignore[assignment]
            context.mode_data = entry.get("data")
    context.injected_ttsr_rules = list(rules)
    return compaction


def entry_to_message(entry: Entry) -> dict[str, Any] | None:
    """The agent message an entry contributes to the context, or ``None`` (§5 step 5)."""
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        return message if isinstance(message, dict) else None
    if kind == "custom_message":
        out = {"role": "custom"}
        for key in ("customType", "content", "display", "details", "attribution"):
            if key in entry:
                out[key] = entry[key]
        out["timestamp"] = iso_to_ms(entry.get("timestamp"))  # type: ignore[assignment]
        return out
    if kind == "branch_summary" and entry.get("summary"):
        summary: dict[str, Any] = {"role": "branchSummary", "summary": entry["summary"]}
        if "fromId" in entry:
            summary["fromId"] = entry["fromId"]
        summary["timestamp"] = iso_to_ms(entry.get("timestamp"))
        return summary
    return None


def _remote_history(compaction: Entry) -> dict[str, Any] | None:
    preserve = compaction.get("preserveData")
    remote = preserve.get("openaiRemoteCompaction") if isinstance(preserve, dict) else None
    if not isinstance(remote, dict):
        return None
    provider = remote.get("provider")
    history = remote.get("replacementHistory")
    if not isinstance(provider, str) or not provider or not isinstance(history, list):
        return None
    return {"type": "openaiResponsesHistory", "provider": provider, "items": history}


def _compaction_message(compaction: Entry, payload: dict[str, Any] | None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "compactionSummary", "summary": compaction.get("summary")}
    if "shortSummary" in compaction:
        message["shortSummary"] = compaction["shortSummary"]
    if "tokensBefore" in compaction:
        message["tokensBefore"] = compaction["tokensBefore"]
    if payload is not None:
        message["providerPayload"] = payload
    message["timestamp"] = iso_to_ms(compaction.get("timestamp"))
    return message


def _emit(entries: Sequence[Entry], out: list[dict[str, Any]]) -> None:
    append = out.append
    for entry in entries:
        if entry.get("type") == "message":  # the common case of entry_to_message, inlined
            message = entry.get("message")
            if isinstance(message, dict):
                append(message)
            continue
        converted = entry_to_message(entry)
        if converted is not None:
            append(converted)


def context_from_path(path: Sequence[Entry], state_path: Sequence[Entry] | None = None) -> SessionContext:
    """Build the context from a root→leaf path (the core of §5, steps 4–8).

    ``state_path`` (default: ``path``) is what the state scan replays: any part of the path that
    keeps, for every kind of state, the entries that decide it gives the same state (the offset
    index knows them; see :mod:`omp_session.store.index_builder`). ``path`` may then also start late:
    at the first kept entry of the last compaction.
    """
    context = SessionContext()
    compaction = _scan_state(path if state_path is None else state_path, context)
    messages = context.messages
    if compaction is None:
        _emit(path, messages)
        return context
    position = next(i for i, entry in enumerate(path) if entry is compaction)
    payload = _remote_history(compaction)
    messages.append(_compaction_message(compaction, payload))
    if payload is None:
        kept_id = compaction.get("firstKeptEntryId")
        before = path[:position]
        start = next((i for i, entry in enumerate(before) if entry.get("id") == kept_id), None)
        if start is not None:
            _emit(before[start:], messages)
    _emit(path[position + 1 :], messages)
    return context


def build_session_context(entries: Sequence[Entry], leaf_id: str | None = UNSET) -> SessionContext:
    """Build the LLM context of ``entries`` at ``leaf_id`` (spec §5).

    ``leaf_id=None`` gives the empty context; an unset, empty or unknown leaf falls back to the last
    entry in file order, as omp does. Parent cycles end the walk (see :mod:`omp_session.model.tree`).

    >>> build_session_context([]).thinking_level
    'off'
    """
    if leaf_id is None:
        return SessionContext()
    index = SessionIndex(entries)
    leaf = index.get(leaf_id) if isinstance(leaf_id, str) else None
    if leaf is None:
        if not entries:
            return SessionContext()
        leaf = entries[-1]
    return context_from_path(index.path_to(leaf))
