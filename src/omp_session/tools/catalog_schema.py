"""The tables of the store catalog, created in the listing cache's database (one database, one
version number: ``listing_cache.SCHEMA_VERSION``).

* ``catalog_files``: one row per session, keyed by its path and trusted only for the storage state
  it was read at (size, mtime, ctime, inode; a database row has inode -1). ``indexed_to`` is the
  offset after the last complete line read, ``head``/``tail`` are digests of the first and the last
  4 KiB before it, so a session that only grew is read from there. ``slim`` holds the session's
  entries reduced to what the reports count (orjson, zlib-compressed), ``header`` its header,
  ``facts`` the usage facts of those entries precomputed (``usage_facts.entry_facts``: each copy
  key, and the record fields of the entries that spent; orjson, zlib-compressed), which is all a
  usage report reads; ``imports`` the ``[source, sourcePath]`` of each import marker line (what
  the importers' "already imported?" check reads; NULL: not known, the file is scanned). The
  index ``catalog_files_state`` covers what every refresh compares (a scan of it, not of the
  rows and their large values).
* ``catalog_sessions``: what the usage reports read of each catalogued session besides its spend
  (a small row, so that reading every session's is one quick scan): the header's id, cwd,
  timestamp and ``parentSession`` as the reports use them, the title, ``owner`` (a 64-bit digest
  of the path), and ``separate``, set when the session's spend is counted by the copy-once rule
  rather than summed in SQL: it names a parent session, holds an entry's copy key twice, or holds
  a number SQLite would not sum as Python does. ``stats`` is the session's summarised statistics
  (``stats.py``), kept by the first ``stats`` that computes them for the row's ``stamp`` (a digest
  of the storage state it was read at; a new row has none).
* ``catalog_usage``: the spend of each session not ``separate``, grouped by quarter hour, model and
  kind of cost (``usage_facts.group_rows``), which the reports sum in SQL (``catalog_usage_sums``
  covers the sum by quarter hour: read in its order, no temporary tree).
* ``catalog_usage_totals``: ``catalog_usage`` of every session summed by quarter hour, model and
  kind of cost, each quarter hour summed again whenever a session's groups in it change: what a
  report of the whole store reads instead of every session's groups.
* ``catalog_stats_totals``: the combined statistics of a ``stats`` of many sessions (copies
  counted once), kept under a digest of the sessions it listed, in order, with their ``stamp``:
  the next ``stats`` of the same unchanged sessions reads it instead of adding every session's up
  again (any session read again since changes the digest). The last few are kept (``kept``).
* ``catalog_keys``: a 64-bit digest of every entry's copy key with its session's ``owner``, and
  ``catalog_pairs``: the owners of every two sessions sharing one (both ways). A report that lists
  both counts them by the copy-once rule too; a report that lists one of them only sums it.
* ``catalog_entries`` and ``catalog_text``: one row per entry with conversation text, the same
  rowid in both, the session named by its ``owner`` (``catalog_sessions``: an integer, not the
  path on each of its entries); the text is in an FTS5 table with the trigram tokenizer
  (substring matching). ``detail=full`` is kept: SQLite 3.40's trigram tables answer phrase
  queries (every needle of more than 3 characters is one) only with it.

Internal module (used by :mod:`omp_session.tools.listing_cache` and the catalog's modules, ``catalog.py``).
"""

from __future__ import annotations

__all__ = ["CATALOG_DROP", "CATALOG_SCHEMA"]

CATALOG_SCHEMA = """
CREATE TABLE IF NOT EXISTS catalog_files (
    path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, ctime_ns INTEGER, ino INTEGER,
    indexed_to INTEGER, resumable INTEGER, head BLOB, tail BLOB,
    header BLOB, title TEXT, prompt BLOB, slim BLOB, facts BLOB, imports TEXT
);
CREATE INDEX IF NOT EXISTS catalog_files_state
    ON catalog_files(path, size, mtime_ns, ctime_ns, ino, indexed_to, resumable);
CREATE TABLE IF NOT EXISTS catalog_sessions (
    path TEXT PRIMARY KEY, owner INTEGER, session_id TEXT, project TEXT, started TEXT, parent TEXT,
    title TEXT, separate INTEGER, stamp INTEGER, stats BLOB
);
CREATE INDEX IF NOT EXISTS catalog_sessions_owner ON catalog_sessions(owner);
CREATE TABLE IF NOT EXISTS catalog_usage (
    path TEXT, bucket INTEGER, model TEXT, recorded INTEGER, input, output, cache_read, cache_write,
    cost, turns INTEGER, first_ms INTEGER, last_ms INTEGER
);
CREATE INDEX IF NOT EXISTS catalog_usage_path ON catalog_usage(path);
CREATE INDEX IF NOT EXISTS catalog_usage_sums ON catalog_usage(
    bucket, model, recorded, path, input, output, cache_read, cache_write, cost, turns, first_ms, last_ms
);
CREATE TABLE IF NOT EXISTS catalog_usage_totals (
    bucket INTEGER, model TEXT, recorded INTEGER, input, output, cache_read, cache_write, cost,
    turns INTEGER, first_ms INTEGER, last_ms INTEGER
);
CREATE INDEX IF NOT EXISTS catalog_usage_totals_bucket ON catalog_usage_totals(bucket);
CREATE TABLE IF NOT EXISTS catalog_stats_totals (listing BLOB PRIMARY KEY, kept INTEGER, total BLOB);
CREATE TABLE IF NOT EXISTS catalog_keys (
    key INTEGER, owner INTEGER, PRIMARY KEY (key, owner)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS catalog_keys_owner ON catalog_keys(owner);
CREATE TABLE IF NOT EXISTS catalog_pairs (a INTEGER, b INTEGER, PRIMARY KEY (a, b)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS catalog_entries (
    rowid INTEGER PRIMARY KEY, owner INTEGER, entry_id TEXT, role TEXT, timestamp TEXT,
    tools TEXT, model TEXT
);
CREATE INDEX IF NOT EXISTS catalog_entries_owner ON catalog_entries(owner);
CREATE VIRTUAL TABLE IF NOT EXISTS catalog_text USING fts5(text, tokenize='trigram');
"""
CATALOG_DROP = (
    "DROP TABLE IF EXISTS catalog_files; DROP TABLE IF EXISTS catalog_entries;"
    " DROP TABLE IF EXISTS catalog_text; DROP TABLE IF EXISTS catalog_usage;"
    " DROP TABLE IF EXISTS catalog_usage_totals;"
    " DROP TABLE IF EXISTS catalog_keys; DROP TABLE IF EXISTS catalog_ids;"
    " DROP TABLE IF EXISTS catalog_sessions; DROP TABLE IF EXISTS catalog_pairs;"
    " DROP TABLE IF EXISTS catalog_stats_totals;"
)
