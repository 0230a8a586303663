"""A short run of the fuzz campaign (the full one, 20,000 files, is run by hand: see
``tests/durability/fuzz_campaign.py`` and docs/durability.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .fuzz_campaign import campaign


@pytest.mark.slow
def test_fuzz_campaign_finds_no_foreign_exceptions_hangs_or_internal_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    figures = campaign(files=500, cli_sample=25, seed=7, keep=tmp_path / "failures")
    assert figures.files == 500 and figures.calls >= 500 * 14
    assert dict(figures.foreign) == {}, figures.examples
    assert figures.hangs == 0 and figures.cli_hangs == 0
    assert figures.cli_internal == 0, figures.examples
