"""Listing sessions (spec §6.9): ``SessionInfo`` for every valid session file of a directory."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from omp_session.errors import SessionError
from omp_session.format.codec import BOM, _decode_slow, decode_lines
from omp_session.format.ids import iso_to_ms
from omp_session.store import SessionStorage
from omp_session.store.configured import configured_storage
from omp_session.store.loading import is_session_header, read_header
from omp_session.store.paths import sessions_root
from omp_session.tools.listing_cache import FileKey, ListingCache, Row

_LISTED = "_listed_file"  # where a listed info keeps the key of the file version it summarises


@dataclass
class SessionInfo:
    """What a session list shows. ``modified`` is the file's mtime, as in omp 13.19.0."""

    path: str
    id: str
    cwd: str
    title: str | None
    parent_session_path: str | None
    created: datetime | None
    modified: datetime
    message_count: int
    first_message: str
    all_messages_text: str

    def to_dict(self) -> dict[str, Any]:
        """omp's camelCase JSON shape (dates as ISO strings; absent optional keys omitted)."""
        out: dict[str, Any] = {"path": self.path, "id": self.id, "cwd": self.cwd}
        if self.title is not None:
            out["title"] = self.title
        if self.parent_session_path is not None:
            out["parentSessionPath"] = self.parent_session_path
        out["created"] = _iso(self.created)
        out["modified"] = _iso(self.modified)
        out["messageCount"] = self.message_count
        out["firstMessage"] = self.first_message
        out["allMessagesText"] = self.all_messages_text
        return out

    if not TYPE_CHECKING:  # (hidden from type checkers: it would make every attribute "exist")

        def __getattr__(self, name: str) -> Any:
            # Only reached for an attribute that is not set: the fields a listing leaves to be
            # read from the file on first use (message_count, all_messages_text; _listed_info).
            listed = self.__dict__.get(_LISTED)
            if listed is None or name not in ("message_count", "all_messages_text"):
                raise AttributeError(name)
            _load_details(self, listed)
            return self.__dict__[name]


def _iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return (
        moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    )


def message_text(message: dict[str, Any]) -> str:
    """String content, or the text blocks joined by a single space."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return " ".join(t for t in texts if isinstance(t, str))
    return ""


def summarize_records(path: Path, records: list[dict[str, Any]], mtime: float) -> SessionInfo | None:
    """A ``SessionInfo`` from decoded records (header first), or ``None`` if not a session."""
    if not records or not is_session_header(records[0]) or not records[0].get("id"):
        return None
    header = records[0]
    title = header.get("title") if isinstance(header.get("title"), str) else None
    count, first, texts = 0, None, []
    for record in records[1:]:
        kind = record.get("type")
        if (
            kind == "compaction"
            and header.get("title") is None
            and isinstance(record.get("shortSummary"), str)
        ):
            title = record["shortSummary"]
        if kind != "message" or not isinstance(record.get("message"), dict):
            continue
        count += 1
        message = record["message"]
        if message.get("role") not in ("user", "assistant"):
            continue
        text = message_text(message)
        if message.get("role") == "user" and first is None:
            first = text
        if text:
            texts.append(text)
    created_ms = iso_to_ms(header.get("timestamp"))
    parent = header.get("parentSession")
    return SessionInfo(
        path=os.fspath(path),
        id=header["id"],
        cwd=header["cwd"] if isinstance(header.get("cwd"), str) else "",
        title=title,
        parent_session_path=parent if isinstance(parent, str) else None,
        created=datetime.fromtimestamp(created_ms / 1000, timezone.utc) if created_ms is not None else None,
        modified=datetime.fromtimestamp(mtime, timezone.utc),
        message_count=count,
        first_message=first or "(no messages)",
        all_messages_text=" ".join(texts),
    )


def session_info(path: Path) -> SessionInfo | None:
    """Read one file completely and summarise it; ``None`` for anything that is not a session."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
            mtime = os.fstat(handle.fileno()).st_mtime
    except OSError:
        return None
    return summarize_records(path, decode_lines(data).records, mtime)


def _sorted_newest_first(infos: list[SessionInfo]) -> list[SessionInfo]:
    return sorted(infos, key=lambda info: info.modified, reverse=True)


# -- fast listing: cheap summaries, a metadata cache, and the rest on demand -------------------------


