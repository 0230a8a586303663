"""``build_session_context`` (spec §5): the messages and state an LLM call needs at a leaf.

The cost is O(length of the path): the path is collected leaf→root once and reversed (omp
prepends per step, which is O(depth²), §9 #24).

What differs between omp versions is asked of :class:`~omp_session.dialects.ContextRules`: omp 18
adds reset boundaries, a sticky explicit default model, ``configuredThinkingLevel``, service tiers
by provider family, and filters (dangling tool calls, failed turns; see :mod:`.context_filters`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from omp_session.dialects import OMP_13_19, ContextRules
from omp_session.format.ids import iso_to_ms
from omp_session.format.javascript import UNDEFINED, template_string
from omp_session.model.context_filters import (
    custom_message_18,
    drop_failed_turns,
    skipped_assistant,
    strip_dangling_tool_calls,
)

__all__ = [
    "UNSET",
    "SessionContext",
    "context_from_path",
    "entry_to_message",
    "is_remote_compaction",
]  # build_session_context: model/tree.py

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
    #: omp 18: the configured thinking selector of the latest change (``None`` when unknown).
    configured_thinking_level: str | None = None
    #: omp 18 transcript mode only: which assistant turns a cache miss is explained for.
    cache_miss_explained_at: list[bool] | None = None
    #: The dialect rules that built this context (they decide the JSON shape).
    rules: ContextRules = field(default=OMP_13_19.context, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """omp's ``SessionContext`` JSON: absent optional keys are omitted, as JS drops undefined."""
        out: dict[str, Any] = {"messages": self.messages}
        if self.cache_miss_explained_at is not None:
            out["cacheMissExplainedAt"] = self.cache_miss_explained_at
        out["thinkingLevel"] = self.thinking_level
        if self.rules.configured_thinking_level and self.configured_thinking_level is not None:
            out["configuredThinkingLevel"] = self.configured_thinking_level
        out["models"] = self.models
        out["injectedTtsrRules"] = self.injected_ttsr_rules
        if self.rules.mcp_tool_selection:
            out["selectedMCPToolNames"] = self.selected_mcp_tool_names
            out["hasPersistedMCPToolSelection"] = self.has_persisted_mcp_tool_selection
        out["mode"] = self.mode
        if self.service_tier is not None:
            out["serviceTier"] = self.service_tier
        if self.mode_data is not None:
            out["modeData"] = self.mode_data
        return out


_TIER_FAMILIES = ("openai", "anthropic", "google")
_TIERS = ("auto", "default", "flex", "scale", "priority")
_TIER_SHORTHANDS: dict[str, dict[str, str]] = {
    "priority": {"openai": "priority", "anthropic": "priority", "google": "priority"},
    "openai-only": {"openai": "priority"},
    "claude-only": {"anthropic": "priority"},
    "auto": {"openai": "auto"},
    "default": {"openai": "default"},
    "flex": {"openai": "flex"},
    "scale": {"openai": "scale"},
}


def service_tier_by_family(value: Any) -> Any:
    """omp 18 keeps the service tier per provider family (``coerceServiceTierByFamily``)."""
    if isinstance(value, dict):
        tiers = {family: value[family] for family in _TIER_FAMILIES if value.get(family) in _TIERS}
        return tiers or None
    if isinstance(value, str):
        shorthand = _TIER_SHORTHANDS.get(value)
        return dict(shorthand) if shorthand is not None else None
    return None


class Keep(Enum):
    """How an offset index keeps, per path, the entries of one rule that decide its state: replayed
    alone (in path order), they give the state a replay of the whole path gives."""

    #: The last one on the path decides.
    LAST = "last"
    #: Per role key (``StateRule.reads``; ``None``: the entry sets nothing): the first setter fixes
    #: the key's place in ``models``, the last its value; the ``"default"`` key's last setter is
    #: kept with the assistant messages' (``DEFAULT_MODEL``).
    BY_ROLE = "by role"
    #: Each entry that adds an item (``StateRule.reads``) not seen before on the path: an ordered set.
    NEW_ITEMS = "new items"
    #: The last entry that sets the default model (the index's defaults column, filled in its
    #: per-line loop: the entry type is the one an index reads for usage too, ``message``).
    DEFAULT_MODEL = "default model"


