"""What an entry is, for display: the one entry classifier every view uses.

``show``, the Markdown export, the tree, search, the viewer and the HTML export all ask
:func:`classify` what an entry is, instead of each switching on ``type`` and ``role`` itself, so they
cannot drift apart (a model change written the v1/pi way, ``{provider, modelId}``, is one model change
everywhere). Renderers then phrase the kind their own way.

A new entry type (spec §3) or message role (spec §4) gets one row in :data:`_ENTRY_TYPES` or
:data:`_ROLES` and one case in each renderer; until then it is :attr:`EntryKind.UNKNOWN` (or
``UNKNOWN_MESSAGE``), which every view shows as raw data rather than hiding.

>>> classify({"type": "model_change", "provider": "openai", "modelId": "gpt-5"}).kind
<EntryKind.MODEL_CHANGE: 'model_change'>
>>> model_of_change({"type": "model_change", "provider": "openai", "modelId": "gpt-5"})
'openai/gpt-5'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from omp_session.format.entries import (
    FOREIGN_SESSION_IMPORT,
    IMPORT_BOOKKEEPING_TYPES,
    is_import_bookkeeping,
)

__all__ = [
    "FOREIGN_SESSION_IMPORT",
    "IMPORT_BOOKKEEPING_TYPES",
    "STATE_CHANGES",
    "Classified",
    "EntryKind",
    "classify",
    "is_import_bookkeeping",
    "model_of_change",
    "state_value",
]


class EntryKind(str, Enum):
    """The kinds of thing an entry can be, as the views distinguish them."""

    USER = "user"
    DEVELOPER = "developer"
    ASSISTANT = "assistant"
    TOOL_RESULT = "tool_result"
    BASH = "bash"
    PYTHON = "python"
    FILE_MENTION = "file_mention"
    #: A ``custom_message`` entry, or a message with role ``custom``/``hookMessage``.
    CUSTOM_MESSAGE = "custom"
    #: A ``compaction`` entry, or a ``compactionSummary`` message.
    COMPACTION = "compaction"
    #: A ``branch_summary`` entry, or a ``branchSummary`` message.
    BRANCH_SUMMARY = "branch_summary"
    MODEL_CHANGE = "model_change"
    THINKING_LEVEL_CHANGE = "thinking_level_change"
    SERVICE_TIER_CHANGE = "service_tier_change"
    MODE_CHANGE = "mode_change"
    TTSR_INJECTION = "ttsr_injection"
    MCP_TOOL_SELECTION = "mcp_tool_selection"
    SESSION_INIT = "session_init"
    LABEL = "label"
    #: omp 18: a ``/clear`` divider; the model's context starts after it.
    RESET_BOUNDARY = "reset"
    #: omp 18: the session was renamed.
    TITLE_CHANGE = "title"
    #: omp 18: the spend of a side request (titles, summaries, …), not part of the conversation.
    MODEL_USAGE = "model_usage"
    #: omp 18: the credential a provider is pinned to.
    CREDENTIAL_PIN = "credential_pin"
    #: A ``custom`` entry: extension data, never part of the context.
    CUSTOM_ENTRY = "custom_entry"
    #: A ``message`` entry whose message is missing or has a role no view knows.
    UNKNOWN_MESSAGE = "unknown_message"
    #: An entry type no view knows (kept and shown as data).
    UNKNOWN = "unknown"


#: State changes: one-line events in every view.
STATE_CHANGES = frozenset(
    {
        EntryKind.MODEL_CHANGE,
        EntryKind.THINKING_LEVEL_CHANGE,
        EntryKind.SERVICE_TIER_CHANGE,
        EntryKind.MODE_CHANGE,
        EntryKind.TTSR_INJECTION,
        EntryKind.MCP_TOOL_SELECTION,
    }
)

_ROLES = {
    "user": EntryKind.USER,
    "developer": EntryKind.DEVELOPER,
    "assistant": EntryKind.ASSISTANT,
    "toolResult": EntryKind.TOOL_RESULT,
    "bashExecution": EntryKind.BASH,
    "pythonExecution": EntryKind.PYTHON,
    "fileMention": EntryKind.FILE_MENTION,
    "custom": EntryKind.CUSTOM_MESSAGE,
    "hookMessage": EntryKind.CUSTOM_MESSAGE,
    "compactionSummary": EntryKind.COMPACTION,
    "branchSummary": EntryKind.BRANCH_SUMMARY,
}

_ENTRY_TYPES = {
    "custom_message": EntryKind.CUSTOM_MESSAGE,
    "compaction": EntryKind.COMPACTION,
    "branch_summary": EntryKind.BRANCH_SUMMARY,
    "model_change": EntryKind.MODEL_CHANGE,
    "thinking_level_change": EntryKind.THINKING_LEVEL_CHANGE,
    "service_tier_change": EntryKind.SERVICE_TIER_CHANGE,
    "mode_change": EntryKind.MODE_CHANGE,
    "ttsr_injection": EntryKind.TTSR_INJECTION,
    "mcp_tool_selection": EntryKind.MCP_TOOL_SELECTION,
    "session_init": EntryKind.SESSION_INIT,
    "label": EntryKind.LABEL,
    "custom": EntryKind.CUSTOM_ENTRY,
    "reset_boundary": EntryKind.RESET_BOUNDARY,
    "title_change": EntryKind.TITLE_CHANGE,
    "model_usage": EntryKind.MODEL_USAGE,
    "credential_pin": EntryKind.CREDENTIAL_PIN,
}

#: The field that holds the new value of each simple state change.
_STATE_FIELDS = {
    EntryKind.THINKING_LEVEL_CHANGE: "thinkingLevel",
    EntryKind.SERVICE_TIER_CHANGE: "serviceTier",
    EntryKind.MODE_CHANGE: "mode",
    EntryKind.TTSR_INJECTION: "injectedRules",
    EntryKind.MCP_TOOL_SELECTION: "selectedToolNames",
}


@dataclass(frozen=True)
class Classified:
    """An entry's kind and where that kind's fields are: the message of a ``message`` entry (its
    ``summary``, ``content``, ``toolName``, …), else the entry itself."""

    kind: EntryKind
    fields: Mapping[str, Any]
    #: The ``role`` of a message entry (``None`` for other entries).
    role: str | None = None

    @property
    def is_message(self) -> bool:
        return self.role is not None


def classify(entry: Mapping[str, Any]) -> Classified:
    """What ``entry`` is (never fails: odd shapes are ``UNKNOWN``/``UNKNOWN_MESSAGE``)."""
    entry_type = entry.get("type")
    if entry_type == "message":
        message = entry.get("message")
        # ``type(...) is dict`` first: entries are plain dicts, and the ABC check is slow at 50k rows.
        if type(message) is not dict and not isinstance(message, Mapping):
            return Classified(EntryKind.UNKNOWN_MESSAGE, entry)
        role = message.get("role")
        if type(role) is not str:
            return Classified(EntryKind.UNKNOWN_MESSAGE, message, "")
        return Classified(_ROLES.get(role, EntryKind.UNKNOWN_MESSAGE), message, role)
    kind = _ENTRY_TYPES.get(entry_type) if type(entry_type) is str else None
    return Classified(kind or EntryKind.UNKNOWN, entry)


def model_of_change(entry: Mapping[str, Any]) -> str | None:
    """The model a ``model_change`` names: ``model`` (omp), else ``provider/modelId`` (v1/pi style),
    else ``None``."""
    model = entry.get("model")
    if isinstance(model, str) and model:
        return model
    provider, model_id = entry.get("provider"), entry.get("modelId")
    if isinstance(model_id, str) and model_id:
        return f"{provider}/{model_id}" if isinstance(provider, str) and provider else model_id
    return None


def state_value(kind: EntryKind, entry: Mapping[str, Any]) -> str | None:
    """The new value a state change sets, as text (lists joined by ``, ``); ``None`` when it clears
    the value or the field is missing."""
    if kind == EntryKind.MODEL_CHANGE:
        return model_of_change(entry)
    value = entry.get(_STATE_FIELDS.get(kind, ""))
    if isinstance(value, list):
        return ", ".join(str(item) for item in value)
    return str(value) if value is not None and value != "" else None
