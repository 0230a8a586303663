"""The one summary a listing shows for a session file (spec §6.9: omp 13.19's listing, plus our
own fields), computed from the file's bytes without building every entry as a dict.

:func:`summarize_bytes` decodes each line with msgspec into a few small typed records holding only
what a summary reads: the entry type, its timestamp, a compaction's short summary, and for a
message its role, the text blocks of its content and its usage cost. Everything else on the line is
validated and skipped, never built. Its rules, as they apply to one decoded entry
(:meth:`_Summary.add_entry`): the header is the first record (after an omp 18 title slot, folded
into it); import bookkeeping (``format/entries.py``) is not the conversation, and an import marker's
time is not the conversation's; the title is the header's, else the last compaction's short
summary; messages are counted, the user's and the assistant's texts (``model/message_text.py``)
collected, the first user text and the first real prompt kept; the cost is what
``UsageStatistics.reported`` counts (assistant messages, task results, omp 18's ``model_usage``);
the last activity is the newest timestamp (what omp writes, ``Date.toISOString``, compares as
text).

Exactness: it returns what the reference (``tests/store/listing_reference.py``, the rules above over
``decode_lines``) returns, which ``tests/store/test_listing_summary.py`` checks on generated, odd and
conformance files:

* A line msgspec accepts is JSON that ``decode_line`` accepts too, with the same value in the fields
  read (both take the last of duplicate keys). Where the two could disagree msgspec refuses and the
  line takes the exact path (``decode_line``, then the same rules on the dict): invalid UTF-8 and
  lone surrogates in strings, numbers out of range, nesting too deep, and any field of another shape
  than the typed one (content that is neither a string nor a list of objects, a usage that is not an
  object, ...). Integers beyond 64 bits, which orjson reads as floats, take the exact path as well.
* The header (and an omp 18 title slot before it) is always decoded exactly.

A listing reads a file's head first (:func:`read_head`: the header and the opening lines up to the
first prompt, each decoded exactly); the summary of the rest continues from what the head
summarised, from the head's offset on, while the file is the one the head was read from
(:func:`_rest`), so the bytes of the head are neither read nor decoded twice. Continued or from
byte 0, the summary is the same (``test_listing_summary.py``, on generated and odd files).

Internal module (used by :mod:`omp_session.store.listing`); not part of the public API.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from omp_session.errors import CorruptSessionError, SessionError
from omp_session.format.codec import BOM, decode_line
from omp_session.format.entries import (
    FOREIGN_SESSION_IMPORT,
    IMPORT_BOOKKEEPING_TYPES,
    is_import_bookkeeping,
)
from omp_session.format.header import is_session_header
from omp_session.format.ids import iso_to_ms, ms_to_datetime
from omp_session.format.title_slot import slot_from_value
from omp_session.model.message_text import is_prompt, message_text
from omp_session.store.listing.info import (
    FileKey,
    SessionInfo,
    conversation_stamps,
    created_ms,
    fold_slot_record,
    is_canonical_time,
)
from omp_session.store.regular import open_regular, open_regular_stat

__all__ = [
    "HEAD_BYTES",
    "TAIL_BYTES",
    "Head",
    "HeadFacts",
    "head_info",
    "read_file",
    "read_head",
    "session_info",
    "summarize_bytes",
    "summarize_head",
]


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
    """What the summary accumulates over the entries after the header."""

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

    def copy(self) -> _Summary:
        """A summary of the same entries, continued without changing this one (its lists copied)."""
        twin = object.__new__(_Summary)
        for name in _Summary.__slots__:
            setattr(twin, name, getattr(self, name))
        twin.texts, twin.stamps = list(self.texts), list(self.stamps)
        twin.import_stamps = set(self.import_stamps)
        return twin

    def marked(self, stamp: Any) -> None:
        """An import marker, written at ``stamp``."""
        self.imported = True
        if isinstance(stamp, str):
            self.import_stamps.add(stamp)

    def conversation_stamps(self) -> list[Any]:
        """The timestamps of the conversation: all of them, less (in an imported session) those
        the import wrote (:func:`~omp_session.store.listing.info.conversation_stamps`)."""
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
            return  # the import's own times are not the conversation's (issue 27 #5)
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
        self.stamps += [entry.timestamp for entry in entries]  # (not only strings: see _newest_ms)
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


def _newest_ms(stamps: list[Any]) -> int | None:
    """The newest time of ``stamps`` in ms (strings only; ``iso_to_ms`` ignores anything else).
    Canonical times compare as text and the newest is parsed once; any other string is parsed on
    its own. A newest canonical stamp that is shaped like a time but is not one (a 13th month; omp
    never writes one) makes every stamp parsed, the canonical ones included."""
    try:
        canonical = bool(stamps) and _all_canonical(stamps)
    except TypeError:  # a timestamp that is not a string
        stamps = [stamp for stamp in stamps if type(stamp) is str]
        canonical = bool(stamps) and _all_canonical(stamps)
    if not stamps:
        return None
    newest_canonical: str | None = max(stamps) if canonical else None
    newest_ms: int | None = None
    if not canonical:
        for stamp in stamps:
            if is_canonical_time(stamp):
                if newest_canonical is None or stamp > newest_canonical:
                    newest_canonical = stamp
            elif (ms := iso_to_ms(stamp)) is not None and (newest_ms is None or ms > newest_ms):
                newest_ms = ms
    if newest_canonical is None:
        return newest_ms
    canonical_ms = iso_to_ms(newest_canonical)
    if canonical_ms is None:
        return max((ms for ms in map(iso_to_ms, stamps) if ms is not None), default=None)
    return canonical_ms if newest_ms is None or canonical_ms > newest_ms else newest_ms


def _continued(start: _Summary, body: list[bytes]) -> _Summary:
    """``start`` (left as it is) continued over the lines ``body``: all of them decoded by msgspec
    in one pass when it takes every line, else line by line."""
    summary = start.copy()
    try:
        decode = _DECODE_ENTRY
        summary.add_all([decode(line) for line in body if line])
    except _REFUSED:
        summary = _line_by_line(start, body)
    return summary


def _line_by_line(start: _Summary, body: list[bytes]) -> _Summary:
    """``start`` (left as it is) continued over lines of which msgspec refuses one (blank, torn,
    odd): each line on its own, those lines decoded exactly."""
    summary = start.copy()
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
    """What a listing shows for the session file ``data`` (read at ``mtime``, ``size`` bytes),
    or ``None`` when it is not a session (no header after an optional title slot, or one without an
    id). Pure."""
    found = _summarized(data)
    return _info(path, found[0], found[1], mtime, size) if found is not None else None


def _summarized(data: bytes) -> tuple[dict[str, Any], _Summary] | None:
    """The header of the session file ``data`` and the summary of its entries, or ``None`` when
    it is not a session (:func:`summarize_bytes`)."""
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
    return header, _continued(_Summary(header), lines[index:])


def _info(
    path: Path | str, header: dict[str, Any], summary: _Summary, mtime: float, size: int
) -> SessionInfo:
    return SessionInfo(**_fields(path, header, summary, mtime, size))


def _fields(
    path: Path | str, header: dict[str, Any], summary: _Summary, mtime: float, size: int
) -> dict[str, Any]:
    """The fields of the :class:`SessionInfo` of ``summary`` (but ``status`` and
    ``assistant_turns``, which omp 13.19's listing does not have)."""
    stamps = summary.conversation_stamps()
    newest = _newest_ms(stamps)
    parent = header.get("parentSession")
    modified = datetime.fromtimestamp(mtime, timezone.utc)
    cost = summary.main_cost + summary.side_cost if summary.has_side else summary.main_cost
    created = created_ms(header, stamps if summary.imported else ())
    return {
        "path": os.fspath(path),
        "id": header["id"],
        "cwd": header["cwd"] if isinstance(header.get("cwd"), str) else "",
        "title": summary.title,
        "parent_session_path": parent if isinstance(parent, str) else None,
        "created": ms_to_datetime(created),
        "modified": modified,
        "message_count": summary.count,
        "first_message": summary.first or "(no messages)",
        "all_messages_text": " ".join(summary.texts),
        "size": size,
        "last_activity": ms_to_datetime(newest) or modified,
        "cost": cost,
        "first_prompt": summary.prompt or summary.first or "",
    }


def read_file(path: str) -> tuple[bytes, os.stat_result] | None:
    """The file's bytes and ``fstat``, or ``None``: gone, unreadable, or not a regular file."""
    try:
        with os.fdopen(open_regular(path), "rb") as handle:
            return handle.read(), os.fstat(handle.fileno())
    except (OSError, SessionError):
        return None


def session_info(path: Path | str) -> SessionInfo | None:
    """Read one file completely and summarise it; ``None`` for anything that is not a session."""
    read = read_file(os.fspath(path))
    if read is None:
        return None
    data, stat = read
    return summarize_bytes(Path(path), data, stat.st_mtime, stat.st_size)


#: The first read of a file's head: omp 18's prefix; a header longer than that is read on.
HEAD_BYTES = 4096
#: The end of a file read first for an untitled session's title (omp 18 reads as much of a tail).
TAIL_BYTES = 32_768


def _head(fd: int, head_bytes: int) -> tuple[list[dict[str, Any]], bytes, int]:
    """The first records of a file as :func:`summarize_bytes` takes them (the first JSON object
    line, and the next one when the first is a title slot), the bytes read (at least
    :data:`HEAD_BYTES`, unless the file is shorter) and where in them the line after those records
    begins."""
    data, chunk = b"", head_bytes
    head: list[dict[str, Any]] = []
    start = 0  # where the next unread line begins
    while True:
        more = _read_fully(fd, chunk)
        chunk *= 2
        data += more
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                if more:
                    break  # the line goes on: read on
                end = len(data)  # the last line, without a newline
                if end == start:
                    return head, data, start
            line = data[start:end]
            if start == 0 and data.startswith(BOM):
                line = line[len(BOM) :]
            start = end + 1
            record = _exact(line)
            if record is not None:
                head.append(record)
                if len(head) == 2 or slot_from_value(record) is None:
                    return head, data, start
            if start > len(data):
                return head, data, start


def _read_fully(fd: int, size: int) -> bytes:
    """Up to ``size`` bytes from ``fd``'s position on, fewer only at the end of the file (as a
    buffered ``read(size)`` gives them)."""
    data = os.read(fd, size)
    while 0 < len(data) < size and (more := os.read(fd, size - len(data))):
        data += more
    return data


class HeadFacts(NamedTuple):
    """What the head of a file longer than its first read says (:func:`read_head`): the fields it
    gives (``known``), the header (a file gone when its rest is read is the header alone), the
    mtime the file was read at, and where the summary of the rest continues from: the file's
    :class:`~.info.FileKey` when its head was read, the offset of the first line the head did not
    summarise (``resume``: the header's lines and the opening lines after it were), and the
    summary of those lines (``opening``, never changed: each reader of the rest continues a copy).
    Plain data, not tied to an open file: a listing may keep it."""

    known: dict[str, Any]
    header: dict[str, Any]
    mtime: float
    key: FileKey
    resume: int
    opening: _Summary


#: What :func:`read_head` found in a file: a file read whole is summarised whole (a plain info),
#: a longer one gives :class:`HeadFacts`, and ``None`` is not a session.
Head = SessionInfo | HeadFacts | None


def read_head(path: str, head_bytes: int = HEAD_BYTES) -> tuple[os.stat_result, Head, int]:
    """The head of the file at ``path`` (its first ``head_bytes``, more when the header is longer),
    the ``fstat`` taken before it was read and how many of the bytes read its fields come from (a
    bound of the memory they take: the whole head of a file read whole, else the header's lines
    and the opening lines up to the first prompt, whose texts and stamps the head's summary
    keeps). A file that short is summarised whole (:func:`summarize_bytes`); of a longer one,
    the header's fields, the size, the mtime, the title when the header has one, the first user
    message (and first prompt) when a line of the head holds it, and the summary of those lines
    that the rest continues (:class:`HeadFacts`). Raises ``OSError`` when the file cannot be read (a special
    file included). Reads only."""
    try:
        fd, stat = open_regular_stat(path)
    except CorruptSessionError as exc:
        raise OSError(str(exc)) from None
    try:  # plain reads of the descriptor: a buffered file object costs more than the read here
        head, data, start = _head(fd, head_bytes)
    finally:
        os.close(fd)
    mtime, size = stat.st_mtime, stat.st_size
    if len(data) >= size:  # the whole file was read
        return stat, summarize_bytes(path, data, mtime, len(data)), len(data)
    folded = fold_slot_record(head)
    if not folded or not is_session_header(folded[0]) or not folded[0].get("id"):
        return stat, None, 0
    header = folded[0]
    parent = header.get("parentSession")
    known: dict[str, Any] = {
        "path": path,
        "id": header["id"],
        "cwd": header["cwd"] if isinstance(header.get("cwd"), str) else "",
        "parent_session_path": parent if isinstance(parent, str) else None,
        "modified": datetime.fromtimestamp(mtime, timezone.utc),
        "size": size,
        "status": None,
        "assistant_turns": None,
    }
    title = header.get("title")
    if title is not None:  # a compaction's short summary is the title only without one
        known["title"] = title if isinstance(title, str) else None
    # The complete lines after the header, by the summary's own rules, up to the first prompt:
    # the first user message and the first prompt are what they say once a line holds them, and
    # the summary of the rest continues from there.
    opening = _Summary(header)
    resume, complete = start, data.rfind(b"\n") + 1
    while resume < complete and opening.prompt is None:
        stop = data.index(b"\n", resume)
        record = _exact(data[resume:stop])
        resume = stop + 1
        if record is not None:
            opening.add_entry(record)
    if opening.first is not None:
        known["first_message"] = opening.first or "(no messages)"
    if opening.prompt is not None:
        known["first_prompt"] = opening.prompt
    # The opening's texts and stamps are pieces of the lines before ``resume``.
    facts = HeadFacts(known, header, mtime, FileKey.of(stat), resume, opening)
    return stat, facts, resume


def head_info(head: Head, tail_bytes: int = TAIL_BYTES) -> SessionInfo | None:
    """The info of a file from what :func:`read_head` found in it: the plain info of a file read
    whole; for a longer one a partial info of the head's fields, whose other fields are read when
    first used (each such info reads them afresh): an untitled session's title from the end of
    the file (its last ``tail_bytes`` first), every other field from the summary of the rest of
    the file continued from the head's (:func:`_rest`: the file read once from where the head's
    summary stopped, or whole when it changed since). Reads nothing itself."""
    if not isinstance(head, HeadFacts):
        return head
    known = head.known
    path = known["path"]
    alone: dict[str, Callable[[], Any]] = {}
    if "title" not in known:
        alone["title"] = lambda: _last_short_summary(path, tail_bytes)
    return SessionInfo.partial(known, lambda: _rest(head), alone)


def _rest(head: HeadFacts) -> dict[str, Any]:
    """Every field of the file whose head said ``head``, read now: when the file is still the one
    the head was read from (its :class:`~.info.FileKey`), the summary continues from the head's
    (its lines after ``head.resume`` read, from there); else (changed since) the whole file is
    summarised afresh, and a file gone or no longer a session is a session of its header alone.
    The size and mtime are the head's either way. Reads only."""
    known, header, mtime = head.known, head.header, head.mtime
    path, size = known["path"], known["size"]
    summary: _Summary | None = None
    try:
        fd, stat = open_regular_stat(path)
    except (OSError, SessionError):
        fd = -1
    if fd >= 0:
        try:
            if FileKey.of(stat) == head.key:
                os.lseek(fd, head.resume, os.SEEK_SET)
                rest = _read_fully(fd, size - head.resume) if size > head.resume else b""
                if len(rest) == size - head.resume:  # (else cut short since: read afresh)
                    lines = rest.split(b"\n")
                    if lines[-1] == b"":
                        lines.pop()
                    summary = _continued(head.opening, lines)
            if summary is None:
                os.lseek(fd, 0, os.SEEK_SET)
                with os.fdopen(fd, "rb", closefd=False) as handle:  # (as read_file reads it)
                    whole = _summarized(handle.read())
                if whole is not None:
                    header, summary = whole
        except OSError:
            summary = None
        finally:
            os.close(fd)
    if summary is None:  # gone, or no longer a session: a session of its header alone
        summary = _Summary(header)
    return _fields(path, header, summary, mtime, size)


def summarize_head(
    path: str, head_bytes: int = HEAD_BYTES, tail_bytes: int = TAIL_BYTES
) -> SessionInfo | None:
    """:func:`summarize_bytes` of the file at ``path``, from its head (:func:`read_head`): the
    whole summary of a file no longer than the head, else a partial info whose other fields are
    read on first use (:func:`head_info`). ``None`` when the file is not a session; raises
    ``OSError`` when it cannot be read (a special file included). Reads only."""
    return head_info(read_head(path, head_bytes)[1], tail_bytes)


def _last_short_summary(path: str, tail_bytes: int) -> str | None:
    """The title of an untitled session: the ``shortSummary`` of its last compaction that has a
    string one (the summary's rule). Its last ``tail_bytes`` are searched first, then (when their
    complete lines hold none) the whole file. ``None`` when there is none, or the file cannot be
    read."""
    try:
        fd = open_regular(path)
    except (OSError, SessionError):
        return None
    try:
        size = os.fstat(fd).st_size
        if size > 2 * tail_bytes:
            tail = os.pread(fd, tail_bytes, size - tail_bytes)
            cut = tail.find(b"\n")  # the complete lines of the tail start after it
            found = _short_summary_from_end(tail, cut + 1) if cut >= 0 else None
            if found is not None:
                return found
        data = os.pread(fd, size, 0)
        while len(data) < size and (more := os.pread(fd, size - len(data), len(data))):
            data += more
    except OSError:
        return None
    finally:
        os.close(fd)
    return _short_summary_from_end(data, 0)


def _short_summary_from_end(data: bytes, first: int) -> str | None:
    """The ``shortSummary`` of the last compaction with a string one among the lines of ``data``
    from ``first`` on (``first`` 0: ``data`` is the whole file), decoding only the lines that can
    be a compaction: those holding ``"compaction"`` as written, or a ``\\u`` escape that could
    spell it (JSON has no other escape for its letters)."""
    end = len(data)
    # The last place of each pattern before ``end``; each is searched again only once passed, so
    # the data is scanned once per pattern.
    quoted, escape = data.rfind(b'"compaction"', first, end), data.rfind(b"\\u", first, end)
    while True:
        at = max(quoted, escape)
        if at < 0:
            return None
        start = max(data.rfind(b"\n", 0, at) + 1, first)
        stop = data.find(b"\n", at)
        line = data[start : stop if stop >= 0 else len(data)]
        if start == 0 and data.startswith(BOM):
            line = line[len(BOM) :]
        record = _exact(line)
        if record is not None and record.get("type") == "compaction":
            short = record.get("shortSummary")
            if isinstance(short, str):
                return short
        end = start
        if quoted >= start:
            quoted = data.rfind(b'"compaction"', first, end)
        if escape >= start:
            escape = data.rfind(b"\\u", first, end)