class _Replay:
    """What a replay of the state rules carries along a path besides the context it fills."""

    __slots__ = ("compaction", "context", "explicit_default", "rules", "ttsr")

    def __init__(self, context: SessionContext) -> None:
        self.context = context
        self.rules = context.rules
        self.compaction: Entry | None = None
        self.ttsr: dict[Any, None] = {}  # an insertion-ordered set
        #: An explicit default model is on the path (only set where the dialect keeps it sticky).
        self.explicit_default = False


@dataclass(frozen=True, slots=True)
class StateRule:
    """How one entry type changes the replayed state (§5 step 4)."""

    #: The state it sets: a field of the offset index's per-path state (``store/_indexed/builder.py``).
    key: str
    #: How an index keeps the entries that decide it.
    keep: Keep
    #: The replay: read the entry's value into the context (asking the dialect where versions differ).
    apply: Callable[[_Replay, Entry], None]
    #: For ``BY_ROLE`` and ``NEW_ITEMS``: what the index keys on, read as the replay reads it.
    reads: Callable[[Entry], Any] | None = None


def _assistant_model(replay: _Replay, entry: Entry) -> None:
    message = entry.get("message")
    # omp 13.19.0: the assistant overrides an explicit default model (§5 step 4);
    # omp 18: only until an explicit default is on the path (omp18-differences §3.2).
    if isinstance(message, dict) and message.get("role") == "assistant" and not replay.explicit_default:
        provider = template_string(message.get("provider", UNDEFINED))
        name = template_string(message.get("model", UNDEFINED))
        replay.context.models["default"] = f"{provider}/{name}"


def _thinking_level(replay: _Replay, entry: Entry) -> None:
    context = replay.context
    level = entry.get("thinkingLevel")
    context.thinking_level = level if level is not None else "off"
    configured = entry.get("configured")
    context.configured_thinking_level = configured if configured is not None else level


def model_role(entry: Entry) -> str | None:
    """The ``models`` key a ``model_change`` sets (``None``: it names no model, and sets nothing)."""
    if not entry.get("model"):
        return None
    given = entry.get("role")
    # A role that is not a string (a damaged file) is a key as JavaScript makes one.
    return "default" if given is None else given if isinstance(given, str) else str(given)


def _model_change(replay: _Replay, entry: Entry) -> None:
    role = model_role(entry)
    if role is not None:
        replay.context.models[role] = entry["model"]
        if role == "default" and replay.rules.sticky_default_model:
            replay.explicit_default = True


def _service_tier(replay: _Replay, entry: Entry) -> None:
    tier = entry.get("serviceTier")
    replay.context.service_tier = (
        service_tier_by_family(tier) if replay.rules.service_tier_by_family else tier
    )


def _compaction(replay: _Replay, entry: Entry) -> None:
    replay.compaction = entry


def ttsr_rules(entry: Entry) -> list[Any]:
    """The rule names a ``ttsr_injection`` adds (hashable JSON only: names are strings in every
    valid file)."""
    return [
        rule
        for rule in _json_list(entry.get("injectedRules"))
        if isinstance(rule, str | int | float | bool) or rule is None
    ]


def _ttsr_injection(replay: _Replay, entry: Entry) -> None:
    replay.ttsr.update(dict.fromkeys(ttsr_rules(entry)))


def _mcp_selection(replay: _Replay, entry: Entry) -> None:
    if replay.rules.mcp_tool_selection:  # omp 13.19 only (gone in 18)
        replay.context.selected_mcp_tool_names = _json_list(entry.get("selectedToolNames"))
        replay.context.has_persisted_mcp_tool_selection = True


def _mode_change(replay: _Replay, entry: Entry) -> None:
    replay.context.mode = entry.get("mode")  # type: ignore[assignment]
    replay.context.mode_data = entry.get("data")


