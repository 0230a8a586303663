"""One line ⇄ one dict, byte-compatible with omp's writer (spec §1.7), and lenient reading (§7.5).

Reading splits on ``\\n`` only (never ``str.splitlines``: U+2028 and friends are written raw inside
strings) and decodes each line on its own with orjson. Lines that are blank, malformed, not JSON
objects or torn by a crash are skipped, and every skipped line is *recorded* with its line number,
byte offset and reason so that ``check``/``repair`` can report it.

We deliberately differ from Bun's streaming parser in one way (documented in docs/durability.md):
a torn line swallows only itself, never the valid lines after it.

Writing produces exactly what JavaScript's ``JSON.stringify`` produces for the same value: compact,
UTF-8 without ``\\u`` escapes for non-ASCII, lower-case ``\\u00xx`` for control characters, lone
surrogates as ``\\udxxx`` escapes, and JavaScript number formatting (``1`` not ``1.0``).
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from omp_session.format.javascript import js_number

__all__ = [
    "BLANK",
    "BOM",
    "INVALID_UTF8",
    "MALFORMED",
    "NOT_OBJECT",
    "TORN",
    "DecodedFile",
    "LineIssue",
    "decode_line",
    "decode_lines",
    "encode_json",
    "encode_line",
    "encode_lines",
    "js_number",
]

BOM = b"\xef\xbb\xbf"

# Reasons recorded for skipped lines.
BLANK = "blank line"
MALFORMED = "malformed JSON"
NOT_OBJECT = "not a JSON object"
TORN = "incomplete last line (no final newline)"
INVALID_UTF8 = "invalid UTF-8 (decoded with replacement characters)"


@dataclass(frozen=True)
class LineIssue:
    """A line that was skipped or read with a lenient rule."""

    line: int  # 1-based line number
    offset: int  # byte offset of the first byte of the line
    reason: str
    skipped: bool = True
    preview: str = ""

    def describe(self) -> str:
        action = "skipped" if self.skipped else "read leniently"
        return f"line {self.line} (byte {self.offset}): {self.reason}; {action}"


@dataclass
class DecodedFile:
    """The JSON objects of a JSONL file in order, with what was skipped on the way."""

    records: list[dict[str, Any]] = field(default_factory=list)
    line_numbers: list[int] = field(default_factory=list)
    #: Byte offset and length (newline excluded, BOM excluded) of each record's line: a rewrite
    #: copies the lines of unchanged entries from there (store/_indexed/line_table.py).
    offsets: list[int] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    issues: list[LineIssue] = field(default_factory=list)
    has_bom: bool = False
    ends_with_newline: bool = True
    size: int = 0

    @property
    def skipped(self) -> list[LineIssue]:
        """Issues for lines that did not produce a record (blank lines excluded)."""
        return [i for i in self.issues if i.skipped and i.reason != BLANK]

    def first_value_line(self) -> int | None:
        """Line number of the first line that held a JSON value (object or not)."""
        candidates = [i.line for i in self.issues if i.reason == NOT_OBJECT]
        if self.line_numbers:
            candidates.append(self.line_numbers[0])
        return min(candidates) if candidates else None


def _reject_constant(name: str) -> Any:
    # JSON.parse rejects NaN/Infinity; so must we, or a rewrite would invent numbers.
    raise ValueError(f"invalid JSON constant {name}")


def _decode_slow(line: bytes) -> tuple[Any, bool]:
    """Fallback for lines orjson rejects that JavaScript reads (lone surrogate escapes, bad UTF-8,
    integers beyond 64 bits). Returns (value, had_invalid_utf8)."""
    try:
        text = line.decode("utf-8")
        bad_utf8 = False
    except UnicodeDecodeError:
        # Bun decodes the file with replacement characters; so do we (recorded as an issue).
        text = line.decode("utf-8", errors="replace")
        bad_utf8 = True
    try:
        return json.loads(text, parse_constant=_reject_constant), bad_utf8
    except RecursionError:  # absurdly deep nesting: unreadable, like any other malformed line
        raise ValueError("JSON nested too deeply") from None


def decode_line(line: bytes) -> Any:
    """Decode one JSON line as JavaScript would, raising ``ValueError`` when it is not JSON."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return _decode_slow(line)[0]


