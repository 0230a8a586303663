"""The cold listing's summary of one session file, without building every entry as a dict.

:func:`summarize_bytes` returns exactly what ``summarize_records(path, decode_lines(data).records,
...)`` returns (``listing.py``, the reference: omp 13.19's listing, spec §6.9), but decodes each line
with msgspec into a few small typed records holding only what a summary reads: the entry type, its
timestamp, a compaction's short summary, and for a message its role, the text blocks of its content
and its usage cost. Everything else on the line is validated and skipped, never built.

Exactness, and why it holds (``tests/perf/test_listing_scan.py`` checks it on random and odd files):

* A line msgspec accepts is JSON that ``decode_line`` accepts too, with the same value in the fields
  read (both take the last of duplicate keys). Where the two could disagree msgspec refuses and the
  line takes the exact path (``decode_line``, then the same rules on the dict): invalid UTF-8 and
  lone surrogates in strings, numbers out of range, nesting too deep, and any field of another shape
  than the typed one (content that is neither a string nor a list of objects, a usage that is not an
  object, ...). Integers beyond 64 bits, which orjson reads as floats, take the exact path as well.
* The header (and an omp 18 title slot before it) is always decoded exactly.
* A file whose newest canonical timestamp is shaped like a time but is not one (a 13th month) is
  summarised by the reference itself: that rule needs every record's time, and it never happens in
  files omp writes.

Internal module (used by :mod:`omp_session.tools.listing`); not part of the public API.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import msgspec

from omp_session.format.codec import BOM, decode_line, decode_lines
from omp_session.format.header import is_session_header
from omp_session.format.ids import iso_to_ms, ms_to_datetime
from omp_session.format.title_slot import slot_from_value
from omp_session.tools.content import message_text
from omp_session.tools.entry_kinds import (
    FOREIGN_SESSION_IMPORT,
    IMPORT_BOOKKEEPING_TYPES,
    is_import_bookkeeping,
)
from omp_session.tools.listing_summary import (
    SessionInfo,
    conversation_stamps,
    created_ms,
    fold_slot_record,
    is_canonical_time,
    summarize_records,
)
from omp_session.tools.summary import is_prompt

__all__ = ["summarize_bytes"]


class _Cost(msgspec.Struct, gc=False):
    total: Any = None


class _Usage(msgspec.Struct, gc=False):
    cost: _Cost | None = None


class _Block(msgspec.Struct, gc=False):
    type: Any = None
    text: Any = None


class _Message(msgspec.Struct, gc=False):
    role: Any = None
    content: str | list[_Block] | None = None
    usage: _Usage | None = None
    toolName: Any = None
    details: msgspec.Raw = msgspec.Raw(b"")  # read only for a task result


class _Entry(msgspec.Struct, gc=False):
    type: Any = None
    customType: Any = None
    timestamp: Any = None
    shortSummary: Any = None
    message: _Message | None = None
    usage: _Usage | None = None  # omp 18's model_usage entries


_DECODE_ENTRY = msgspec.json.Decoder(_Entry).decode
#: orjson reads integers up to 64 bits as integers and larger ones as floats; msgspec keeps them all
#: as integers. Only a cost total is read as a number, and one this large takes the exact path.
_EXACT_INT_LIMIT = 2**63


class _NotExact(Exception):
    """This line must take the exact path."""


#: What msgspec raises for a line it will not decode the reference's way; the line then takes the
#: exact path. (RecursionError: msgspec refuses nesting deeper than its own limit, which is below
#: orjson's 1,024 levels, so such a line is still decoded exactly.)
_REFUSED = (msgspec.DecodeError, _NotExact, RecursionError, ValueError)


def _cost_of_usage(usage: Any) -> Any:
    """What one usage adds to the cost (``UsageStatistics.add_usage``), ``None`` when not a usage."""
    if not isinstance(usage, dict):
        return None
    cost = usage.get("cost")
    if not isinstance(cost, dict):
        return None
    total = cost.get("total")
    return (total if isinstance(total, int | float) and not isinstance(total, bool) else None) or 0


class _Summary:
    """What ``summarize_records`` accumulates over the entries after the header."""

    __slots__ = (
        "count",
        "first",
        "has_side",
        "import_stamps",
        "imported",
        "main_cost",
        "prompt",
        "side_cost",
        "stamps",
        "texts",
        "title",
        "titled",
    )

    def __init__(self, header: dict[str, Any]) -> None:
        title = header.get("title")
        self.title: str | None = title if isinstance(title, str) else None
        self.titled = title is not None  # a compaction's short summary is used only without one
        self.count = 0
        self.first: str | None = None
        self.prompt: str | None = None
        self.texts: list[str] = []
        self.stamps: list[Any] = []  # the timestamps (``iso_to_ms`` ignores all but strings)
        self.main_cost: Any = 0
        self.side_cost: Any = 0
        self.has_side = False
        #: Whether an import marker was seen (then the conversation's first time is its creation),
        #: and the markers' times: what the import itself wrote (a title change) is dated so.
        self.imported = False
        self.import_stamps: set[Any] = set()

    def marked(self, stamp: Any) -> None:
        """An import marker, written at ``stamp``."""
        self.imported = True
        if isinstance(stamp, str):
            self.import_stamps.add(stamp)

    def conversation_stamps(self) -> list[Any]:
        """The timestamps of the conversation: all of them, less (in an imported session) those
        the import wrote (:func:`~omp_session.tools.listing_summary.conversation_stamps`)."""
        return conversation_stamps(self.stamps, self.import_stamps)

    def message(self, role: Any, text: str) -> None:
        self.count += 1
        if role == "user":
            if self.first is None:
                self.first = text
            if self.prompt is None and is_prompt(text):
                self.prompt = text
        if text and (role == "user" or role == "assistant"):
            self.texts.append(text)

    def add_entry(self, entry: dict[str, Any]) -> None:
        """One decoded entry, by the reference's rules."""
        kind = entry.get("type")
        if kind == "custom" and is_import_bookkeeping(entry):
            if entry.get("customType") == FOREIGN_SESSION_IMPORT:
                self.marked(entry.get("timestamp"))
            return  # the import's own times are not the conversation's (see summarize_records)
        stamp = entry.get("timestamp")
        if type(stamp) is str:
            self.stamps.append(stamp)
        if kind == "compaction" and not self.titled and isinstance(entry.get("shortSummary"), str):
            self.title = entry["shortSummary"]
        if kind == "model_usage":
            self._side(entry.get("usage"))
            return
        message = entry.get("message")
        if kind != "message" or not isinstance(message, dict):
            return
        role = message.get("role")
        self.message(role, message_text(message) if role == "user" or role == "assistant" else "")
        if role == "assistant":
            self._main(message.get("usage"))
        elif role == "toolResult" and message.get("toolName") == "task":
            details = message.get("details")
            if isinstance(details, dict):
                self._main(details.get("usage"))

    def add_fast(self, entry: _Entry) -> None:
        """One entry decoded by msgspec (raises before changing anything when it must take the
        exact path)."""
        kind = entry.type
        if kind == "message":
            message = entry.message
            if message is None:
                stamp = entry.timestamp
                if type(stamp) is str:
                    self.stamps.append(stamp)
                return
            role = message.role
            details = None
            if role == "assistant":
                cost = message.usage.cost if message.usage is not None else None
                total = cost.total if cost is not None else None
                if type(total) is int and not -_EXACT_INT_LIMIT <= total < _EXACT_INT_LIMIT:
                    raise _NotExact
                if cost is not None:
                    self.main_cost += (total if type(total) is int or type(total) is float else None) or 0
            elif role == "toolResult" and message.toolName == "task" and message.details:
                details = decode_line(bytes(message.details))
                if isinstance(details, dict):
                    self._main(details.get("usage"))
            stamp = entry.timestamp
            if type(stamp) is str:
                self.stamps.append(stamp)
            self.message(role, _text(message.content) if role == "user" or role == "assistant" else "")
            return
        if kind == "custom" and entry.customType in IMPORT_BOOKKEEPING_TYPES:
            if entry.customType == FOREIGN_SESSION_IMPORT:
                self.marked(entry.timestamp)
            return
        usage = entry.usage if kind == "model_usage" else None
        total = usage.cost.total if usage is not None and usage.cost is not None else None
        if type(total) is int and not -_EXACT_INT_LIMIT <= total < _EXACT_INT_LIMIT:
            raise _NotExact
        stamp = entry.timestamp
        if type(stamp) is str:
            self.stamps.append(stamp)
        if kind == "compaction" and not self.titled and isinstance(entry.shortSummary, str):
            self.title = entry.shortSummary
        if usage is not None:
            self.has_side = True
            if usage.cost is not None:
                self.side_cost += (total if type(total) is int or type(total) is float else None) or 0

    def add_all(self, entries: list[_Entry]) -> None:
        """Every entry of a file that msgspec decoded whole, in a few passes (what the per-line
        methods do, without a call per entry); raises :class:`_NotExact` when a line needs the
        exact path (then this summary is dropped)."""
        kinds = [entry.type for entry in entries]
        if "custom" in kinds and any(
            entry.type == "custom" and entry.customType in IMPORT_BOOKKEEPING_TYPES for entry in entries
        ):
            for entry in entries:
                if entry.type == "custom" and entry.customType == FOREIGN_SESSION_IMPORT:
                    self.marked(entry.timestamp)
            entries = [
                e for e in entries if e.type != "custom" or e.customType not in IMPORT_BOOKKEEPING_TYPES
            ]
            kinds = [entry.type for entry in entries]
        self.stamps = [entry.timestamp for entry in entries]  # (not only strings: see _newest_ms)
        if not self.titled and "compaction" in kinds:
            shorts = [
                e.shortSummary for e in entries if e.type == "compaction" and type(e.shortSummary) is str
            ]
            if shorts:
                self.title = shorts[-1]
        messages = [
            entry.message for entry in entries if entry.type == "message" and entry.message is not None
        ]
        self.count += len(messages)
        texts, main_cost = self.texts, self.main_cost
        for message in messages:
            role = message.role
            if role == "assistant":
                usage = message.usage
                if usage is not None and usage.cost is not None:
                    total = usage.cost.total
                    if type(total) is int and not -_EXACT_INT_LIMIT <= total < _EXACT_INT_LIMIT:
                        raise _NotExact
                    main_cost += (total if type(total) is int or type(total) is float else None) or 0
                content = message.content
                if isinstance(content, str):
                    if content:
                        texts.append(content)
                elif content:
                    text = " ".join([b.text for b in content if b.type == "text" and type(b.text) is str])
                    if text:
                        texts.append(text)
            elif role == "user":
                text = _text(message.content)
                if self.first is None:
                    self.first = text
                if self.prompt is None and is_prompt(text):
                    self.prompt = text
                if text:
                    texts.append(text)
            elif role == "toolResult" and message.toolName == "task" and message.details:
                details = decode_line(bytes(message.details))
                cost = _cost_of_usage(details.get("usage")) if isinstance(details, dict) else None
                if cost is not None:
                    main_cost += cost
        self.main_cost = main_cost
        if "model_usage" in kinds:
            for entry in entries:
                if entry.type == "model_usage" and entry.usage is not None:
                    self._side_fast(entry.usage)

    def _side_fast(self, usage: _Usage) -> None:
        total = usage.cost.total if usage.cost is not None else None
        if type(total) is int and not -_EXACT_INT_LIMIT <= total < _EXACT_INT_LIMIT:
            raise _NotExact
        self.has_side = True
        if usage.cost is not None:
            self.side_cost += (total if type(total) is int or type(total) is float else None) or 0

    def _main(self, usage: Any) -> None:
        cost = _cost_of_usage(usage)
        if cost is not None:
            self.main_cost += cost

    def _side(self, usage: Any) -> None:
        if usage is None:
            return
        self.has_side = True  # any usage value, even one that is not an object (usage.py)
        cost = _cost_of_usage(usage)
        if cost is not None:
            self.side_cost += cost