#: The context-state rules: each entry type whose effect on the context is a state change replayed
#: along the path (§5 step 4), the one table of them. The replay (``_scan_state``) applies them;
#: the offset index (``store/_indexed/builder.py``) keeps, per path, the entries each needs by its
#: ``keep``. A new one: a row here (tests/store/test_context_state_table.py then covers it).
STATE_RULES: dict[str, StateRule] = {
    "message": StateRule("models", Keep.DEFAULT_MODEL, _assistant_model),  # an assistant message
    "thinking_level_change": StateRule("thinking", Keep.LAST, _thinking_level),
    "model_change": StateRule("models", Keep.BY_ROLE, _model_change, model_role),
    "service_tier_change": StateRule("service_tier", Keep.LAST, _service_tier),
    "compaction": StateRule("compaction", Keep.LAST, _compaction),
    "ttsr_injection": StateRule("ttsr", Keep.NEW_ITEMS, _ttsr_injection, ttsr_rules),
    "mcp_tool_selection": StateRule("mcp", Keep.LAST, _mcp_selection),
    "mode_change": StateRule("mode", Keep.LAST, _mode_change),
}


def _scan_state(path: Sequence[Entry], context: SessionContext) -> Entry | None:
    """Apply every state rule root→leaf; return the last compaction on the path."""
    replay = _Replay(context)
    applies: dict[Any, Callable[[_Replay, Entry], None]] = {kind: r.apply for kind, r in STATE_RULES.items()}
    rule_of = applies.get  # (one lookup per entry)
    for entry in path:
        try:
            apply = rule_of(entry.get("type"))
        except TypeError:  # an unhashable type (a damaged file): no rule of the table
            continue
        if apply is not None:
            apply(replay, entry)
    context.injected_ttsr_rules = list(replay.ttsr)
    return replay.compaction


def _json_list(value: Any) -> list[Any]:
    """A JSON array field as a list; any other value (a damaged or hand-edited file) as empty."""
    return list(value) if isinstance(value, list) else []


def entry_to_message(
    entry: Entry, rules: ContextRules = OMP_13_19.context, *, for_model: bool = True
) -> dict[str, Any] | None:
    """The agent message an entry contributes to the context, or ``None`` (§5 step 5).

    ``for_model=False`` (omp 18's display transcript) keeps what only the model is spared."""
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if not isinstance(message, dict):
            return None
        dropped = rules.drop_failed_turns and for_model
        if dropped and message.get("role") == "assistant" and skipped_assistant(message):
            return None
        return message
    if kind == "custom_message":
        if rules.normalize_custom_messages:
            return custom_message_18(entry, rules, for_model=for_model)
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


def is_remote_compaction(compaction: Entry) -> bool:
    """Whether ``compaction`` holds a usable remote history, which replaces everything before it
    in the context (no entry is kept): the rule the context's replay applies, for its views."""
    return _remote_history(compaction) is not None


def _remote_history(compaction: Entry) -> dict[str, Any] | None:
    preserve = compaction.get("preserveData")
    remote = preserve.get("openaiRemoteCompaction") if isinstance(preserve, dict) else None
    if not isinstance(remote, dict):
        return None
    provider = remote.get("provider")
    history = remote.get("replacementHistory")
    if not isinstance(provider, str) or not provider or not isinstance(history, list):
        return None
    if not all(isinstance(item, dict) for item in history):
        return None
    return {"type": "openaiResponsesHistory", "provider": provider, "items": history}


def _anthropic_compaction(compaction: Entry, rules: ContextRules) -> dict[str, Any] | None:
    """omp 18: an Anthropic server compaction kept in ``preserveData`` replays as the payload
    (omp 18.3 copies its ``signature`` too)."""
    preserve = compaction.get("preserveData")
    state = preserve.get("anthropicCompaction") if isinstance(preserve, dict) else None
    if not isinstance(state, dict):
        return None
    provider, content = state.get("provider"), state.get("content")
    if not (isinstance(provider, str) and provider and isinstance(content, str) and content):
        return None
    payload: dict[str, Any] = {"type": "anthropicCompaction", "provider": provider, "content": content}
    optional = ("signature", "encryptedContent", "filesText")
    for key in optional if rules.anthropic_native_context else optional[1:]:
        if isinstance(state.get(key), str) and state[key]:
            payload[key] = state[key]
    return payload


