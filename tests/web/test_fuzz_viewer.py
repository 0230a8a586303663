"""The viewer fuzzing (tests/web/fuzz_viewer.py): a short run in the normal suite, a longer one
marked slow, and proof that it counts what it is there to count (a 500 with its exception, a hang,
a request that writes a served file)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

from .fuzz_viewer import ENTRY_URLS, PAGE_URLS, SITE_URLS, WINDOW_URLS, ViewerFigures, _route, campaign

_APP = sys.modules["omp_session.web.app"]
_ROUTES = sys.modules["omp_session.web.windowed_routes"]


def _routes_answered(figures: ViewerFigures, status: int) -> set[str]:
    return {key.split(" ", 1)[1] for key in figures.statuses if key.startswith(f"{status} ")}


def test_a_short_run_finds_nothing_and_reaches_every_route(tmp_path: Path) -> None:
    figures = campaign(files=24, seed=20261201, keep=tmp_path / "failures")
    assert dict(figures.foreign) == {}, figures.examples
    assert figures.hangs == 0 and figures.files == 24
    per_file = len(PAGE_URLS) + len(WINDOW_URLS) + len(ENTRY_URLS)
    assert figures.calls >= len(SITE_URLS) + 24 * per_file
    # Every route answered 200 for some file: the run exercised the pages, not only their refusals.
    answered = _routes_answered(figures, 200)
    for template in [*PAGE_URLS, *WINDOW_URLS, *ENTRY_URLS]:
        assert _route(template.replace("ID", "x"), "") in answered, template
    for agent in ("@claude", "@codex"):
        assert f"/session/{agent}/REF" in answered and f"/export/{agent}/REF" in answered
        assert f"/api/import/{agent}/REF" in answered  # imported, then redirected to the omp session
    assert figures.library_errors > 0  # damaged files are refused with 422, as they should be


@pytest.mark.slow
def test_a_long_run_finds_nothing(tmp_path: Path) -> None:
    figures = campaign(files=800, seed=7, keep=tmp_path / "failures")
    assert figures.files == 800
    assert dict(figures.foreign) == {}, figures.examples
    assert figures.hangs == 0


def test_an_exception_in_a_page_is_counted_as_a_500_and_an_exception(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("planted")

    monkeypatch.setattr(_ROUTES, "open_windowed", broken)
    figures = campaign(files=3, seed=1, keep=tmp_path / "failures")
    assert figures.foreign["HTTP 500: /session/REF"] == 3
    assert figures.foreign["exception: /session/REF: RuntimeError"] == 3
    assert any("planted" in example for example in figures.examples)
    assert len(list((tmp_path / "failures").glob("case-*.jsonl"))) > 0  # kept for replay


def test_a_hang_is_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = _APP.build_usage_page

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(1.6)
        return real(*args, **kwargs)

    monkeypatch.setattr(_APP, "build_usage_page", slow)
    figures = campaign(files=1, seed=1, keep=tmp_path / "failures", timeout=1)
    # The usage requests: the plain one and the one with a range; the one with a bad range is the
    # plain page, which the viewer builds once (issue 25's load test).
    assert figures.hangs == 2
    assert figures.foreign["hang: /usage"] == 1


def test_a_request_that_writes_a_served_file_is_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = _ROUTES.open_windowed

    def writing(path: Path, *args: Any, **kwargs: Any) -> Any:
        with open(path, "ab") as handle:
            handle.write(b"\n")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(_ROUTES, "open_windowed", writing)
    figures = campaign(files=2, seed=1, keep=tmp_path / "failures")
    assert figures.foreign["a request changed a served file"] == 2
