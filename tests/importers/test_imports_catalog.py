"""The importers' "already imported?" check (``find_imports``) through the store catalog: the
same answer as the scan of every file, the files the catalog holds up to date not read."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from omp_session.importers import session_file
from omp_session.importers.persist import find_imports, import_session
from omp_session.importers.stores import make_store
from omp_session.tools.catalog import Catalog
from omp_session.tools.listing import session_files
from omp_session.tools.listing_cache import cache_path
from tests.importers import corpus


def _scanned(root: Path, monkeypatch: pytest.MonkeyPatch) -> dict[tuple[str, str], Path]:
    with monkeypatch.context() as patch:
        patch.setattr(session_file, "_catalogued_imports", lambda _paths: {})
        return find_imports(root)


def test_the_catalog_answers_the_already_imported_check_as_the_scan_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sessions"
    imported = []
    for source, name in (("claude", "plain_chat"), ("codex", "rollback")):
        staged, _ = corpus.stage(source, name, tmp_path / source)
        store = make_store(source, env={"HOME": str(tmp_path)})
        outcome = import_session(store, store.info_for(str(staged)), root=root, session_dir=root / "p")
        assert outcome.path is not None
        imported.append(outcome.path)
    expected = _scanned(root, monkeypatch)
    assert len(expected) == 2 and set(expected.values()) == set(imported)
    assert not cache_path().exists()  # no catalog: the scan, and no catalog is made for it
    assert find_imports(root) == expected and not cache_path().exists()

    with Catalog() as catalog:
        catalog.refresh(list(session_files(root)))
    scanned: list[str] = []
    real = session_file.import_markers

    def spy(path: Path) -> Any:
        scanned.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(session_file, "import_markers", spy)
    assert find_imports(root) == expected
    assert scanned == []  # every file answered by the catalog
    # A file changed since the catalog read it is scanned (and still found).
    with imported[0].open("ab") as handle:
        handle.write(b"\n")
    assert find_imports(root) == expected
    assert scanned == [os.fspath(imported[0])]
