"""Agent messages → LLM messages (omp 13.19.0 ``convertToLlm``; reference semantics §4.3).

Session files store *agent* messages: the base LLM roles plus coding-agent roles such as
``bashExecution`` or ``fileMention``. Before a conversation is sent to a model, every agent message is
turned into at most one LLM message (``user``, ``developer``, ``assistant`` or ``toolResult``). This
module does that conversion on plain JSON-shaped dicts, without mutating its inputs.

The text built here is what the model sees, so it follows the original byte for byte where it is
known (prompt-cache parity). The original is JavaScript; where it relies on JavaScript semantics
(truthiness, ``${value}`` interpolation, ``Number.prototype.toFixed``) the helpers below reproduce them,
so that odd values in hand-edited files render the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, TypeGuard

from omp_session.dialects import OMP_13_19, ContextRules
from omp_session.format.javascript import UNDEFINED, number_to_string, template_string
from omp_session.model.prompt_format import format_prompt_content

__all__ = [
    "BRANCH_SUMMARY_PREAMBLE",
    "COMPACTION_SUMMARY_PREAMBLE",
    "convert_to_llm",
    "format_output_meta",
]

BRANCH_SUMMARY_PREAMBLE = "The following is a summary of a branch that this conversation came back from:"
COMPACTION_SUMMARY_PREAMBLE = (
    "Another model already worked on this task and wrote the summary of its progress below; build on"
    " that work and do not duplicate what it has already done."
)

Message = dict[str, Any]

# Distinguishes "key absent" (JavaScript `undefined`) from an explicit JSON null.
_MISSING: Any = UNDEFINED

_FENCE = "```"


# --------------------------------------------------------------------------- JavaScript semantics


def _truthy(value: Any) -> bool:
    """JavaScript truthiness: unlike Python, empty lists and dicts are true."""
    if value is None or value is _MISSING or value is False:
        return False
    if isinstance(value, (int, float)):
        return value != 0 and not (isinstance(value, float) and math.isnan(value))
    if isinstance(value, str):
        return value != ""
    return True


def _to_fixed_1(value: float) -> str:
    """``value.toFixed(1)``: rounds the exact binary value half-up (Python's format rounds half-even)."""
    return str(Decimal(value).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


def _is_number(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# --------------------------------------------------------------------------- output-meta notice


def _format_bytes(size: float) -> str:
    """omp's ``formatBytes``: ``512B``, ``1.5KB``, ``2.3MB``, ``1.2GB`` (1024 steps)."""
    if size < 1024:
        return f"{number_to_string(size)}B"
    if size < 1024**2:
        return f"{_to_fixed_1(size / 1024)}KB"
    if size < 1024**3:
        return f"{_to_fixed_1(size / 1024**2)}MB"
    return f"{_to_fixed_1(size / 1024**3)}GB"


def _truncation_notice(truncation: Mapping[str, Any]) -> str:
    """``Showing lines 91-100 of 100 (500B limit). Use offset=101 to continue. Read artifact://3 …``."""
    total = template_string(truncation.get("totalLines", _MISSING))
    shown = truncation.get("shownRange")
    start = shown.get("start") if isinstance(shown, Mapping) else None
    end = shown.get("end") if isinstance(shown, Mapping) else None
    # The original only trusts a range whose end is not before its start.
    if _is_number(start) and _is_number(end) and end >= start:
        notice = f"Showing lines {template_string(start)}-{template_string(end)} of {total}"
    else:
        notice = f"Showing {template_string(truncation.get('outputLines', _MISSING))} of {total} lines"
    if truncation.get("truncatedBy") == "bytes":
        limit = truncation.get("maxBytes")
        limit = limit if limit is not None else truncation.get("outputBytes")
        # Without any byte count the original would print "NaNGB"; say nothing instead.
        if _is_number(limit):
            notice += f" ({_format_bytes(limit)} limit)"
    if truncation.get("nextOffset") is not None:
        notice += f". Use offset={template_string(truncation['nextOffset'])} to continue"
    if truncation.get("artifactId") is not None:
        notice += f". Read artifact://{template_string(truncation['artifactId'])} for full output"
    return notice


_LIMIT_NOTICES = (
    ("matchLimit", "{reached} matches limit reached. Use limit={suggestion} for more"),
    ("resultLimit", "{reached} results limit reached. Use limit={suggestion} for more"),
    ("headLimit", "{reached} results limit reached. Use limit={suggestion} for more"),
)


def _limit_notices(limits: Mapping[str, Any]) -> list[str]:
    parts: list[str] = []
    for key, template in _LIMIT_NOTICES:
        limit = limits.get(key)
        if isinstance(limit, Mapping):
            reached = template_string(limit.get("reached", _MISSING))
            suggestion = template_string(limit.get("suggestion", _MISSING))
            parts.append(template.format(reached=reached, suggestion=suggestion))
    column = limits.get("columnTruncated")
    if isinstance(column, Mapping):
        parts.append(f"Some lines truncated to {template_string(column.get('maxColumn', _MISSING))} chars")
    return parts


def _diagnostics_notice(diagnostics: Any) -> str:
    """LSP diagnostics block (edit/write tools; not expected on bash/python executions)."""
    if not isinstance(diagnostics, Mapping):
        return ""
    messages = diagnostics.get("messages")
    if not isinstance(messages, Sequence) or isinstance(messages, str) or not messages:
        return ""
    summary = template_string(diagnostics.get("summary", _MISSING))
    body = "\n".join(template_string(message) for message in messages)
    return f"\n\nLSP Diagnostics ({summary}):\n{body}"


def format_output_meta(meta: Mapping[str, Any] | None) -> str:
    """Render omp's ``OutputMeta`` as the notice appended to bash/python output.

    Returns ``""`` when there is nothing to say, else ``"\\n\\n[" + parts joined by ". " + "]"``
    (truncation, then match/result/head limits, then column truncation), followed by an LSP
    diagnostics block when present. Parts of ``meta`` that are not understood contribute nothing.

    >>> format_output_meta({"truncation": {"truncatedBy": "bytes", "totalLines": 100,
    ...     "outputLines": 10, "shownRange": {"start": 91, "end": 100}, "maxBytes": 500,
    ...     "artifactId": "3"}})
    '\\n\\n[Showing lines 91-100 of 100 (500B limit). Read artifact://3 for full output]'
    """
    if not isinstance(meta, Mapping):
        return ""
    parts: list[str] = []
    truncation = meta.get("truncation")
    if isinstance(truncation, Mapping):
        parts.append(_truncation_notice(truncation))
    limits = meta.get("limits")
    if isinstance(limits, Mapping):
        parts.extend(_limit_notices(limits))
    notice = f"\n\n[{'. '.join(parts)}]" if parts else ""
    return notice + _diagnostics_notice(meta.get("diagnostics"))


# --------------------------------------------------------------------------- text builders


def _fenced(body: Any, language: str = "") -> str:
    return f"{_FENCE}{language}\n{template_string(body)}\n{_FENCE}"


def _exit_code_is_failure(exit_code: Any) -> bool:
    """``exitCode !== null && exitCode !== undefined && exitCode !== 0`` (strict: ``false`` counts)."""
    if exit_code is None or exit_code is _MISSING:
        return False
    return not (_is_number(exit_code) and exit_code == 0)


def _bash_execution_text(message: Mapping[str, Any]) -> str:
    text = f"Ran `{template_string(message.get('command', _MISSING))}`\n"
    output = message.get("output", _MISSING)
    text += _fenced(output) if _truthy(output) else "(no output)"
    exit_code = message.get("exitCode", _MISSING)
    if _truthy(message.get("cancelled")):
        text += "\n\n(command cancelled)"
    elif _exit_code_is_failure(exit_code):
        text += f"\n\nCommand exited with code {template_string(exit_code)}"
    return text + format_output_meta(message.get("meta"))


def _python_execution_text(message: Mapping[str, Any]) -> str:
    text = f"Ran Python:\n{_fenced(message.get('code', _MISSING), 'python')}\n"
    output = message.get("output", _MISSING)
    text += f"Output:\n{_fenced(output)}" if _truthy(output) else "(no output)"
    exit_code = message.get("exitCode", _MISSING)
    if _truthy(message.get("cancelled")):
        text += "\n\n(execution cancelled)"
    elif _exit_code_is_failure(exit_code):
        text += f"\n\nExecution failed with code {template_string(exit_code)}"
    return text + format_output_meta(message.get("meta"))


def _summary_text(preamble: str, summary: Any) -> str:
    # Handlebars renders a missing or null value as the empty string; anything else via String().
    body = "" if summary is None or summary is _MISSING else template_string(summary)
    return format_prompt_content(f"{preamble}\n\n<summary>\n{body}\n</summary>")


def _file_mention_text(files: Sequence[Mapping[str, Any]]) -> str:
    wrapped = []
    for file in files:
        content = file.get("content", _MISSING)
        inner = f"\n{template_string(content)}\n" if _truthy(content) else "\n"
        # The path is deliberately not escaped: the original does not escape it either.
        wrapped.append(f'<file path="{template_string(file.get("path", _MISSING))}">{inner}</file>')
    return "<system-reminder>\n" + "\n\n".join(wrapped) + "\n</system-reminder>"


# --------------------------------------------------------------------------- per-role converters


def _user_message(
    content: Any, attribution: Any, source: Mapping[str, Any], provider_payload: Any = _MISSING
) -> Message:
    """``{role: "user", content, attribution, providerPayload, timestamp}``.

    Values that are absent (JavaScript ``undefined``) are left out, as ``JSON.stringify`` does.
    """
    fields = {
        "role": "user",
        "content": content,
        "attribution": attribution,
        "providerPayload": provider_payload,
        "timestamp": source.get("timestamp", _MISSING),
    }
    return {key: value for key, value in fields.items() if value is not _MISSING}


def _text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _convert_bash(message: Mapping[str, Any]) -> Message | None:
    if _truthy(message.get("excludeFromContext")):
        return None
    return _user_message([_text_block(_bash_execution_text(message))], "user", message)


def _convert_python(message: Mapping[str, Any]) -> Message | None:
    if _truthy(message.get("excludeFromContext")):
        return None
    return _user_message([_text_block(_python_execution_text(message))], "user", message)


def _convert_custom(message: Mapping[str, Any]) -> Message | None:
    content = message.get("content", _MISSING)
    if isinstance(content, str):
        content = [_text_block(content)]
    elif isinstance(content, list):
        content = list(content)  # same blocks, but a list the caller can change safely
    return _user_message(content, message.get("attribution", _MISSING), message)


def _convert_branch_summary(message: Mapping[str, Any]) -> Message | None:
    text = _summary_text(BRANCH_SUMMARY_PREAMBLE, message.get("summary", _MISSING))
    return _user_message([_text_block(text)], "agent", message)


def _convert_compaction_summary(message: Mapping[str, Any]) -> Message | None:
    text = _summary_text(COMPACTION_SUMMARY_PREAMBLE, message.get("summary", _MISSING))
    payload = message.get("providerPayload", _MISSING)
    return _user_message([_text_block(text)], "agent", message, payload)


def _convert_file_mention(message: Mapping[str, Any]) -> Message | None:
    raw_files = message.get("files")
    files = [f for f in raw_files if isinstance(f, Mapping)] if isinstance(raw_files, list) else []
    content: list[Any] = [_text_block(_file_mention_text(files))]
    content.extend(f["image"] for f in files if _truthy(f.get("image")))
    return _user_message(content, "user", message)


def _copy_message(message: Mapping[str, Any]) -> Message:
    """Shallow copy whose ``content`` list is also new, so appending to it leaves the input alone."""
    result = dict(message)
    if isinstance(result.get("content"), list):
        result["content"] = list(result["content"])
    return result


def _with_default_attribution(message: Mapping[str, Any], default: str) -> Message:
    """Copy with ``attribution ?? default`` (an existing key keeps its position)."""
    result = _copy_message(message)
    if result.get("attribution") is None:
        result["attribution"] = default
    return result


def _convert_user(message: Mapping[str, Any]) -> Message | None:
    return _with_default_attribution(message, "user")


def _convert_developer(message: Mapping[str, Any]) -> Message | None:
    return _with_default_attribution(message, "agent")


def _convert_assistant(message: Mapping[str, Any]) -> Message | None:
    return _copy_message(message)


def _convert_tool_result(message: Mapping[str, Any]) -> Message | None:
    result = _with_default_attribution(message, "agent")
    if result.get("prunedAt") is not None:
        # Pruned output keeps only its text (images go); with no text a fixed marker stands in.
        blocks = result.get("content")
        texts = [
            template_string(block.get("text", _MISSING))
            for block in (blocks if isinstance(blocks, list) else [])
            if isinstance(block, Mapping) and block.get("type") == "text"
        ]
        result["content"] = [_text_block("".join(texts) if texts else "[Output truncated]")]
    return result


_CONVERTERS: dict[str, Callable[[Mapping[str, Any]], Message | None]] = {
    "bashExecution": _convert_bash,
    "pythonExecution": _convert_python,
    "custom": _convert_custom,
    "hookMessage": _convert_custom,
    "branchSummary": _convert_branch_summary,
    "compactionSummary": _convert_compaction_summary,
    "fileMention": _convert_file_mention,
    "user": _convert_user,
    "developer": _convert_developer,
    "assistant": _convert_assistant,
    "toolResult": _convert_tool_result,
}


#: omp 18's ``USER_INTERRUPT_LABEL`` and the ``errorId`` bit of a user interrupt (``isUserInterruptAbort``).
_USER_INTERRUPT_MESSAGE = "Interrupted by user"
_USER_INTERRUPT_BIT = 1 << 26
_INTERRUPTED_THINKING = "interrupted-thinking"


def _is_user_interrupt(message: Mapping[str, Any]) -> bool:
    if message.get("stopReason") != "aborted":
        return False
    error_id = message.get("errorId")
    bits = error_id if isinstance(error_id, int) and not isinstance(error_id, bool) else 0
    return bool(bits & _USER_INTERRUPT_BIT) or message.get("errorMessage") == _USER_INTERRUPT_MESSAGE


def _without_trailing_unsigned_thinking(content: list[Any]) -> list[Any]:
    """omp 18's ``demoteInterruptedThinking``: the content without its trailing run of unsigned,
    non-blank thinking blocks (blank text blocks after the run go with it)."""
    end = len(content)
    while end > 0:
        block = content[end - 1]
        text = block.get("text") if isinstance(block, Mapping) else None
        if not (isinstance(block, Mapping) and block.get("type") == "text" and isinstance(text, str)):
            break
        if text.strip():
            break
        end -= 1
    start = end
    while start > 0:
        block = content[start - 1]
        thinking = block.get("thinking") if isinstance(block, Mapping) else None
        if not (isinstance(block, Mapping) and block.get("type") == "thinking" and isinstance(thinking, str)):
            break
        if not thinking.strip() or block.get("thinkingSignature"):
            break
        start -= 1
    return content[:start] if end > start else content


def _dropped_interrupted_turn(message: Mapping[str, Any], following: Any, rules: ContextRules) -> bool:
    """omp 18: an assistant turn the user interrupted before it produced anything (after its
    trailing unsigned thinking is demoted) is not sent, unless an ``interrupted-thinking`` marker
    follows it or (omp 18.3) it carries the ``requestControls`` its request sent."""
    if not rules.drop_empty_interrupted_turns or not _is_user_interrupt(message):
        return False
    if (
        isinstance(following, Mapping)
        and following.get("role") == "custom"
        and following.get("customType") == _INTERRUPTED_THINKING
    ):
        return False
    if rules.keep_request_controls and "requestControls" in message:
        return False
    content = message.get("content")
    return isinstance(content, list) and not _without_trailing_unsigned_thinking(content)


def convert_to_llm(
    messages: Sequence[Mapping[str, Any]], rules: ContextRules = OMP_13_19.context
) -> list[dict[str, Any]]:
    """Convert agent messages to LLM messages, one output per input, in order.

    ``bashExecution``/``pythonExecution`` with ``excludeFromContext`` and messages of unknown roles
    (or that are not objects at all) are dropped. The inputs are never mutated: every returned
    message is a new dict with a new ``content`` list; content blocks and other nested values that
    need no change are shared with the input, so treat them as read-only.

    ``rules`` (a dialect's ``context``): under omp 18 an assistant turn the user interrupted before
    any output is dropped, except (omp 18.3) one carrying ``requestControls``. The rest of omp 18's
    conversion (demoted thinking kept as a note, ``historyRewriteAt`` on summaries) is not modelled:
    the conversion is omp 13.19's otherwise.
    """
    converted: list[dict[str, Any]] = []
    for position, message in enumerate(messages):
        if not isinstance(message, Mapping):
            continue
        role = message.get("role")
        if role == "assistant" and _dropped_interrupted_turn(
            message, messages[position + 1] if position + 1 < len(messages) else None, rules
        ):
            continue
        converter = _CONVERTERS.get(role) if isinstance(role, str) else None
        result = converter(message) if converter is not None else None
        if result is not None:
            converted.append(result)
    return converted