def _text(content: str | list[_Block] | None) -> str:
    """``message_text`` of a message's typed content."""
    if isinstance(content, str):
        return content
    if not content:
        return ""
    return " ".join([block.text for block in content if block.type == "text" and type(block.text) is str])


#: Where ``CANONICAL_TIME`` has a fixed character, and where it has a digit (``\\d``: any Unicode
#: decimal digit, as ``str.isdecimal`` tests).
_FIXED = ((4, "-"), (7, "-"), (10, "T"), (13, ":"), (16, ":"), (19, "."), (23, "Z"))
_DIGITS = (0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, 20, 21, 22)


def _all_canonical(stamps: list[str]) -> bool:
    """Every stamp matches ``CANONICAL_TIME``: checked column by column over the stamps joined
    (each 24 characters long, so character ``i`` of every stamp is ``joined[i::25]``)."""
    count = len(stamps)
    joined = "\n".join(stamps)
    if len(joined) != 25 * count - 1 or min(map(len, stamps)) != 24:
        return False
    if any(joined[at::25] != char * count for at, char in _FIXED):
        return False
    return "".join([joined[at::25] for at in _DIGITS]).isdecimal()


def _newest_ms(stamps: list[Any]) -> tuple[bool, int | None]:
    """``(needs the reference, newest time in ms)`` by ``summarize_records``' rule: canonical times
    compare as text, the newest is parsed once; any other string is parsed on its own."""
    try:
        canonical = bool(stamps) and _all_canonical(stamps)
    except TypeError:  # a timestamp that is not a string (``iso_to_ms`` ignores those)
        stamps = [stamp for stamp in stamps if type(stamp) is str]
        canonical = bool(stamps) and _all_canonical(stamps)
    if not stamps:
        return False, None
    if canonical:
        newest = iso_to_ms(max(stamps))
        return newest is None, newest
    newest_canonical: str | None = None
    newest_ms: int | None = None
    for stamp in stamps:
        if is_canonical_time(stamp):
            if newest_canonical is None or stamp > newest_canonical:
                newest_canonical = stamp
        elif (ms := iso_to_ms(stamp)) is not None and (newest_ms is None or ms > newest_ms):
            newest_ms = ms
    if newest_canonical is None:
        return False, newest_ms
    canonical_ms = iso_to_ms(newest_canonical)
    if canonical_ms is None:
        return True, None
    return False, canonical_ms if newest_ms is None or canonical_ms > newest_ms else newest_ms