def _preview(line: bytes) -> str:
    return line[:80].decode("utf-8", errors="replace")


def decode_lines(data: bytes) -> DecodedFile:
    """Split ``data`` on ``\\n`` and decode every line leniently.

    >>> decode_lines(b'{"type":"session","id":"x"}\\nnot json\\n').issues[0].reason
    'malformed JSON'
    """
    result = DecodedFile(size=len(data))
    if data.startswith(BOM):
        result.has_bom = True
    result.ends_with_newline = not data or data.endswith(b"\n")
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    records, numbers, issues = result.records, result.line_numbers, result.issues
    offsets, lengths = result.offsets, result.lengths
    offset = 0
    last = len(lines) - 1
    loads = orjson.loads
    for index, line in enumerate(lines):
        line_offset = offset
        offset += len(line) + 1
        if index == 0 and result.has_bom:
            line = line[len(BOM) :]
        try:
            value = loads(line)
        except orjson.JSONDecodeError:
            if not line.strip():
                issues.append(LineIssue(index + 1, line_offset, BLANK))
                continue
            try:
                value, bad_utf8 = _decode_slow(line)
            except ValueError:
                torn = index == last and not result.ends_with_newline
                issues.append(
                    LineIssue(index + 1, line_offset, TORN if torn else MALFORMED, True, _preview(line))
                )
                continue
            if bad_utf8:
                issues.append(LineIssue(index + 1, line_offset, INVALID_UTF8, False, _preview(line)))
        if type(value) is not dict:
            issues.append(LineIssue(index + 1, line_offset, NOT_OBJECT, True, _preview(line)))
            continue
        records.append(value)
        numbers.append(index + 1)
        offsets.append(line_offset)
        lengths.append(len(line))
    if result.has_bom and numbers and numbers[0] == 1:
        offsets[0] += len(BOM)  # the line's own bytes start after the BOM
    return result


# ---------------------------------------------------------------------------------------------
# Writing

# orjson output that JavaScript would write differently: integral floats ("1.0", "-0.0"), floats
# of 1e16 and above in exponent form ("1e+16") and small floats that JavaScript still writes in
# fixed notation down to 1e-7 ("9e-6" is "0.000009"). A match inside a string only costs the slow
# path, which is exact anyway.
_JS_MISMATCH = re.compile(rb"[0-9]\.0(?:[,}\]]|$)|[0-9]e\+|[0-9]e-[1-6](?:[,}\]]|$)")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_MAX_SAFE_ORJSON_INT = 2**64 - 1


#: Codec error handler for *display* output: a lone surrogate (valid JSON, ``"\\ud83d"``, what
#: omp writes for an emoji cut in half) cannot be encoded as UTF-8 and is shown as U+FFFD
#: instead (issue 11 item 5). Files and JSON output keep it exactly, as a ``\\udxxx`` escape.
DISPLAY_ERRORS = "omp_session.display"


def _replace_surrogates(error: UnicodeError) -> tuple[str | bytes, int]:
    if isinstance(error, UnicodeEncodeError):
        # Bytes: the UTF-8 encoder accepts only ASCII text as a replacement.
        return "\ufffd".encode() * (error.end - error.start), error.end
    raise error


codecs.register_error(DISPLAY_ERRORS, _replace_surrogates)


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (which strict UTF-8 encoders refuse)."""
    return _LONE_SURROGATE.search(text) is not None


def display_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD: safe to print, render or encode."""
    return _LONE_SURROGATE.sub("\ufffd", text)


def escape_lone_surrogates(json_text: str) -> str:
    """JSON text (from ``json.dumps(..., ensure_ascii=False)``) with lone surrogates written as
    ``\\udxxx`` escapes, as JavaScript's ``JSON.stringify`` writes them: encodable and exact."""
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", json_text)


