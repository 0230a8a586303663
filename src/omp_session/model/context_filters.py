"""omp 18's message filters of ``build_session_context`` (omp18-differences §3.5).

Applied only under a dialect whose :class:`~omp_session.dialects.ContextRules` ask for them:
dropped retry-recovery and empty error turns, normalised custom messages, dangling tool calls
stripped from every assistant turn, and aborted or error turns dropped with their tool results.

Internal module (used by :mod:`omp_session.model.context`); not part of the public API.
"""

from __future__ import annotations

from typing import Any

from omp_session.dialects import ContextRules
from omp_session.format.ids import iso_to_ms

__all__ = [
    "Message",
    "custom_message_18",
    "drop_failed_turns",
    "skipped_assistant",
    "strip_dangling_tool_calls",
]

Message = dict[str, Any]
_DEFAULT_CUSTOM_TYPE = "custom-message"
_INTERRUPTED_THINKING = "interrupted-thinking"


def _has_text(block: dict[str, Any], key: str) -> bool:
    value = block.get(key)
    return isinstance(value, str) and bool(value.strip())


def _block_counts(block: Any) -> bool:
    """Whether a content block makes an error turn worth keeping (omp's ``isEmptyErrorTurn``)."""
    if not isinstance(block, dict):
        return True
    kind = block.get("type")
    if kind == "text":
        return _has_text(block, "text")
    if kind == "thinking":
        return _has_text(block, "thinking") or _has_text(block, "thinkingSignature")
    if kind == "redactedThinking":
        return _has_text(block, "data")
    return kind != "fallback"  # a tool call, or an unknown kind: never silently discarded


def skipped_assistant(message: Message) -> bool:
    """Retry-recovery turns and error turns without any content are not part of the context."""
    if message.get("retryRecovery"):
        return True
    if message.get("stopReason") != "error":
        return False
    content = message.get("content")
    return not (isinstance(content, list) and any(_block_counts(block) for block in content))


def custom_message_18(
    entry: dict[str, Any], rules: ContextRules, *, for_model: bool = True
) -> Message | None:
    """A ``custom_message`` entry as omp 18 replays it, or ``None`` when it is not sent."""
    content = entry.get("content")
    hidden = for_model and entry.get("customType") in rules.hidden_custom_types
    if hidden or not isinstance(content, str | list):
        return None
    custom_type = entry.get("customType")
    out: Message = {
        "role": "custom",
        "customType": custom_type if isinstance(custom_type, str) and custom_type else _DEFAULT_CUSTOM_TYPE,
        "content": content,
        "display": entry["display"] if isinstance(entry.get("display"), bool) else False,
    }
    if "details" in entry:
        out["details"] = entry["details"]
    if "attribution" in entry:
        out["attribution"] = "user" if entry["attribution"] == "user" else "agent"
    out["timestamp"] = iso_to_ms(entry.get("timestamp"))
    return out


def _tool_result_ids(messages: list[Message]) -> set[Any]:
    return {m.get("toolCallId") for m in messages if m.get("role") == "toolResult"}


def _is_dangling(block: Any, paired: set[Any]) -> bool:
    return isinstance(block, dict) and block.get("type") == "toolCall" and block.get("id") not in paired


def strip_dangling_tool_calls(messages: list[Message], *, keep_empty: bool = False) -> None:
    """Remove tool calls without a result from every assistant turn, in place.

    A turn that loses a call also loses its ``redactedThinking`` blocks and its thinking
    signatures (a modified signed turn would be rejected), and disappears if nothing is left;
    with ``keep_empty`` (the display transcript) it stays, marked with ``strippedToolCalls``.
    """
    paired = _tool_result_ids(messages)
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        content = message.get("content")
        if message.get("role") != "assistant" or not isinstance(content, list):
            continue
        stripped = sum(1 for block in content if _is_dangling(block, paired))
        if not stripped:
            continue
        kept = [
            _unsigned(block)
            for block in content
            if not _is_dangling(block, paired)
            and not (isinstance(block, dict) and block.get("type") == "redactedThinking")
        ]
        if keep_empty:
            messages[i] = {**message, "content": kept, "strippedToolCalls": stripped}
        elif kept:
            messages[i] = {**message, "content": kept}
        else:
            del messages[i]


def _unsigned(block: Any) -> Any:
    if isinstance(block, dict) and block.get("type") == "thinking" and block.get("thinkingSignature"):
        return {key: value for key, value in block.items() if key != "thinkingSignature"}
    return block


def drop_failed_turns(messages: list[Message]) -> None:
    """Remove aborted and error assistant turns and the tool results paired with them, in place,
    except a turn directly followed by an ``interrupted-thinking`` custom message."""
    for i in range(len(messages) - 1, -1, -1):
        if i >= len(messages):
            continue
        message = messages[i]
        if message.get("role") != "assistant" or message.get("stopReason") not in ("aborted", "error"):
            continue
        following = messages[i + 1] if i + 1 < len(messages) else None
        interrupted_thinking = following is not None and following.get("customType") == _INTERRUPTED_THINKING
        if interrupted_thinking and following is not None and following.get("role") == "custom":
            continue
        content = message.get("content")
        calls = {
            block.get("id")
            for block in (content if isinstance(content, list) else ())
            if isinstance(block, dict) and block.get("type") == "toolCall"
        }
        del messages[i]
        if calls:
            for j in range(len(messages) - 1, i - 1, -1):
                candidate = messages[j]
                if candidate.get("role") == "toolResult" and candidate.get("toolCallId") in calls:
                    del messages[j]