def _line_by_line(header: dict[str, Any], body: list[bytes]) -> _Summary:
    """A file with a line msgspec refuses (blank, torn, odd): each line on its own, those lines
    decoded exactly."""
    summary = _Summary(header)
    decode = _DECODE_ENTRY
    for line in body:
        try:
            summary.add_fast(decode(line))
        except _REFUSED:
            record = _exact(line)
            if record is not None:
                summary.add_entry(record)
    return summary


def _lines(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if lines and data.startswith(BOM):
        lines[0] = lines[0][len(BOM) :]
    return lines


def _exact(line: bytes) -> dict[str, Any] | None:
    """One line as ``decode_lines`` keeps it: a JSON object, else ``None`` (skipped)."""
    try:
        value = decode_line(line)
    except ValueError:
        return None
    return value if type(value) is dict else None


def summarize_bytes(path: Path | str, data: bytes, mtime: float, size: int = 0) -> SessionInfo | None:
    """``summarize_records(path, decode_lines(data).records, mtime, size)``, faster."""
    lines = _lines(data)
    index, head = 0, list[dict[str, Any]]()
    while index < len(lines) and len(head) < 2:
        record = _exact(lines[index])
        index += 1
        if record is not None:
            head.append(record)
            if len(head) == 1 and slot_from_value(record) is None:
                break
    folded = fold_slot_record(head)
    if not folded or not is_session_header(folded[0]) or not folded[0].get("id"):
        return None
    header = folded[0]
    summary = _Summary(header)
    body = lines[index:]
    try:
        decode = _DECODE_ENTRY
        summary.add_all([decode(line) for line in body if line])
    except _REFUSED:
        summary = _line_by_line(header, body)
    stamps = summary.conversation_stamps()
    needs_reference, newest = _newest_ms(stamps)
    if needs_reference:
        return summarize_records(path, decode_lines(data).records, mtime, size)
    parent = header.get("parentSession")
    modified = datetime.fromtimestamp(mtime, timezone.utc)
    cost = summary.main_cost + summary.side_cost if summary.has_side else summary.main_cost
    created = created_ms(header, stamps if summary.imported else ())
    return SessionInfo(
        path=os.fspath(path),
        id=header["id"],
        cwd=header["cwd"] if isinstance(header.get("cwd"), str) else "",
        title=summary.title,
        parent_session_path=parent if isinstance(parent, str) else None,
        created=ms_to_datetime(created),
        modified=modified,
        message_count=summary.count,
        first_message=summary.first or "(no messages)",
        all_messages_text=" ".join(summary.texts),
        size=size,
        last_activity=ms_to_datetime(newest) or modified,
        cost=cost,
        first_prompt=summary.prompt or summary.first or "",
    )