def _escape_string(text: str) -> bytes:
    # json.dumps writes control characters like JSON.stringify; lone surrogates stay raw in its
    # output, so we escape them the way JavaScript does.
    return escape_lone_surrogates(json.dumps(text, ensure_ascii=False)).encode("utf-8")


def _to_js_compatible(value: Any) -> Any:
    """Replace values orjson would format differently from JavaScript by raw JSON fragments."""
    if isinstance(value, dict):
        if any(isinstance(key, str) and _LONE_SURROGATE.search(key) for key in value):
            # orjson cannot write such a key: write this object by hand, escaped like JavaScript.
            members = (_escape_string(str(key)) + b":" + encode_json(item) for key, item in value.items())
            return orjson.Fragment(b"{" + b",".join(members) + b"}")
        return {key: _to_js_compatible(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_to_js_compatible(item) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, float):
        return orjson.Fragment(js_number(value).encode())
    if isinstance(value, int) and not -_MAX_SAFE_ORJSON_INT <= value <= _MAX_SAFE_ORJSON_INT:
        return orjson.Fragment(str(value).encode())
    if isinstance(value, str) and _LONE_SURROGATE.search(value):
        return orjson.Fragment(_escape_string(value))
    return value


def encode_json(value: Any, *, floats: bool = True) -> bytes:
    """Compact JSON bytes identical to ``JSON.stringify(value)`` (no trailing newline).

    ``floats=False``: the caller knows ``value`` holds no float, so the scan for numbers orjson
    writes differently from JavaScript is skipped (the result is the same)."""
    try:
        out = orjson.dumps(value)
        # Substring scans are many times faster than the regex, which most lines never need;
        # ``find``, not ``in``: ``bytes in bytes`` first tries the needle as an integer and
        # raises and clears a TypeError every time (about a third of each scan's cost).
        if (
            floats
            and (out.find(b".0") >= 0 or out.find(b"e+") >= 0 or out.find(b"e-") >= 0)
            and _JS_MISMATCH.search(out)
        ):
            return orjson.dumps(_to_js_compatible(value))
        return out
    except (TypeError, RecursionError):
        try:
            return orjson.dumps(_to_js_compatible(value))
        except (TypeError, RecursionError):
            # Nested deeper than orjson writes (255 levels) or Python recurses: any depth we
            # could read must be writable again (issue 11 item 6).
            return _encode_iteratively(value)


_END = object()


def _scalar_json(value: Any) -> str:
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return js_number(value)
    if isinstance(value, str):
        return escape_lone_surrogates(json.dumps(value, ensure_ascii=False))
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")


def _encode_iteratively(value: Any) -> bytes:
    """:func:`encode_json` without recursion, for values of any depth (slower; rarely needed)."""
    out: list[str] = []
    # Each open container: its remaining items, its closing bracket, whether it is an object,
    # and whether the next item is its first.
    stack: list[tuple[Iterator[Any], str, bool, list[bool]]] = []

    def start(item: Any) -> None:
        if isinstance(item, dict):
            out.append("{")
            stack.append((iter(item.items()), "}", True, [True]))
        elif isinstance(item, list | tuple):
            out.append("[")
            stack.append((iter(item), "]", False, [True]))
        else:
            out.append(_scalar_json(item))

    start(value)
    while stack:
        items, closing, is_object, first = stack[-1]
        item: Any = next(items, _END)
        if item is _END:
            out.append(closing)
            stack.pop()
            continue
        if not first[0]:
            out.append(",")
        first[0] = False
        if is_object:
            name, member = item
            out.append(_scalar_json(str(name)) + ":")
            start(member)
        else:
            start(item)
    return "".join(out).encode("utf-8")


def encode_line(value: Any) -> bytes:
    """One JSONL line: :func:`encode_json` plus ``\\n``."""
    return encode_json(value) + b"\n"


def encode_lines(values: Iterable[Any]) -> bytes:
    """Several JSONL lines joined, each ending in ``\\n``."""
    return b"".join(encode_line(value) for value in values)
