"""pi-ai's ``transformMessages``: the provider-independent pass every encoder runs first.

It drops malformed tool calls, rewrites each assistant turn for the target model (thinking kept,
stripped of its signature, demoted to text or dropped; foreign text and tool-call signatures removed;
tool-call ids normalised for the target), de-duplicates reused tool-call ids, and makes every
surviving tool call be followed by exactly one result: the real one, a synthetic ``"aborted"`` result
for a turn that stopped with an error or abort, or ``"No result provided"``. Orphaned results are
dropped or, outside an open call window, kept as a ``<stale-tool-result>`` user note.

Not modelled (off in omp unless configured): credential redaction and Anthropic prefix binding.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from omp_session.integrations.providers._common import (
    DEMOTED,
    UnsupportedConversion,
    is_blank,
    js_length,
    js_slice,
    js_trim,
    js_trim_end,
    render_demoted_thinking,
    sanitize_tool_call_id,
)
from omp_session.integrations.providers._target import ANTHROPIC, ModelTarget

__all__ = ["Normalizer", "transform_messages"]

Message = dict[str, Any]
Normalizer = Callable[[str, Mapping[str, Any]], str]

MAX_TOOL_CALL_ID_LENGTH = 64
_RESPONSES_APIS = ("openai-responses", "openai-codex-responses", "azure-openai-responses")


def _content(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def _blocks(message: Mapping[str, Any], kind: str) -> list[dict[str, Any]]:
    return [b for b in _content(message) if isinstance(b, dict) and b.get("type") == kind]


def _responses_call_component(identifier: str) -> str:
    pipe = identifier.find("|")
    return identifier if pipe <= 0 else identifier[:pipe]


class _OriginScope:
    def __init__(self, messages: list[Message]) -> None:
        self.responses_components: set[str] = set()
        self.opaque_composite_ids: set[str] = set()
        for message in messages:
            if message.get("role") != "assistant":
                continue
            responses_origin = message.get("api") in _RESPONSES_APIS
            for block in _blocks(message, "toolCall"):
                identifier = str(block.get("id", ""))
                if responses_origin:
                    self.responses_components.add(_responses_call_component(identifier))
                elif "|" in identifier:
                    self.opaque_composite_ids.add(identifier)

    def key(self, identifier: str) -> str:
        pipe = identifier.find("|")
        if pipe <= 0 or identifier in self.opaque_composite_ids:
            return identifier
        prefix = identifier[:pipe]
        return prefix if prefix in self.responses_components else identifier


def _segment_with_suffix(segment: str, suffix: str, limit: int) -> str:
    if js_length(segment) + len(suffix) <= limit:
        return segment + suffix
    return js_slice(segment, max(0, limit - len(suffix))) + suffix


def _with_duplicate_suffix(identifier: str, suffix: str, limit: int) -> str:
    if "|" in identifier:
        return "|".join(_segment_with_suffix(part, suffix, limit) for part in identifier.split("|"))
    return _segment_with_suffix(identifier, suffix, limit)


def _deduplicate_tool_call_ids(
    messages: list[Message], scope: _OriginScope, limit: int, suffix_prefix: str
) -> list[Message]:
    seen: dict[str, int] = {}
    pending: dict[str, list[str | None]] = {}
    result: list[Message] = []
    for message in messages:
        role = message.get("role")
        if role == "toolResult":
            key = scope.key(str(message.get("toolCallId", "")))
            rewrites = pending.get(key)
            if not rewrites:
                result.append(message)
                continue
            rewrite = rewrites.pop(0)
            if not rewrites:
                del pending[key]
            result.append({**message, "toolCallId": rewrite} if rewrite is not None else message)
            continue
        if role != "assistant":
            result.append(message)
            continue
        touched: set[str] = set()
        changed = False
        content: list[Any] = []
        for block in _content(message):
            if not (isinstance(block, dict) and block.get("type") == "toolCall"):
                content.append(block)
                continue
            identifier = str(block.get("id", ""))
            block_key = scope.key(identifier)
            if block_key not in touched:
                pending.pop(block_key, None)
                touched.add(block_key)
            previous = seen.get(block_key, 0)
            if previous == 0:
                seen[block_key] = 1
                pending.setdefault(block_key, []).append(None)
                content.append(block)
                continue
            index = previous
            replacement = _with_duplicate_suffix(identifier, f"{suffix_prefix}{index}", limit)
            while scope.key(replacement) in seen:
                index += 1
                replacement = _with_duplicate_suffix(identifier, f"{suffix_prefix}{index}", limit)
            seen[block_key] = index + 1
            seen[scope.key(replacement)] = 1
            pending.setdefault(block_key, []).append(replacement)
            changed = True
            content.append({**block, "id": replacement})
        result.append({**message, "content": content} if changed else message)
    return result


def _malformed(block: Mapping[str, Any]) -> bool:
    return is_blank(block.get("id")) or is_blank(block.get("name"))


def _sanitize_malformed_tool_calls(messages: list[Message]) -> list[Message]:
    if not any(
        message.get("role") == "assistant" and any(_malformed(b) for b in _blocks(message, "toolCall"))
        for message in messages
    ):
        return messages
    queues: dict[str, list[bool]] = {}
    result: list[Message] = []
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            queues.clear()
            kept: list[Any] = []
            for block in _content(message):
                if isinstance(block, dict) and block.get("type") == "toolCall":
                    bad = _malformed(block)
                    queues.setdefault(str(block.get("id", "")), []).append(bad)
                    if bad:
                        continue
                kept.append(block)
            if not kept:
                continue
            result.append(message if len(kept) == len(_content(message)) else {**message, "content": kept})
        elif role == "toolResult":
            identifier = str(message.get("toolCallId", ""))
            queue = queues.get(identifier)
            if queue:
                drop = queue.pop(0)
                if not queue:
                    del queues[identifier]
                if drop:
                    continue
            result.append(message)
        else:
            queues.clear()
            result.append(message)
    return result


def _drops_truncated_thinking_only(message: Mapping[str, Any]) -> bool:
    if message.get("stopReason") not in ("length", "error", "aborted"):
        return False
    return not any(isinstance(b, dict) and b.get("type") in ("toolCall", "text") for b in _content(message))


def _anthropic_tool_call_id(identifier: str, normalize: Normalizer | None, source: Mapping[str, Any]) -> str:
    if _valid_anthropic_id(identifier):
        return identifier
    normalized = normalize(identifier, source) if normalize else sanitize_tool_call_id(identifier)
    if _valid_anthropic_id(normalized):
        return normalized
    # pi-ai falls back to a hash-derived id; no sanitised non-empty id can get here.
    raise UnsupportedConversion(f"tool call id {identifier!r} cannot be made a valid Anthropic id")


def _valid_anthropic_id(identifier: str) -> bool:
    return 0 < len(identifier) <= 64 and all(c.isascii() and (c.isalnum() or c in "_-") for c in identifier)


def _signature(block: Mapping[str, Any]) -> str | None:
    signature = block.get("thinkingSignature")
    return signature if isinstance(signature, str) and signature != "" else None


def _transform_assistant(
    message: Message,
    index: int,
    latest_index: int,
    model: ModelTarget,
    normalize: Normalizer | None,
    id_map: dict[str, str],
    composite_map: dict[str, str],
) -> Message:
    same_model = (
        message.get("provider") == model.provider
        and message.get("api") == model.api
        and message.get("model") == model.id
    )
    anthropic_target = model.api == ANTHROPIC
    anthropic_replay = anthropic_target and message.get("api") == ANTHROPIC
    same_deployment = (
        anthropic_replay and message.get("provider") == model.provider and model.official_endpoint
    )
    latest = index == latest_index
    official_source = anthropic_replay and message.get("provider") == "anthropic"
    signing_target = anthropic_target and model.signing_endpoint
    signing_involved = official_source or signing_target
    replays_unsigned = anthropic_target and model.replay_unsigned_thinking
    content = _content(message)
    invalid_stop = message.get("stopReason") in ("aborted", "error")
    abandoned_tool_use = (
        not invalid_stop
        and message.get("stopReason") != "toolUse"
        and any(isinstance(b, dict) and b.get("type") == "toolCall" for b in content)
    )
    last_block = len(content) - 1

    def visible_thinking_survives(candidate: Any, candidate_index: int) -> bool:
        if not (isinstance(candidate, dict) and candidate.get("type") == "thinking") or not anthropic_replay:
            return False
        if latest and abandoned_tool_use:
            return True
        untrustworthy = abandoned_tool_use or (invalid_stop and candidate_index == last_block)
        replay_signature = None if untrustworthy else _signature(candidate)
        if not replay_signature and is_blank(candidate.get("thinking")):
            return False
        return not (
            same_model and signing_target and (not replay_signature or js_trim(replay_signature) == "")
        )

    has_visible_thinking = any(isinstance(b, dict) and b.get("type") == "thinking" for b in content)
    drops_all_visible = (
        anthropic_replay
        and same_model
        and signing_target
        and has_visible_thinking
        and not any(visible_thinking_survives(b, i) for i, b in enumerate(content))
    )

    transformed: list[Any] = []
    for block_index, block in enumerate(content):
        if not isinstance(block, dict):
            transformed.append(block)
            continue
        kind = block.get("type")
        if kind == "thinking":
            untrustworthy = abandoned_tool_use or (invalid_stop and block_index == last_block)
            sanitized = block
            if untrustworthy and _signature(block):
                sanitized = {**block, "thinkingSignature": None}
            thinking = sanitized.get("thinking")
            if anthropic_replay:
                cross_provider = message.get("provider") != model.provider
                if latest and abandoned_tool_use and not cross_provider:
                    transformed.append(block)
                    continue
                stale = not same_deployment and (cross_provider if latest else not same_model)
                if stale and signing_involved and _signature(sanitized):
                    sanitized = {**sanitized, "thinkingSignature": None}
                if not _signature(sanitized) and is_blank(thinking):
                    continue
                signature = _signature(sanitized)
                if same_model and signing_target and (not signature or js_trim(signature) == ""):
                    continue
                transformed.append(sanitized)
                continue
            if same_model and _signature(sanitized):
                transformed.append(sanitized)
                continue
            if is_blank(thinking):
                continue
            if same_model:
                transformed.append(sanitized)
                continue
            transformed.append(
                {"type": "text", "text": render_demoted_thinking(model.id, str(thinking)), DEMOTED: True}
            )
            continue
        if kind == "redactedThinking":
            if anthropic_replay:
                if drops_all_visible:
                    continue
                if (
                    same_model
                    or same_deployment
                    or (latest and message.get("provider") == model.provider)
                    or replays_unsigned
                ):
                    transformed.append(block)
                continue
            if same_model:
                transformed.append(block)
            continue
        if kind == "anthropicServerTool":
            if anthropic_replay and message.get("provider") == model.provider:
                transformed.append(block)
            continue
        if kind == "fallback":
            if anthropic_target and model.official_endpoint:
                transformed.append(block)
            continue
        if kind == "image":
            continue
        if kind == "text":
            transformed.append(block if same_model else {"type": "text", "text": block.get("text")})
            continue
        if kind == "toolCall":
            call = block
            if not same_model and call.get("thoughtSignature"):
                call = {**call, "thoughtSignature": None}
            identifier = str(call.get("id", ""))
            normalized: str | None = None
            if anthropic_target:
                if not same_model or model.official_endpoint:
                    normalized = _anthropic_tool_call_id(identifier, normalize, message)
            elif not same_model and normalize is not None:
                normalized = normalize(identifier, message)
            if normalized is not None:
                if normalized != identifier:
                    id_map[identifier] = normalized
                    call = {**call, "id": normalized}
                if message.get("api") in _RESPONSES_APIS:
                    composite_map[_responses_call_component(identifier)] = normalized
            transformed.append(call)
            continue
        transformed.append(block)

    if transformed:
        final = transformed[-1]
        if isinstance(final, dict) and final.get("type") == "text" and final.get(DEMOTED):
            transformed[-1] = {**final, "text": js_trim_end(str(final.get("text", "")))}
    return {**message, "content": transformed}


def transform_messages(
    messages: list[Message],
    model: ModelTarget,
    normalize: Normalizer | None = None,
    max_id_length: int = MAX_TOOL_CALL_ID_LENGTH,
    duplicate_suffix_prefix: str = "_dup",
) -> list[Message]:
    """Run ``transformMessages`` on LLM messages for ``model`` (inputs are never mutated).

    ``normalize(id, source_assistant)`` is the encoder's tool-call id normaliser.
    """
    messages = _sanitize_malformed_tool_calls(messages)
    id_map: dict[str, str] = {}
    composite_map: dict[str, str] = {}
    latest_index = -1
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "assistant" and not _drops_truncated_thinking_only(messages[index]):
            latest_index = index
            break

    normalized_messages: list[Message] = []
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "toolResult":
            call_id = str(message.get("toolCallId", ""))
            mapped = id_map.get(call_id)
            if mapped is None and "|" in call_id:
                mapped = composite_map.get(_responses_call_component(call_id))
            normalized_messages.append(
                {**message, "toolCallId": mapped} if mapped and mapped != call_id else message
            )
        elif role == "assistant":
            normalized_messages.append(
                _transform_assistant(message, index, latest_index, model, normalize, id_map, composite_map)
            )
        else:
            normalized_messages.append(message)

    scope = _OriginScope(normalized_messages)
    transformed = _deduplicate_tool_call_ids(
        normalized_messages, scope, max_id_length, duplicate_suffix_prefix
    )
    return _pair_tool_results(messages, transformed, scope)


def _pair_tool_results(
    original: list[Message], transformed: list[Message], scope: _OriginScope
) -> list[Message]:
    real_results: dict[str, list[list[Any]]] = {}
    for index, message in enumerate(transformed):
        if message.get("role") == "toolResult":
            key = scope.key(str(message.get("toolCallId", "")))
            real_results.setdefault(key, []).append([index, message, False])

    def take_real(identifier: str, after: int) -> Message | None:
        for entry in real_results.get(scope.key(identifier), []):
            if entry[2] or entry[0] <= after:
                continue
            entry[2] = True
            found: Message = entry[1]
            return found
        return None

    valid_ids = {
        scope.key(str(block.get("id", "")))
        for message in transformed
        if message.get("role") == "assistant"
        for block in _blocks(message, "toolCall")
    }

    result: list[Message] = []
    pending_calls: list[dict[str, Any]] = []
    pending_start = -1
    aborted_calls: dict[str, dict[str, Any]] = {}
    aborted_timestamp: Any = None
    aborted_open = False
    aborted_start = -1
    status: dict[str, str] = {}

    def synthetic(call: Mapping[str, Any], text: str, timestamp: Any) -> Message:
        return {
            "role": "toolResult",
            "toolCallId": call.get("id"),
            "toolName": call.get("name"),
            "content": [{"type": "text", "text": text}],
            "isError": True,
            "timestamp": timestamp,
        }

    def flush_pending(timestamp: Any) -> None:
        nonlocal pending_calls
        for call in pending_calls:
            key = scope.key(str(call.get("id", "")))
            if key in status:
                continue
            real = take_real(str(call.get("id", "")), pending_start)
            result.append(real if real is not None else synthetic(call, "No result provided", timestamp))
            status[key] = "resolved"
        pending_calls = []

    def flush_aborted() -> None:
        nonlocal aborted_calls, aborted_open, aborted_timestamp
        if not aborted_open:
            return
        for call in aborted_calls.values():
            key = scope.key(str(call.get("id", "")))
            if key in status:
                continue
            real = take_real(str(call.get("id", "")), aborted_start)
            if real is not None:
                result.append(real)
                status[key] = "resolved"
            else:
                result.append(synthetic(call, "aborted", aborted_timestamp))
                status[key] = "aborted"
        aborted_calls = {}
        aborted_open = False
        aborted_timestamp = None

    for index, message in enumerate(transformed):
        role = message.get("role")
        timestamp = message.get("timestamp")
        if role == "assistant":
            flush_pending(timestamp)
            flush_aborted()
            if original[index].get("role") == "assistant" and _drops_truncated_thinking_only(original[index]):
                continue
            calls = _blocks(message, "toolCall")
            if message.get("stopReason") in ("error", "aborted"):
                result.append(message)
                aborted_calls = {scope.key(str(call.get("id", ""))): call for call in calls}
                aborted_timestamp = message.get("timestamp")
                # pi-ai tests the timestamp for "a window is open"; an aborted turn without one opens none.
                aborted_open = aborted_timestamp is not None
                aborted_start = index
                continue
            if calls:
                pending_calls = calls
                pending_start = index
            result.append(message)
        elif role == "toolResult":
            key = scope.key(str(message.get("toolCallId", "")))
            if key in status:
                continue
            if key in aborted_calls:
                del aborted_calls[key]
                status[key] = "resolved"
                result.append(message)
                continue
            if any(scope.key(str(call.get("id", ""))) == key for call in pending_calls):
                status[key] = "resolved"
                result.append(message)
                continue
            if key not in valid_ids:
                if (
                    any(scope.key(str(call.get("id", ""))) not in status for call in pending_calls)
                    or aborted_calls
                ):
                    continue
                texts = [
                    str(part.get("text"))
                    for part in _content(message)
                    if isinstance(part, dict)
                    and part.get("type") == "text"
                    and js_trim(str(part.get("text"))) != ""
                ]
                if texts:
                    error = ' is-error="true"' if message.get("isError") else ""
                    body = "\n".join(texts)
                    result.append(
                        {
                            "role": "user",
                            "content": f'<stale-tool-result tool="{_js_string(message.get("toolName"))}"'
                            f' id="{_js_string(message.get("toolCallId"))}"{error}>'
                            f"\n{body}\n</stale-tool-result>",
                            "timestamp": timestamp,
                        }
                    )
        else:
            flush_pending(timestamp)
            flush_aborted()
            result.append(message)

    flush_pending(None)
    flush_aborted()
    return result


def _js_string(value: Any) -> str:
    if value is None:
        return "undefined"
    return str(value)
