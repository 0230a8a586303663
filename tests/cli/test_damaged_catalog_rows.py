"""A catalog row whose stored blobs are damaged (a disk error, a crash of another writer, a bad
copy) is derived data: every store-wide command answers as with a sound catalog, without a
traceback, and the row is read again from its session (issue 27 item 2, "never precious")."""

from __future__ import annotations

import sqlite3

import pytest

from omp_session.tools.listing_cache import cache_path

from .conftest import Store, run

COMMANDS = (
    ("list", "--all"),
    ("search", "--all", "tool"),
    ("usage", "daily", "--all", "--json"),
    ("usage", "session", "--all", "--json"),
    ("stats", "--all", "--json"),
)

#: Each damage: the table, the column, what is written there instead of its value (the columns
#: these commands read; the resumed prompt and the import markers: tests/tools/test_catalog.py).
DAMAGES = {
    "reduced entries not zlib": ("catalog_files", "slim", b"not zlib at all"),
    "usage facts not zlib": ("catalog_files", "facts", b"\x78\x9cbroken"),
    "header not JSON": ("catalog_files", "header", b"{not json"),
    "kept statistics not JSON": ("catalog_sessions", "stats", b'{"id":'),
}


def _outputs() -> list[tuple[int, str]]:
    found = []
    for command in COMMANDS:
        result = run(*command)
        assert "Traceback" not in result.output, (command, result.output)
        found.append((result.exit_code, result.stdout))
    return found


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_damaged_catalog_rows_are_read_again_from_their_sessions(store: Store, damage: str) -> None:
    store.add("v3-branch-summaries", session_id="5ca1ab1e")
    store.add("omp-large-real")
    expected = _outputs()  # builds the catalog (and the kept statistics)
    assert all(code == 0 for code, _ in expected)
    table, column, garbage = DAMAGES[damage]
    with sqlite3.connect(cache_path()) as db:
        changed = db.execute(f"UPDATE {table} SET {column} = ? WHERE {column} IS NOT NULL", (garbage,))
        assert changed.rowcount > 0, damage
    assert _outputs() == expected
    assert _outputs() == expected  # and again, from the rows read again
