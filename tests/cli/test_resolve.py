"""SESSION argument resolution: paths, ids, prefixes (omp's resolveResumableSession, spec §6.9)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from omp_session.errors import EntryNotFoundError, SessionNotFoundError
from omp_session.tools.listing import session_files
from omp_session.tools.resolve import (
    AmbiguousEntryError,
    AmbiguousSessionError,
    NoMatchingSessionError,
    project_dir,
    resolve_entry_id,
    resolve_session,
)

from .conftest import Store

NAME_A = "2025-06-02T14-05-00-000Z_15d0c6a0e2b44001.jsonl"
NAME_B = "2025-06-03T09-00-00-000Z_15e2312eeaab092c.jsonl"


@pytest.fixture
def two(store: Store) -> tuple[Path, Path]:
    a = store.add("v3-labels", session_id="15d0c6a0e2b44001", name=NAME_A)
    b = store.add("v3-branch-summaries", session_id="15e2312eeaab092c", name=NAME_B, project="-other")
    return a, b


def test_an_existing_path_is_returned_as_is(two: tuple[Path, Path], store: Store) -> None:
    assert resolve_session(os.fspath(two[0]), store.root) == two[0]


def test_a_missing_path_is_not_found(store: Store) -> None:
    with pytest.raises(SessionNotFoundError, match="no such session file"):
        resolve_session("some/dir/x.jsonl", store.root)


@pytest.mark.parametrize(
    ("query", "which"),
    [
        ("15d0c6a0e2b44001", 0),  # the full id
        ("15d0", 0),  # an id prefix
        ("15E2", 1),  # case-insensitive
        ("2025-06-03", 1),  # a prefix of the file base name
        ("2025-06-02T14-05-00-000Z_15d0c6a0e2b44001", 0),  # the whole base name
    ],
)
def test_ids_and_prefixes_find_the_session(
    two: tuple[Path, Path], store: Store, query: str, which: int
) -> None:
    assert resolve_session(query, store.root) == two[which]


def test_the_part_after_the_last_underscore_matches(store: Store) -> None:
    path = store.add("v3-labels", session_id="other-id", name="2025-01-01T00-00-00-000Z_abc123.jsonl")
    assert resolve_session("abc1", store.root) == path


def test_an_ambiguous_prefix_lists_the_candidates(two: tuple[Path, Path], store: Store) -> None:
    with pytest.raises(AmbiguousSessionError) as caught:
        resolve_session("15", store.root)
    assert {c.path for c in caught.value.candidates} == set(two)
    message = str(caught.value)
    assert "15d0c6a0e2b44001" in message and "15e2312eeaab092c" in message and "\n" not in message


def test_an_exact_id_wins_over_longer_ids_it_prefixes(store: Store) -> None:
    short = store.add("v3-labels", session_id="abc", name="a.jsonl")
    store.add("v3-labels", session_id="abcd", name="b.jsonl")
    assert resolve_session("abc", store.root) == short


def test_the_current_project_is_searched_first(store: Store, tmp_path: Path) -> None:
    local_dir = project_dir(tmp_path, store.root)
    local = store.add("v3-labels", session_id="77aa01", project=local_dir.name)
    store.add("v3-labels", session_id="77aa02", project="-elsewhere")
    assert resolve_session("77aa", store.root, cwd=tmp_path) == local
    with pytest.raises(AmbiguousSessionError):
        resolve_session("77aa", store.root, cwd=tmp_path / "not-a-project")


def test_nothing_matching_says_where_it_looked(two: tuple[Path, Path], store: Store) -> None:
    with pytest.raises(NoMatchingSessionError) as caught:
        resolve_session("zzz", store.root)
    assert "'zzz'" in str(caught.value) and os.fspath(store.root) in str(caught.value)


def test_files_without_a_header_are_not_candidates(store: Store) -> None:
    store.add("corrupt-first-line", kind="deviations", name="2025-01-01T00-00-00-000Z_dead.jsonl")
    with pytest.raises(NoMatchingSessionError):
        resolve_session("dead", store.root)
    assert len(list(session_files(store.root))) == 1  # but check --all still sees the file


def test_project_dir_has_no_side_effects(store: Store, tmp_path: Path) -> None:
    directory = project_dir(tmp_path / "project", store.root)
    assert directory.parent == store.root
    assert not directory.exists()


def test_entry_ids_by_exact_id_or_unique_prefix() -> None:
    ids = {"a0000001": 1, "a0000002": 2, "b0000001": 3, "a": 4}
    assert resolve_entry_id(ids, "b") == "b0000001"
    assert resolve_entry_id(ids, "A0000002") == "a0000002"
    assert resolve_entry_id(ids, "a") == "a"  # exact beats prefix
    with pytest.raises(AmbiguousEntryError, match="a0000001, a0000002"):
        resolve_entry_id(ids, "a000")
    with pytest.raises(EntryNotFoundError, match="Entry zz not found"):
        resolve_entry_id(ids, "zz")
    with pytest.raises(EntryNotFoundError):
        resolve_entry_id(ids, "")
