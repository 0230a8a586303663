"""Typed shapes of the session header, every entry type of omp 13.19.0 and the message roles.

Entries stay plain dicts at run time (lossless: unknown types and fields survive a round trip);
these ``TypedDict``s document the shapes and give type checkers something to check against.
See spec §3 (entries) and §4 (messages).
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from typing_extensions import NotRequired

CURRENT_VERSION = 3

#: Every entry type written by omp 13.19.0 (spec §3).
ENTRY_TYPES = (
    "message",
    "thinking_level_change",
    "model_change",
    "service_tier_change",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "ttsr_injection",
    "mcp_tool_selection",
    "session_init",
    "mode_change",
)

ServiceTier = Literal["auto", "default", "flex", "scale", "priority"]
Attribution = Literal["user", "agent"]

#: Any JSON object read from a session file; what every entry is at run time.
RawEntry = dict[str, Any]


def is_assistant_entry(entry: RawEntry) -> bool:
    """A ``message`` entry holding an assistant message (what makes a new session persist, §7.2)."""
    message = entry.get("message")
    return entry.get("type") == "message" and isinstance(message, dict) and message.get("role") == "assistant"


class SessionHeader(TypedDict):
    type: Literal["session"]
    version: NotRequired[int]
    id: str
    timestamp: str
    cwd: str
    title: NotRequired[str]
    parentSession: NotRequired[str]


class EntryBase(TypedDict):
    type: str
    id: str
    parentId: str | None
    timestamp: str


class MessageEntry(EntryBase):
    message: dict[str, Any]


class ThinkingLevelChangeEntry(EntryBase):
    thinkingLevel: str | None


class ModelChangeEntry(EntryBase):
    model: str
    role: NotRequired[str]


class ServiceTierChangeEntry(EntryBase):
    serviceTier: ServiceTier | None


class CompactionEntry(EntryBase):
    summary: str
    shortSummary: NotRequired[str]
    firstKeptEntryId: NotRequired[str]
    tokensBefore: int
    details: NotRequired[Any]
    fromExtension: NotRequired[bool]
    preserveData: NotRequired[dict[str, Any]]


class BranchSummaryEntry(EntryBase):
    fromId: str
    summary: str
    details: NotRequired[Any]
    fromExtension: NotRequired[bool]


class CustomEntry(EntryBase):
    customType: str
    data: NotRequired[Any]


class CustomMessageEntry(EntryBase):
    customType: str
    content: str | list[dict[str, Any]]
    display: bool
    details: NotRequired[Any]
    attribution: NotRequired[Attribution]


class LabelEntry(EntryBase):
    targetId: str
    label: NotRequired[str]


class TtsrInjectionEntry(EntryBase):
    injectedRules: list[str]


class McpToolSelectionEntry(EntryBase):
    selectedToolNames: list[str]


class SessionInitEntry(EntryBase):
    systemPrompt: str
    task: str
    tools: list[str]
    outputSchema: NotRequired[Any]


class ModeChangeEntry(EntryBase):
    mode: str
    data: NotRequired[dict[str, Any]]


SessionEntry = (
    MessageEntry
    | ThinkingLevelChangeEntry
    | ModelChangeEntry
    | ServiceTierChangeEntry
    | CompactionEntry
    | BranchSummaryEntry
    | CustomEntry
    | CustomMessageEntry
    | LabelEntry
    | TtsrInjectionEntry
    | McpToolSelectionEntry
    | SessionInitEntry
    | ModeChangeEntry
)


# --- messages (spec §4) -----------------------------------------------------------------------


class TextContent(TypedDict):
    type: Literal["text"]
    text: str
    textSignature: NotRequired[str]


class ImageContent(TypedDict):
    type: Literal["image"]
    data: str
    mimeType: str


class Usage(TypedDict):
    input: int
    output: int
    cacheRead: int
    cacheWrite: int
    totalTokens: int
    premiumRequests: NotRequired[int]
    cost: NotRequired[dict[str, float]]


class UserMessage(TypedDict):
    role: Literal["user"]
    content: str | list[dict[str, Any]]
    timestamp: int
    synthetic: NotRequired[bool]
    attribution: NotRequired[Attribution]


class AssistantMessage(TypedDict):
    role: Literal["assistant"]
    content: list[dict[str, Any]]
    api: str
    provider: str
    model: str
    usage: NotRequired[Usage]
    stopReason: str
    timestamp: int


class ToolResultMessage(TypedDict):
    role: Literal["toolResult"]
    toolCallId: str
    toolName: str
    content: list[dict[str, Any]]
    isError: bool
    timestamp: int
    details: NotRequired[Any]
    prunedAt: NotRequired[int]


class BashExecutionMessage(TypedDict):
    role: Literal["bashExecution"]
    command: str
    output: str
    exitCode: NotRequired[int | None]
    cancelled: bool
    truncated: bool
    timestamp: int
    excludeFromContext: NotRequired[bool]


class FileMentionMessage(TypedDict):
    role: Literal["fileMention"]
    files: list[dict[str, Any]]
    timestamp: int
