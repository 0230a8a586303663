"""The persistence transform (spec §7.4) and its inverse on load (§7.5 step 6).

What is written differs from what is in memory: over-long strings are truncated, large images
move to the blob store, streaming scratch fields are dropped. In-memory entries are never modified
here (copy-on-write). Most lines need none of this, so the encoded line is checked first and only
lines that can be affected are walked.

Internal module (the manager applies it when it writes and reads entries); not part of the public API.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any

from omp_session.dialects import OMP_13_19, PersistRules
from omp_session.format import markers
from omp_session.format.blob_refs import BLOB_PREFIX, BlobSink, blob_ref, parse_blob_ref
from omp_session.format.codec import decode_line, encode_json
from omp_session.format.markers import COPILOT_PROVIDER

__all__ = [
    "COPILOT_PROVIDER",
    "MAX_STRING_UNITS",
    "MIN_EXTERNAL_IMAGE_CHARS",
    "TRUNCATION_NOTICE",
    "KeepReplay",
    "drop_replay",
    "js_length",
    "prepare_for_disk",
    "resolve_blob_refs",
    "sanitize_openai_replay",
    "truncate_js",
    "without_replayed_signatures",
]

MAX_STRING_UNITS = 500_000
TRUNCATION_NOTICE = "\n\n[Session persistence truncated large content]"
MIN_EXTERNAL_IMAGE_CHARS = 1024
_SIGNATURE_KEYS = frozenset({"thinkingSignature", "thoughtSignature", "textSignature"})
_IMAGE_EXTENSIONS = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/jpg": "jpg",
    "image/gif": "gif",
    "image/webp": "webp",
    "image/svg+xml": "svg",
}
# The markers that decide which lines this transform (and the load side's) may change: the one
# list of format/markers.py, asked when a line is written.
_SCALAR_TYPES = frozenset({str, int, bool, type(None)})


def js_length(text: str) -> int:
    """Length in UTF-16 code units, as JavaScript's ``String.length``."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def truncate_js(text: str) -> str:
    """Cut ``text`` to 500 000 UTF-16 units including the notice (no dangling high surrogate)."""
    keep = MAX_STRING_UNITS - len(TRUNCATION_NOTICE)
    units = text.encode("utf-16-le", "surrogatepass")[: keep * 2]
    if len(units) >= 2 and 0xD800 <= int.from_bytes(units[-2:], "little") <= 0xDBFF:
        units = units[:-2]
    return units.decode("utf-16-le", "surrogatepass") + TRUNCATION_NOTICE


def image_extension(mime_type: Any) -> str | None:
    """The sidecar extension omp 18 gives an externalised image of ``mime_type``."""
    if not isinstance(mime_type, str):
        return None
    lower = mime_type.lower()
    if lower in _IMAGE_EXTENSIONS:
        return _IMAGE_EXTENSIONS[lower]
    if not lower.startswith("image/"):
        return None
    subtype = lower[len("image/") :].split(";")[0].split("+")[0]
    if not subtype or not (subtype[0].isascii() and subtype[0].isalnum()):
        return None
    return subtype if all(c.isascii() and (c.isalnum() or c in "._-") for c in subtype) else None


