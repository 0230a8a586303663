"""A session's rows in the store catalog: how its values are packed, and how its rows are written
and deleted (the tables are in ``catalog_schema.py``).

:func:`store_session` writes what one pass built (``catalog_pass.Build``): the row of
``catalog_files`` (the storage state, the digests that tell growth from a rewrite, the packed
reduced entries and usage facts), the small row of ``catalog_sessions``, the usage groups of a
session SQL may sum (``catalog_usage``) with the store's totals of the quarter hours they touch
summed again (``catalog_usage_totals``), the digests of its copy keys (``catalog_keys``,
``catalog_pairs``) and its entries' text (``catalog_entries``, ``catalog_text``).
:func:`forget_session` deletes all of them. The reduced entries and the facts are packed as zlib
streams, one per pass (an append packs what it added after what the row held).

Internal module (used by the catalog's modules); not part of the public API.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import zlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, cast

import orjson

from omp_session.tools.catalog_pass import DIGEST_SPAN, Build, Source, TextRow, digest
from omp_session.tools.listing_cache import FileKey, ListingCache
from omp_session.tools.usage_facts import (
    CopyKey,
    GroupRow,
    RecordFields,
    entry_facts,
    group_rows,
    header_facts,
)

__all__ = [
    "DAMAGED_ROW",
    "FEW_PATHS",
    "SUMS",
    "digest64",
    "forget_session",
    "store_session",
    "unpack_facts",
    "unpack_list",
]

#: What decoding a damaged blob of a row raises (a disk error, a crashed or foreign writer): the
#: catalog is derived data, so such a row is dropped and its session read again from the store,
#: as if the catalog had never held it (never a traceback).
DAMAGED_ROW: tuple[type[Exception], ...] = (zlib.error, ValueError, TypeError, KeyError, IndexError)
#: What packing a session's row raises: a value JSON or SQLite text cannot hold, or the row's
#: packed values damaged (the session is then read afresh next time).
_UNSTORABLE: tuple[type[Exception], ...] = (orjson.JSONEncodeError, UnicodeEncodeError, *DAMAGED_ROW)
#: Text rows are written to the database in batches of this many (a large session is never held
#: in memory as text).
_BATCH = 2000
#: At most this many sessions are named in a text query (SQLite's limit of parameters is higher).
FEW_PATHS = 500
#: A packed value of more segments than this is packed afresh in one at the next append (each
#: segment is one zlib stream to start when it is read).
_MAX_SEGMENTS = 32
#: SQLite's integers (a larger one would not be stored, or would overflow a sum).
_INT_RANGE = range(-(2**62), 2**62)
#: The sums of a query of usage groups, after its keys.
SUMS = (
    "sum(input), sum(output), sum(cache_read), sum(cache_write), sum(cost), sum(turns),"
    " min(first_ms), max(last_ms)"
)


def store_session(
    cache: ListingCache, path: str, source: Source, build: Build, *, resumed: FileKey | None
) -> bool:
    """Write the pass's results; ``resumed``: the storage state of the row it continued (its new
    lines are added, unless another process has changed the row since, when nothing is
    written). False when nothing could be stored (the row is then gone too, or the database
    failed: ``cache.failed``)."""
    db = cache.database
    if db is None:
        return False
    end = build.indexed_to
    try:
        header = orjson.dumps(build.header)
        base = build.stored_entries
        added_keys, added = entry_facts(build.slim)
        added_spent = {base + at: fields for at, fields in added.items()}
        keys = build.stored_keys + added_keys
        spent = {**build.stored_spent, **added_spent}
        if build.stored_segments >= _MAX_SEGMENTS:  # many appends: packed afresh, in one
            slim = _pack(orjson.dumps(unpack_list(build.stored_slim) + build.slim))
            facts = _pack(_facts_json(keys, spent))
        else:
            slim = _pack_more(build.stored_slim, orjson.dumps(build.slim))
            facts = _pack_more(build.stored_facts, _facts_json(added_keys, added_spent))
        imports = orjson.dumps(build.imports).decode() if build.imports is not None else None
        prompt = orjson.dumps([build.prompt, build.fallback])
        path.encode()
    except _UNSTORABLE:
        forget_session(cache, path)
        return False
    owner = digest64(path)
    held = [key for key in keys if key is not None]
    new_keys = {digest64("\x00".join(key)) for key in added_keys if key is not None}
    groups = group_rows(spent.values())
    columns = header_facts(build.header or {})
    # What makes a session's spend unfit for SQL sums by itself (sharing a copy key with
    # another session is recorded in catalog_pairs: whether it matters depends on the sessions
    # a report lists).
    separate = columns[3] is not None or len(set(held)) != len(held) or not _summable(groups)
    head = digest(source.read_at(0, min(DIGEST_SPAN, end)))
    tail = digest(source.read_at(max(end - DIGEST_SPAN, 0), end - max(end - DIGEST_SPAN, 0)))
    try:
        with cache.transaction() as tx:
            if resumed is None:
                _delete_texts(tx, path)
            else:
                now = tx.execute(
                    "SELECT size, mtime_ns, ctime_ns, ino FROM catalog_files WHERE path = ?", (path,)
                ).fetchone()
                if now is None or tuple(now) != tuple(resumed):
                    return tuple(now or ()) == tuple(source.key)  # (another process stored it)
            for start in range(0, len(build.texts), _BATCH):
                _insert_texts(tx, path, build.texts[start : start + _BATCH])
            if resumed is None:
                _delete_keys(tx, owner)
            touched = _usage_buckets(tx, path)
            tx.execute("DELETE FROM catalog_usage WHERE path = ?", (path,))
            _share_keys(tx, owner, new_keys)
            if not separate:
                tx.executemany(
                    "INSERT INTO catalog_usage VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                    [(path, *group) for group in groups],
                )
                touched |= {group[0] for group in groups}
            _retotal(tx, touched)
            tx.execute(
                "INSERT OR REPLACE INTO catalog_sessions VALUES (?,?,?,?,?,?,?,?,?,NULL)",
                (
                    path,
                    owner,
                    *columns,
                    build.title(),
                    int(separate),
                    digest64(repr((*source.key, end))),
                ),
            )
            tx.execute(
                "INSERT OR REPLACE INTO catalog_files VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    path,
                    *source.key,
                    end,
                    int(build.resumable),
                    head,
                    tail,
                    header.decode(),
                    build.title(),
                    prompt,
                    slim,
                    facts,
                    imports,
                ),
            )
    except UnicodeEncodeError:
        forget_session(cache, path)  # a lone surrogate in the text: this session is read in full
        return False
    except sqlite3.Error as exc:
        cache.failed(exc)
        return False
    return True


def forget_session(cache: ListingCache, path: str) -> None:
    """Delete every row of the session ``path`` (the store's totals summed again without it)."""
    db = cache.database
    if db is None:
        return
    with contextlib.suppress(sqlite3.Error), cache.transaction() as tx:
        _delete_texts(tx, path)
        _delete_usage(tx, path)
        tx.execute("DELETE FROM catalog_files WHERE path = ?", (path,))


def _pack(data: bytes) -> bytes:
    # The reduced entries and usage facts are read whole and rarely (a session's first stats,
    # its search hits' branches), and compress about 6:1: the catalog stays small.
    return zlib.compress(data, 1)


def _pack_more(packed: bytes, data: bytes) -> bytes:
    """``packed`` (zlib streams, one after the other) with ``data`` packed after it: what a
    session that grew adds to its row, without packing again what the row held."""
    return packed + _pack(data)


def _segments(packed: bytes) -> Iterator[bytes]:
    """The data of each zlib stream of ``packed`` (a :data:`DAMAGED_ROW` error when damaged)."""
    rest = packed
    while True:
        stream = zlib.decompressobj()
        yield stream.decompress(rest)
        if not stream.eof:
            raise zlib.error("a truncated packed value")
        rest = stream.unused_data
        if not rest:
            return


def unpack_list(packed: bytes) -> list[Any]:
    """The JSON arrays packed in ``packed``'s segments, one after the other."""
    found: list[Any] = []
    for data in _segments(packed):
        found += orjson.loads(data)
    return found


def _facts_json(keys: Sequence[CopyKey | None], spent: Mapping[int, RecordFields]) -> bytes:
    return orjson.dumps({"keys": keys, "spent": [[at, *fields] for at, fields in spent.items()]})


def unpack_facts(packed: bytes) -> tuple[list[CopyKey | None], dict[int, RecordFields], int]:
    """Each entry's copy key, the record fields of those that spent (by position) and how many
    segments ``packed`` holds (each holds the facts of the entries one pass added)."""
    keys: list[CopyKey | None] = []
    spent: dict[int, RecordFields] = {}
    segments = 0
    for data in _segments(packed):
        segments += 1
        value = orjson.loads(data)
        keys += [cast("CopyKey", tuple(key)) if key is not None else None for key in value["keys"]]
        spent.update((row[0], cast("RecordFields", tuple(row[1:]))) for row in value["spent"])
    return keys, spent, segments


def digest64(text: str) -> int:
    """A 64-bit digest of ``text`` (signed, as SQLite's integers are)."""
    data = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(data, "little", signed=True)


def _summable(groups: Sequence[GroupRow]) -> bool:
    """Whether SQL sums ``groups`` as Python does: integers well inside SQLite's range, no NaN
    (SQLite stores NaN as NULL, which a sum skips)."""
    for group in groups:
        for value in group[3:9]:
            if type(value) is int:
                if value not in _INT_RANGE:
                    return False
            elif value != value:  # NaN
                return False
    return True


def _share_keys(db: sqlite3.Connection, owner: int, keys: set[int]) -> None:
    """Record ``keys`` (copy-key digests) as the session ``owner``'s, and each other session that
    holds one of them as sharing a key with it (``catalog_pairs``, both ways)."""
    if not keys:
        return
    others = [
        row[0]
        for row in db.execute(
            "SELECT DISTINCT owner FROM catalog_keys WHERE key IN (SELECT value FROM json_each(?))"
            " AND owner != ?",
            (orjson.dumps(sorted(keys)).decode(), owner),
        )
    ]
    db.executemany("INSERT OR IGNORE INTO catalog_keys VALUES (?, ?)", [(key, owner) for key in keys])
    db.executemany(
        "INSERT OR IGNORE INTO catalog_pairs VALUES (?, ?)",
        [pair for other in others for pair in ((owner, other), (other, owner))],
    )


def _usage_buckets(db: sqlite3.Connection, path: str) -> set[int | None]:
    """The quarter hours the stored usage groups of ``path`` lie in."""
    return {row[0] for row in db.execute("SELECT DISTINCT bucket FROM catalog_usage WHERE path = ?", (path,))}


def _retotal(db: sqlite3.Connection, buckets: set[int | None]) -> None:
    """Sum ``catalog_usage`` again into ``catalog_usage_totals`` for the quarter hours of
    ``buckets`` (those a session's groups left or entered): the store's totals stay the sum of
    every session's groups, each quarter hour summed as a query of all the groups sums it. A sum
    SQLite cannot make (an integer overflow) leaves a row without a model in that quarter hour,
    which makes a reader of the totals sum the groups themselves."""
    if not buckets:
        return
    dated = orjson.dumps(sorted(bucket for bucket in buckets if bucket is not None)).decode()
    chosen = ["bucket IN (SELECT value FROM json_each(?))"] + (["bucket IS NULL"] if None in buckets else [])
    where = " OR ".join(chosen)
    db.execute(f"DELETE FROM catalog_usage_totals WHERE {where}", (dated,))
    try:
        db.execute(
            f"INSERT INTO catalog_usage_totals SELECT bucket, model, recorded, {SUMS} FROM catalog_usage"
            f" WHERE {where} GROUP BY bucket, model, recorded",
            (dated,),
        )
    except sqlite3.OperationalError:  # integer overflow
        db.executemany(
            "INSERT INTO catalog_usage_totals (bucket) VALUES (?)", [(bucket,) for bucket in buckets]
        )


def _delete_keys(db: sqlite3.Connection, owner: int) -> None:
    db.execute("DELETE FROM catalog_keys WHERE owner = ?", (owner,))
    db.execute("DELETE FROM catalog_pairs WHERE a = ? OR b = ?", (owner, owner))


def _delete_usage(db: sqlite3.Connection, path: str) -> None:
    touched = _usage_buckets(db, path)
    db.execute("DELETE FROM catalog_usage WHERE path = ?", (path,))
    _retotal(db, touched)
    db.execute("DELETE FROM catalog_sessions WHERE path = ?", (path,))
    _delete_keys(db, digest64(path))


def _delete_texts(db: sqlite3.Connection, path: str) -> None:
    db.execute(
        "DELETE FROM catalog_text WHERE rowid IN (SELECT rowid FROM catalog_entries WHERE owner = ?)",
        (digest64(path),),
    )
    db.execute("DELETE FROM catalog_entries WHERE owner = ?", (digest64(path),))


def _insert_texts(db: sqlite3.Connection, path: str, rows: Sequence[TextRow]) -> None:
    # Rowids given, not assigned: two ``executemany`` per batch instead of two statements per row
    # (inside the writer's transaction, so no other writer takes the same ones).
    first = (db.execute("SELECT max(rowid) FROM catalog_entries").fetchone()[0] or 0) + 1
    owner = digest64(path)
    db.executemany(
        "INSERT INTO catalog_entries (rowid, owner, entry_id, role, timestamp, tools, model)"
        " VALUES (?,?,?,?,?,?,?)",
        [
            (rowid, owner, row.entry_id, row.role, row.timestamp, row.tools, row.model)
            for rowid, row in enumerate(rows, first)
        ],
    )
    db.executemany(
        "INSERT INTO catalog_text (rowid, text) VALUES (?, ?)",
        [(rowid, row.text) for rowid, row in enumerate(rows, first)],
    )
