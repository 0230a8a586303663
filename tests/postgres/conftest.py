"""A real PostgreSQL for the tests of the PostgreSQL store: one throwaway server per test run,
one fresh table per test (so tests never see each other's rows)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest

from omp_session.store.postgres import PostgresStorage
from tests.pg_server import INSTALL_HINT, ThrowawayServer, find_bin_dir, throwaway_server


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[ThrowawayServer]:
    if find_bin_dir() is None:
        pytest.skip(INSTALL_HINT)
    with throwaway_server() as server:
        yield server


@pytest.fixture
def table_name() -> str:
    return f"omp_session_files_{uuid.uuid4().hex[:12]}"


@pytest.fixture
def pg_store(postgres_server: ThrowawayServer, table_name: str) -> Iterator[PostgresStorage]:
    store = PostgresStorage(postgres_server.dsn, table_name)
    yield store
    store.close()


@pytest.fixture
def sql(postgres_server: ThrowawayServer) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """A plain connection for looking at rows directly (what another program would see)."""
    with psycopg.connect(postgres_server.dsn, autocommit=True) as connection:
        yield connection
