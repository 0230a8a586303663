"""A short run of the importer fuzzing (the long one is run by hand: tests/importers/fuzz_importers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .fuzz_importers import campaign


@pytest.mark.slow
def test_fuzzed_transcripts_raise_only_the_library_s_errors(tmp_path: Path) -> None:
    figures = campaign(files=400, seed=5, keep=tmp_path / "failures")
    assert figures.files == 400 and figures.calls >= 400 * 3 and figures.cli_runs == 16
    assert dict(figures.foreign) == {}, figures.examples
    assert figures.hangs == 0 and figures.cli_internal == 0
