from __future__ import annotations

import pytest

from omp_session.store._indexed import offsets as offset_index


@pytest.fixture(autouse=True)
def index_every_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """Index sessions of any size, so that small test files take the fast path too."""
    monkeypatch.setattr(offset_index, "MIN_INDEXED_BYTES", 0)