def _nonempty(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def is_signed_block(value: dict[str, Any], key: str | None) -> bool:
    """Content bound to its exact bytes (a provider rejects it changed): omp 18 writes it verbatim."""
    kind = value.get("type")
    return (
        (kind == "thinking" and _nonempty(value.get("thinkingSignature")))
        or (kind == "text" and _nonempty(value.get("textSignature")))
        or (kind == "toolCall" and _nonempty(value.get("thoughtSignature")))
        or (kind == "redactedThinking" and _nonempty(value.get("data")))
        or (kind == "reasoning" and _nonempty(value.get("encrypted_content")))
        or kind == "anthropicCompaction"
        or (key == "anthropicCompaction" and isinstance(value.get("content"), str))
    )


class _Transformer:
    def __init__(self, sink: BlobSink, rules: PersistRules) -> None:
        self.sink = sink
        self.rules = rules

    def value(self, value: Any, key: str | None, in_content: bool) -> tuple[Any, bool]:
        if isinstance(value, str):
            return self.string(value, key)
        if isinstance(value, dict):
            if self.rules.signed_verbatim and is_signed_block(value, key):
                return value, False
            replaced = False
            if in_content and value.get("type") == "image":
                image = self.image(value)
                replaced, value = image is not value, image
            new, changed = self.mapping(value)
            return new, changed or replaced
        if isinstance(value, list):
            changed = False
            items = []
            for item in value:
                new, item_changed = self.value(item, None, key == "content")
                changed = changed or item_changed
                items.append(new)
            return (items, True) if changed else (value, False)
        return value, False

    def string(self, text: str, key: str | None) -> tuple[str, bool]:
        if key == "image_url" and text.startswith("data:image/") and ";base64," in text:
            return blob_ref(self.sink.put(text.encode("utf-8", "surrogatepass"))), True
        if len(text) > MAX_STRING_UNITS // 2 and js_length(text) > MAX_STRING_UNITS:
            if key in _SIGNATURE_KEYS:  # a cut signature is invalid: omp 18 keeps it, 13.19 clears it
                return (text, False) if self.rules.signed_verbatim else ("", True)
            return truncate_js(text), True
        return text, False

    def image(self, block: dict[str, Any]) -> dict[str, Any]:
        data = block.get("data")
        if not isinstance(data, str) or data.startswith(BLOB_PREFIX) or len(data) < MIN_EXTERNAL_IMAGE_CHARS:
            return block
        try:
            raw = base64.b64decode(data, validate=False)
        except (binascii.Error, ValueError):
            return block
        digest = self.sink.put(raw)
        extension = image_extension(block.get("mimeType")) if self.rules.image_extensions else None
        if extension is not None:
            self.sink.put_sidecar(digest, extension)
        return {**block, "data": blob_ref(digest)}

    def mapping(self, mapping: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        out: dict[str, Any] = {}
        changed = shrunk = False
        for key, item in mapping.items():
            if key in self.rules.dropped_keys:
                changed = shrunk = True
                continue
            new, item_changed = self.value(item, key, False)
            changed = changed or item_changed
            shrunk = shrunk or (item_changed and isinstance(item, str))
            out[key] = new
        # Steps 1/2 changed this object: keep a text's lineCount consistent with its new content.
        if shrunk and isinstance(out.get("content"), str) and isinstance(out.get("lineCount"), int | float):
            out["lineCount"] = out["content"].count("\n") + 1
        return (out, True) if changed else (mapping, False)


def _is_plain(mapping: dict[str, Any], depth: int, dropped: frozenset[str]) -> bool:
    """Whether ``mapping`` holds only strings, integers, booleans and nulls (and, ``depth`` levels
    down, mappings of them) under no key the transform acts on: then there is no float for the
    number scan to find and nothing but an over-long string for the transform to change."""
    # Outside a content list (where images are), the transform acts only on ``image_url``, the
    # keys the dialect drops (``dropped``) and over-long strings.
    if "image_url" in mapping or not dropped.isdisjoint(mapping):
        return False
    for value in mapping.values():
        kind = type(value)
        if kind in _SCALAR_TYPES or (kind is dict and depth > 0 and _is_plain(value, depth - 1, dropped)):
            continue
        return False
    return True


def _is_spilled_mcp_result(entry: dict[str, Any]) -> bool:
    """omp 18.3 ``stripSpilledMcpStructuredContent``'s condition: a ``toolResult`` message whose
    ``details`` has string ``serverName`` and ``mcpToolName``, a ``structuredContent`` key and a
    non-empty string ``meta.truncation.artifactId`` (its text already went to an artifact)."""
    message = entry.get("message")
    if entry.get("type") != "message" or not isinstance(message, dict) or message.get("role") != "toolResult":
        return False
    details = message.get("details")
    if not isinstance(details, dict) or "structuredContent" not in details:
        return False
    meta = details.get("meta")
    truncation = meta.get("truncation") if isinstance(meta, dict) else None
    artifact = truncation.get("artifactId") if isinstance(truncation, dict) else None
    return (
        isinstance(details.get("serverName"), str)
        and isinstance(details.get("mcpToolName"), str)
        and isinstance(artifact, str)
        and bool(artifact)
    )


def without_spilled_structured_content(entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` as omp 18.3 writes it: a spilled MCP result without ``details.structuredContent``
    (a shallow copy; ``entry`` itself, which memory keeps, is not modified)."""
    if not _is_spilled_mcp_result(entry):
        return entry
    message = entry["message"]
    details = {key: value for key, value in message["details"].items() if key != "structuredContent"}
    return {**entry, "message": {**message, "details": details}}


def _reasoning_keys(item: Any) -> tuple[str | None, str | None] | None:
    """``(encrypted_content, id)`` of a reasoning item (each only when a non-empty string), or
    ``None`` for anything that is not one (omp 18's ``readReasoningItem``)."""
    if not isinstance(item, dict) or item.get("type") != "reasoning":
        return None
    encrypted, item_id = item.get("encrypted_content"), item.get("id")
    return (
        encrypted if isinstance(encrypted, str) and encrypted else None,
        item_id if isinstance(item_id, str) and item_id else None,
    )


def _covered(signature: str, encrypted: set[str], ids: set[str]) -> bool:
    # A signature is the JSON of a reasoning item: covered when the payload carries the same
    # encrypted blob, or (without one) the same item id; anything else, unparsable included, stays.
    try:
        keys = _reasoning_keys(decode_line(signature.encode("utf-8", "surrogatepass")))
    except ValueError:
        return False
    if keys is None:
        return False
    blob, item_id = keys
    if blob is not None:
        return blob in encrypted
    return item_id is not None and item_id in ids


def without_replayed_signatures(entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` as omp 18 writes it: an assistant message whose ``providerPayload`` (OpenAI
    Responses history) already carries a thinking block's reasoning item is written without that
    block's ``thinkingSignature``, which is the same item again as JSON (omp 18's
    ``stripReplayedReasoningSignatures``). A shallow copy; ``entry``, which memory keeps, is not
    modified."""
    message = entry.get("message")
    if entry.get("type") != "message" or not isinstance(message, dict) or message.get("role") != "assistant":
        return entry
    payload = message.get("providerPayload")
    content = message.get("content")
    if (
        not isinstance(payload, dict)
        or payload.get("type") != "openaiResponsesHistory"
        or not isinstance(payload.get("items"), list)
        or not isinstance(content, list)
    ):
        return entry
    encrypted: set[str] = set()
    ids: set[str] = set()
    for item in payload["items"]:
        keys = _reasoning_keys(item)
        if keys is not None:
            if keys[0] is not None:
                encrypted.add(keys[0])
            if keys[1] is not None:
                ids.add(keys[1])
    if not encrypted and not ids:
        return entry
    blocks = []
    changed = False
    for block in content:
        is_thinking = isinstance(block, dict) and block.get("type") == "thinking"
        signature = block.get("thinkingSignature") if is_thinking else None
        if isinstance(signature, str) and signature and _covered(signature, encrypted, ids):
            block = {key: value for key, value in block.items() if key != "thinkingSignature"}
            changed = True
        blocks.append(block)
    if not changed:
        return entry
    return {**entry, "message": {**message, "content": blocks}}


def prepare_for_disk(entry: dict[str, Any], sink: BlobSink, rules: PersistRules = OMP_13_19.persist) -> bytes:
    """The exact line (with ``\\n``) that is written for ``entry``; ``entry`` is not modified."""
    if rules.drop_spilled_structured_content:
        entry = without_spilled_structured_content(entry)
    if _is_plain(entry, 1, rules.dropped_keys):
        # Most appends (a user message with text content, a model or label change): looking at
        # a few values costs less than the scans of the line this skips (three substring
        # searches and a regex, a fifth of an append).
        line = encode_json(entry, floats=False)
        if len(line) <= MAX_STRING_UNITS:
            return line + b"\n"
    if rules.drop_replayed_signatures:  # (a plain entry holds no payload: checked after it)
        entry = without_replayed_signatures(entry)
    line = encode_json(entry)
    if len(line) > MAX_STRING_UNITS or markers.current().persist_search.search(line) is not None:
        transformed, _changed = _Transformer(sink, rules).value(entry, None, False)
        line = encode_json(transformed)
    return line + b"\n"


# -- load side ----------------------------------------------------------------------------------


def _resolve_content(content: Any, sink: BlobSink) -> None:
    if not isinstance(content, list):
        return
    for block in content:
        if isinstance(block, dict) and block.get("type") == "image":
            digest = parse_blob_ref(block.get("data"))
            data = sink.get(digest) if digest else None
            if data is not None:
                block["data"] = base64.b64encode(data).decode("ascii")


def _resolve_image_urls(value: Any, sink: BlobSink) -> None:
    stack = [value]
    while stack:
        current = stack.pop()
        items = current.items() if isinstance(current, dict) else enumerate(current)
        for key, item in items:
            if isinstance(item, dict | list):
                stack.append(item)
            elif key == "image_url":
                digest = parse_blob_ref(item)
                data = sink.get(digest) if digest else None
                if data is not None:
                    current[key] = data.decode("utf-8", "surrogatepass")


def resolve_blob_refs(entry: dict[str, Any], sink: BlobSink, *, image_urls: bool = True) -> None:
    """Put blob bytes back where omp resolves them on load (in place, §7.5 step 6).

    Only ``message.content`` and ``custom_message.content`` image blocks and ``image_url`` strings
    are resolved, as in omp; a missing blob leaves the reference in place.
    """
    if entry.get("type") == "message" and isinstance(entry.get("message"), dict):
        _resolve_content(entry["message"].get("content"), sink)
    elif entry.get("type") == "custom_message":
        _resolve_content(entry.get("content"), sink)
    if image_urls:
        _resolve_image_urls(entry, sink)


#: Whether an OpenAI Responses replay is kept in memory on load, given whether the file starts with
#: omp 18's title slot: the opening dialect decides (``Dialect.keeps_openai_replay``; *auto* picks
#: the dialect by the slot, so the store asks only once it has read the file's first line).
KeepReplay = Callable[[bool], bool]


def drop_replay(_has_slot: bool) -> bool:
    """omp 13.19's rule (and the default of readers without a dialect): drop every replay."""
    return False


def sanitize_openai_replay(entry: dict[str, Any], keep_replay: bool = False) -> bool:
    """Drop OpenAI Responses replay metadata from an assistant message in place (§6.6); returns
    whether anything was dropped.

    omp 13.19 drops the ``providerPayload`` and every thinking signature of each such message;
    omp 18 (``keep_replay``) only of a ``github-copilot`` one, keeping the others for native replay
    and remote compaction (omp18-differences.md §5.5)."""
    message = entry.get("message")
    if entry.get("type") != "message" or not isinstance(message, dict) or message.get("role") != "assistant":
        return False
    payload = message.get("providerPayload")
    if not isinstance(payload, dict) or payload.get("type") != "openaiResponsesHistory":
        return False
    if keep_replay and message.get("provider") != COPILOT_PROVIDER:
        return False
    del message["providerPayload"]
    for block in message.get("content") or ():
        if isinstance(block, dict) and block.get("type") == "thinking":
            block.pop("thinkingSignature", None)
    return True