def _snapshot_start(path: Sequence[Entry], compaction: Entry, position: int) -> int | None:
    """omp 18.3: the index after ``providerReplayThroughEntryId`` of a snapshot compaction
    (``firstKeptEntryId`` ``""``), where its kept tail starts; ``None`` for any other."""
    through = compaction.get("providerReplayThroughEntryId")
    if compaction.get("firstKeptEntryId") != "" or not through:
        return None
    replayed = _index_of(path, through)
    return replayed + 1 if replayed is not None else None


def _retained_start(path: Sequence[Entry], position: int, anthropic: bool, rules: ContextRules) -> int | None:
    """Where the kept entries before the compaction at ``position`` start (``None``: none kept):
    the ``firstKeptEntryId`` entry on the path before it, else (omp 18.3, an Anthropic native
    compaction) the entry after a snapshot's replay-through entry."""
    compaction = path[position]
    start = _index_of(path, compaction.get("firstKeptEntryId"), position)
    if start is None and anthropic and rules.anthropic_native_context:
        snapshot = _snapshot_start(path, compaction, position)
        start = snapshot if snapshot is not None and snapshot < position else None
    return start


def _history_rewrite_at(path: Sequence[Entry], position: int) -> int | None:
    """omp 18.3 ``historyRewriteAt`` of an Anthropic native compaction: the first retained entry's
    time − 1 ms (the ``firstKeptEntryId`` entry before the compaction, else the entry after a
    snapshot's replay-through entry when that lies at least two before it, else the entry right
    after the compaction); ``None`` without one or when its timestamp does not parse."""
    compaction = path[position]
    kept = _index_of(path, compaction.get("firstKeptEntryId"))
    first: Entry | None = path[kept] if kept is not None and kept < position else None
    if first is None:
        snapshot = _snapshot_start(path, compaction, position)
        if snapshot is not None and snapshot - 1 < position - 1:
            first = path[snapshot]
    if first is None and position + 1 < len(path):
        first = path[position + 1]
    retained = iso_to_ms(first.get("timestamp")) if first is not None else None
    return retained - 1 if retained is not None else None


def _summary_timing(
    path: Sequence[Entry], position: int, anthropic: bool, rules: ContextRules
) -> tuple[float | None, int | None]:
    """``(timestamp, historyRewriteAt)`` of the summary message of the compaction at ``position``.

    Without an Anthropic payload: the compaction's time, no ``historyRewriteAt``. With one, omp
    18.2 predates the summary to the first retained entry's time − 1 ms; omp 18.3 keeps the
    compaction's time and puts that value in ``historyRewriteAt`` instead."""
    compaction = path[position]
    own = iso_to_ms(compaction.get("timestamp"))
    if not anthropic:
        return own, None
    if rules.anthropic_native_context:
        return own, _history_rewrite_at(path, position)
    kept = _index_of(path, compaction.get("firstKeptEntryId"), position)
    first = path[kept] if kept is not None else (path[position + 1] if position + 1 < len(path) else None)
    retained = iso_to_ms(first.get("timestamp")) if first is not None else None
    return (retained - 1 if retained is not None else own), None


def _rollover_request(
    path: Sequence[Entry], position: int, reset: int, messages: list[dict[str, Any]]
) -> None:
    """omp 18: a context rollover re-emits the last user request before the compaction (after any
    /clear) when it is not among the kept entries."""
    compaction = path[position]
    details = compaction.get("details")
    if isinstance(details, dict) and details.get("kind") == "experimental-context-rollover":
        anywhere = _index_of(path, compaction.get("firstKeptEntryId"))
        for i in range(position - 1, reset, -1):
            message = path[i].get("message")
            if path[i].get("type") != "message" or not isinstance(message, dict):
                continue
            if message.get("role") == "user":
                if anywhere is not None and i < anywhere:
                    messages.append(message)
                break