def _listed_info(path: str, key: tuple[int, ...], mtime: float, row: Sequence[Any]) -> SessionInfo:
    """A ``SessionInfo`` from a summary ``row`` (the fields of a :class:`Row` after ``valid``);
    without a counted ``message_count`` and without ``all_messages_text``: those are read from
    the file when first used (see ``SessionInfo.__getattr__``)."""
    info = SessionInfo.__new__(SessionInfo)
    session_id, cwd, title, parent, created, first_message, message_count = row
    info.path, info.id, info.cwd, info.title = path, session_id, cwd, title
    info.parent_session_path = parent
    info.created = datetime.fromtimestamp(created / 1000, timezone.utc) if created is not None else None
    info.modified = datetime.fromtimestamp(mtime, timezone.utc)
    info.first_message = first_message
    if message_count is not None:
        info.message_count = message_count
    info.__dict__[_LISTED] = FileKey(*key)
    return info


def _load_details(info: SessionInfo, listed: FileKey) -> None:
    cache = ListingCache()
    try:
        text = cache.text(info.path, listed) if "message_count" in info.__dict__ else None
        if text is None:
            count, text, key = _details(info.path)
            info.__dict__.setdefault("message_count", count)
            if key == listed:  # still the file that was listed
                cache.store_details(info.path, key, count, text)
        info.__dict__["all_messages_text"] = text
    finally:
        cache.close()


def _details(path: str) -> tuple[int, str, FileKey | None]:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
            stat = os.fstat(handle.fileno())
    except OSError:
        return 0, "", None  # gone since it was listed
    info = summarize_records(Path(path), decode_lines(data).records, stat.st_mtime)
    return (info.message_count, info.all_messages_text, FileKey.of(stat)) if info else (0, "", None)


def _record(line: bytes) -> dict[str, Any] | None:
    # One line as decode_lines reads it: the object, or None for a line it skips.
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        if not line.strip():
            return None
        try:
            value = _decode_slow(line)[0]
        except ValueError:
            return None
    return value if type(value) is dict else None


_NOT_A_SESSION = Row(False, "", "", None, None, None, "", None)
_ESCAPE = b"\\u"  # a \u escape can spell any word, so lines holding one are always parsed


def _first_user_text(lines: list[bytes]) -> str | None:
    for line in lines:
        if b'"user"' in line or _ESCAPE in line:  # a user message must spell its role
            record = _record(line)
            message = record.get("message") if record is not None else None
            is_message = record is not None and record.get("type") == "message"
            if is_message and isinstance(message, dict) and message.get("role") == "user":
                return message_text(message)
    return None


def _compaction_title(lines: list[bytes]) -> str | None:
    for line in reversed(lines):  # the last compaction with a short summary wins
        if b"compaction" in line or _ESCAPE in line:
            record = _record(line)
            summary = record.get("shortSummary") if record is not None else None
            if record and record.get("type") == "compaction" and isinstance(summary, str):
                return summary
    return None


