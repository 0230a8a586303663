"""The viewer on sessions that used to break it (issue 11): lone surrogates, huge usage numbers;
and its 500 answer carries the same security headers as every other response."""

from __future__ import annotations

import http.client
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from omp_session.web.security import CONTENT_SECURITY_POLICY

from .support import running_viewer

HEADER = '{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}'
USER = (
    '{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z",'
    '"message":{"role":"user","content":"cut \\ud83d emoji","timestamp":1}}'
)
HUGE_USAGE = (
    '{"type":"message","id":"b1","parentId":"a1","timestamp":"2025-01-01T00:00:02.000Z",'
    '"message":{"role":"assistant","content":[{"type":"text","text":"big"}],"api":"x","provider":"p",'
    '"model":"m","usage":{"input":1e308,"output":1e400,"cacheRead":' + "9" * 400 + ',"cacheWrite":0,'
    '"totalTokens":123456789012345678901234567890,"cost":{"input":1e308,"output":1e308,"cacheRead":'
    + "9" * 400
    + ',"cacheWrite":0,"total":'
    + "9" * 400
    + '}},"stopReason":"stop","timestamp":2}}'
)


def _get(url: str, path: str) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection(urlsplit(url).netloc, timeout=20)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("hostile") / "sessions"
    (root / "-p").mkdir(parents=True)
    (root / "-p" / "cut.jsonl").write_text(f"{HEADER}\n{USER}\n", encoding="ascii")
    (root / "-p" / "huge.jsonl").write_text(f"{HEADER}\n{USER}\n{HUGE_USAGE}\n", encoding="ascii")
    with running_viewer(root) as url:
        yield url


@pytest.mark.parametrize(
    "route", ["/", "/session/-p/cut.jsonl", "/api/window/-p/cut.jsonl", "/export/-p/cut.jsonl"]
)
def test_lone_surrogates_are_shown_as_replacement_characters(hostile: str, route: str) -> None:
    status, _headers, body = _get(hostile, route)
    assert status == 200
    assert "cut \ufffd emoji" in body.decode("utf-8")


@pytest.mark.parametrize("route", ["/", "/session/-p/huge.jsonl", "/export/-p/huge.jsonl"])
def test_huge_usage_numbers_render(hostile: str, route: str) -> None:
    status, _headers, body = _get(hostile, route)
    assert status == 200, body[:300]


def test_an_internal_error_answers_500_with_the_security_headers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(sys.modules["omp_session.web.windowed_routes"], "open_windowed", broken)
    root = tmp_path / "sessions"
    (root / "-p").mkdir(parents=True)
    (root / "-p" / "cut.jsonl").write_text(f"{HEADER}\n{USER}\n", encoding="ascii")
    with running_viewer(root) as url:
        status, headers, body = _get(url, "/session/-p/cut.jsonl")
    assert status == 500
    assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert headers["x-content-type-options"] == "nosniff" and headers["x-frame-options"] == "DENY"
    assert b"boom" not in body and b"Traceback" not in body
