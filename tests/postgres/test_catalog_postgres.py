"""The store catalog over a PostgreSQL store: rows are keyed by their size and ``mtime_ms``, a row
that grew is read from where the catalog stopped, and what the reports and search read from it
equals a full read of every row."""

from __future__ import annotations

from pathlib import Path

import psycopg

from omp_session import SessionManager
from omp_session.store.postgres import PostgresStorage
from omp_session.tools.catalog import Catalog
from omp_session.tools.catalog_search import search_store
from omp_session.tools.listing import session_files
from omp_session.tools.listing_cache import ListingCache
from omp_session.tools.search import compile_query, search_sessions
from omp_session.tools.usage_records import collect_records
from omp_session.tools.usage_report import VIEWS, ReportOptions, collected_report
from tests.helpers import assistant, usage


def _session(store: PostgresStorage, directory: Path, words: str) -> Path:
    session = SessionManager.create("/work/project", directory, storage=store)
    session.append_message({"role": "user", "content": f"please {words}", "timestamp": 0})
    session.append_message(assistant(f"done: {words}", usage=usage(100, 20, 0.25)))
    path = Path(str(session.get_session_file()))
    session.close()
    return path


def test_the_catalog_serves_a_database_store(pg_store: PostgresStorage, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    first = _session(pg_store, root / "-work-project", "sort the list")
    _session(pg_store, root / "-work-project", "merge the branches")
    paths = list(session_files(root, storage=pg_store))
    assert len(paths) == 2
    full = collect_records(paths, catalog=Catalog(ListingCache.disabled(), storage=pg_store))
    with Catalog(storage=pg_store) as catalog:
        assert catalog.store is pg_store
        held = collect_records(paths, catalog=catalog)
        assert catalog.sessions_read == 2 and not catalog.uncatalogued
    assert held.titles == full.titles and held.summed and not full.summed
    for view in VIEWS:
        got = collected_report(held, view, ReportOptions()).to_dict()
        assert got == collected_report(full, view, ReportOptions()).to_dict()
    assert collected_report(held, "daily", ReportOptions()).total.cost == 0.5

    # The row grows (omp appends a turn): only the new line is read.
    before = len(pg_store.read_session(first))
    with SessionManager.open(first, storage=pg_store) as writer:
        writer.append_message({"role": "user", "content": "and the merge sort", "timestamp": 3})
    with Catalog(storage=pg_store) as catalog:
        catalog.refresh(paths)
        assert catalog.sessions_read == 1
        assert catalog.bytes_read == len(pg_store.read_session(first)) - before

    pattern = compile_query("merge")
    with Catalog(storage=pg_store) as catalog:
        found = list(search_store(paths, pattern, "merge", regex=False, catalog=catalog))
    assert found == list(search_sessions(paths, pattern, storage=pg_store))
    assert {hit.path for hit in found} == {str(path) for path in paths}

    # Rewritten behind the catalog's back (same path, new content): read again in full.
    replaced = pg_store.read_session(first).replace(b"sort the list", b"SORT THE LIST")
    with psycopg.connect(pg_store.dsn, autocommit=True) as sql:
        sql.execute(
            f"UPDATE {pg_store.table} SET content = %s, mtime_ms = mtime_ms + 1000 WHERE path = %s",
            (replaced.decode(), str(first)),
        )
    pattern = compile_query("SORT THE LIST", case_sensitive=True)
    with Catalog(storage=pg_store) as catalog:
        hits = list(search_store(paths, pattern, "SORT THE LIST", regex=False, catalog=catalog))
        assert [(hit.path, hit.role) for hit in hits] == [(str(first), "user"), (str(first), "assistant")]
        assert catalog.bytes_read == len(replaced)