def _cheap_row(data: bytes) -> Row:
    """What ``summarize_records`` gives, without the message count and text (which need every line
    parsed): the header, the first user message and the title, from as few lines as possible."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if data.startswith(BOM):
        lines[0] = lines[0][len(BOM) :]
    start, header = next(
        ((i, r) for i, line in enumerate(lines) if (r := _record(line)) is not None), (0, None)
    )
    if header is None or not is_session_header(header) or not header.get("id"):
        return _NOT_A_SESSION
    rest = lines[start + 1 :]
    title = header.get("title") if isinstance(header.get("title"), str) else None
    if header.get("title") is None:
        title = _compaction_title(rest)
    parent = header.get("parentSession")
    return Row(
        valid=True,
        id=header["id"],
        cwd=header["cwd"] if isinstance(header.get("cwd"), str) else "",
        title=title,
        parent=parent if isinstance(parent, str) else None,
        created_ms=iso_to_ms(header.get("timestamp")),
        first_message=_first_user_text(rest) or "(no messages)",
        message_count=None,
    )


def _read_row(path: str) -> tuple[FileKey, float, Row] | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
            stat = os.fstat(handle.fileno())
    except OSError:
        return None
    return FileKey.of(stat), stat.st_mtime, _cheap_row(data)


def _list_directory(
    directory: Path, cached: dict[str, tuple[Any, ...]], fresh: list[tuple[str, FileKey, Row]]
) -> list[SessionInfo]:
    """Infos of the ``*.jsonl`` files directly in ``directory``; new summaries go to ``fresh``."""
    prefix = os.fspath(directory / "x")[:-1]
    infos: list[SessionInfo] = []
    try:
        with os.scandir(directory) as found:
            names = [e.name for e in found if len(e.name) > 6 and e.name.endswith(".jsonl") and e.is_file()]
    except OSError:
        return []
    for name in names:
        path = prefix + name
        try:
            stat = os.stat(path)
        except OSError:
            continue
        key = (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino)
        hit = cached.get(path)
        if hit is not None and hit[:4] == key:  # (size, mtime_ns, ctime_ns, inode, valid, fields...)
            if hit[4]:
                infos.append(_listed_info(path, key, stat.st_mtime, hit[5:]))
            continue
        read = _read_row(path)
        if read is None:
            continue
        file_key, mtime, row = read
        fresh.append((path, file_key, row))
        if row.valid:
            infos.append(_listed_info(path, file_key, mtime, row[1:]))
    return infos


def list_sessions(directory: Path | str, *, storage: SessionStorage | None = None) -> list[SessionInfo]:
    """Every valid ``*.jsonl`` directly inside ``directory``, newest first (no side effects).

    Summaries of files come from the metadata cache while a file is unchanged
    (``listing_cache.py``); ``message_count`` and ``all_messages_text`` of a file not seen before
    are read when first used. Sessions of another ``storage`` (a database) are read in full.
    """
    storage = storage if storage is not None else configured_storage()
    if storage is not None:
        return _list_stored(storage, [Path(directory)])
    return _list([Path(directory)], Path(directory))


def _list_stored(storage: SessionStorage, directories: list[Path]) -> list[SessionInfo]:
    infos: list[SessionInfo] = []
    for directory in directories:
        for stored in storage.list_sessions(directory):
            try:
                data = storage.read_session(stored.path)
            except SessionError:
                continue  # removed since it was listed
            info = summarize_records(stored.path, decode_lines(data).records, stored.mtime)
            if info is not None:
                infos.append(info)
    return _sorted_newest_first(infos)


def _list(directories: list[Path], under: Path) -> list[SessionInfo]:
    cache = ListingCache()
    try:
        cached = cache.rows(os.fspath(under))
        fresh: list[tuple[str, FileKey, Row]] = []
        infos = [info for directory in directories for info in _list_directory(directory, cached, fresh)]
        cache.store(fresh)
    finally:
        cache.close()
    return _sorted_newest_first(infos)


def list_all_sessions(
    root: Path | str | None = None, *, storage: SessionStorage | None = None
) -> list[SessionInfo]:
    """Sessions of every project directory under the sessions root (XDG-aware, unlike omp §9 #16).

    Only project directories are scanned, not sub-agent sessions inside artifact directories.
    """
    base = Path(root) if root is not None else sessions_root()
    storage = storage if storage is not None else configured_storage()
    if storage is not None:
        return _list_stored(storage, storage.list_directories(base))
    try:
        directories = [d for d in base.iterdir() if d.is_dir()]
    except OSError:
        return []
    return _list(directories, base)


def find_most_recent_session(directory: Path | str, *, storage: SessionStorage | None = None) -> Path | None:
    """The newest-mtime ``*.jsonl`` whose first line is a valid header (any length, §9 #18)."""
    storage = storage if storage is not None else configured_storage()
    if storage is not None:
        for stored in sorted(storage.list_sessions(Path(directory)), key=lambda s: s.mtime, reverse=True):
            try:
                data = storage.read_session(stored.path)
            except SessionError:
                continue
            if is_session_header(_record(data.split(b"\n", 1)[0].removeprefix(BOM))):
                return stored.path
        return None
    best: tuple[float, Path] | None = None
    try:
        candidates = [p for p in Path(directory).iterdir() if p.suffix == ".jsonl" and p.is_file()]
    except OSError:
        return None
    for path in candidates:
        try:
            mtime = path.stat().st_mtime
        except OSError:
            continue
        if (best is None or mtime > best[0]) and read_header(path) is not None:
            best = (mtime, path)
    return best[1] if best else None