def _compaction_message(
    compaction: Entry,
    payload: dict[str, Any] | None,
    rules: ContextRules,
    timing: tuple[float | None, int | None] | None = None,
) -> dict[str, Any]:
    """The summary message, its keys in the dialect's order (omp's ``createCompactionSummaryMessage``);
    ``timing`` is ``(timestamp, historyRewriteAt)``, by default the compaction's time and none."""
    message: dict[str, Any] = {"role": "compactionSummary", "summary": compaction.get("summary")}
    timestamp, rewrite_at = timing if timing is not None else (iso_to_ms(compaction.get("timestamp")), None)
    for key in rules.compaction_summary_fields:
        if key == "providerPayload":
            if payload is not None:
                message[key] = payload
        elif key == "historyRewriteAt":
            if rewrite_at is not None:
                message[key] = rewrite_at
        elif key in compaction:
            message[key] = compaction[key]
    message["timestamp"] = timestamp
    return message


def summary_and_kept(
    path: Sequence[Entry], position: int, rules: ContextRules
) -> tuple[dict[str, Any], int | None]:
    """The summary message of the compaction at ``path[position]`` (its replay payload: an OpenAI
    remote history, else under omp 18 an Anthropic native compaction) and the index where its kept
    entries start before it (``None``: none kept)."""
    compaction = path[position]
    remote = _remote_history(compaction)
    anthropic = _anthropic_compaction(compaction, rules) if rules.provider_replay and remote is None else None
    native = anthropic is not None
    timing = _summary_timing(path, position, native, rules)
    summary = _compaction_message(compaction, remote if remote is not None else anthropic, rules, timing)
    return summary, _retained_start(path, position, native, rules)


def _emit(entries: Sequence[Entry], out: list[dict[str, Any]], rules: ContextRules) -> None:
    append = out.append
    plain = not rules.drop_failed_turns
    for entry in entries:
        if plain and entry.get("type") == "message":  # the common case of entry_to_message, inlined
            message = entry.get("message")
            if isinstance(message, dict):
                append(message)
            continue
        converted = entry_to_message(entry, rules)
        if converted is not None:
            append(converted)


def _index_of(path: Sequence[Entry], wanted: Any, before: int | None = None) -> int | None:
    end = len(path) if before is None else before
    return next((i for i in range(end) if path[i].get("id") == wanted), None)


def context_from_path(
    path: Sequence[Entry],
    state_path: Sequence[Entry] | None = None,
    rules: ContextRules = OMP_13_19.context,
) -> SessionContext:
    """Build the context from a root→leaf path (the core of §5, steps 4–8).

    ``state_path`` (default: ``path``) is what the state scan replays: any part of the path that
    keeps, for every kind of state, the entries that decide it gives the same state (the offset
    index knows them; see :mod:`omp_session.store._indexed.builder`). ``path`` may then also start late:
    at the first kept entry of the last compaction. (Only used under 13.19 rules.)
    """
    context = SessionContext(rules=rules)
    compaction = _scan_state(path if state_path is None else state_path, context)
    messages = context.messages
    # (Without a compaction there is nothing to find: no walk over a path of 100k entries.)
    position = -1 if compaction is None else next((i for i, e in enumerate(path) if e is compaction), -1)
    reset = -1
    if rules.reset_boundaries:
        reset = max((i for i, entry in enumerate(path) if entry.get("type") == "reset_boundary"), default=-1)
    if reset >= 0 and reset > position:
        # omp 18: a /clear boundary after the latest compaction starts the context (§3.3).
        _emit(path[reset + 1 :], messages, rules)
    elif compaction is None:
        _emit(path, messages, rules)
    else:
        remote = _remote_history(compaction)
        summary, start = summary_and_kept(path, position, rules)
        messages.append(summary)
        if rules.provider_replay and remote is None:
            _rollover_request(path, position, reset, messages)
        if remote is None:
            if start is not None:
                _emit(path[start:position], messages, rules)
        elif rules.provider_replay and compaction.get("providerReplayThroughEntryId"):
            replayed = _index_of(path, compaction["providerReplayThroughEntryId"])
            if replayed is not None and replayed < position:
                _emit(path[replayed + 1 : position], messages, rules)
        _emit(path[position + 1 :], messages, rules)
    if rules.strip_dangling_tool_calls:
        strip_dangling_tool_calls(messages)
    if rules.drop_failed_turns:
        drop_failed_turns(messages)
    return context
