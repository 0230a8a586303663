"""The viewer over plain HTTP: what URLs can reach, what is refused, headers, and that nothing under
the root is ever written. Requests go through ``http.client`` so paths reach the server unnormalised."""

from __future__ import annotations

import hashlib
import http.client
import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from omp_session.format.codec import encode_line

from .support import PAGINATION, PNG_1x1, copy_samples, running_viewer, snapshot, write_session


class Http:
    def __init__(self, url: str) -> None:
        self.netloc = urlsplit(url).netloc

    def get(
        self, path: str, *, method: str = "GET", host: str | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        connection = http.client.HTTPConnection(self.netloc, timeout=10)
        try:
            connection.putrequest(method, path, skip_host=host is not None, skip_accept_encoding=True)
            if host is not None:
                connection.putheader("Host", host)
            connection.endheaders()
            response = connection.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            connection.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Http, Path, Path, Path]]:
    """Samples plus traps: symlinks leaving the root, a secret outside it, an SVG blob."""
    base = tmp_path_factory.mktemp("http")
    root, blobs = copy_samples(base)
    outside = base / "outside"
    secret = write_session(
        outside / "secret.jsonl",
        [{"type": "session", "id": "secret", "cwd": "/secret", "timestamp": "2025-01-01T00:00:00.000Z"}],
    )
    (outside / "blob").write_bytes(PNG_1x1)
    os.symlink(outside, root / "linked-outside")
    os.symlink(secret, root / "-projects-blog" / "escape.jsonl")
    os.symlink(root / PAGINATION, root / "-projects-blog" / "inside-link.jsonl")
    digest = hashlib.sha256(PNG_1x1).hexdigest()
    os.symlink(outside / "blob", blobs / ("f" * 64))
    (blobs / digest).write_bytes(PNG_1x1)
    (blobs / ("e" * 64)).write_bytes(
        b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
    )
    with running_viewer(root, blobs) as url:
        yield Http(url), root, blobs, base


@pytest.mark.parametrize(
    "path",
    [
        "/session/../outside/secret.jsonl",
        "/session/%2e%2e/outside/secret.jsonl",
        "/session/..%2foutside%2fsecret.jsonl",
        "/session/..%2Foutside%2Fsecret.jsonl",
        "/session/-projects-blog%5c..%5c..%5coutside%5csecret.jsonl",
        "/session//etc/passwd",
        "/session/%2fetc%2fpasswd",
        "/session/linked-outside/secret.jsonl",
        "/session/-projects-blog/escape.jsonl",
        "/session/-projects-blog/nothing.jsonl",
        "/session/-projects-blog",
        "/session/-projects-blog/../../outside/secret.jsonl",
        "/session/-projects-blog/%00.jsonl",
        "/api/window/linked-outside/secret.jsonl",
        "/api/rows/linked-outside/secret.jsonl",
        "/api/version/../outside/secret.jsonl",
        "/export/linked-outside/secret.jsonl",
        "/export/-projects-blog/escape.jsonl",
        "/blob/" + "f" * 64,
        "/blob/../sessions/" + PAGINATION,
        "/blob/%2e%2e%2fsessions",
        "/blob/" + "0" * 63,
        "/static/../app.py",
        "/static/viewer.css%2f..%2f..%2fapp.py",
        "/static/base.html",
    ],
)
def test_paths_outside_the_root_are_refused(site: tuple[Http, Path, Path, Path], path: str) -> None:
    client = site[0]
    status, _headers, body = client.get(path)
    assert status in (400, 404), (path, status)
    assert b"secret" not in body and b"/secret" not in body


def test_sessions_and_blobs_inside_the_root_are_served(site: tuple[Http, Path, Path, Path]) -> None:
    client = site[0]
    status, headers, body = client.get("/session/" + PAGINATION)
    assert status == 200 and b"Keyset pagination it is" in body
    assert headers["content-type"].startswith("text/html")
    status, _, body = client.get("/session/-projects-blog/inside-link.jsonl")  # a symlink that stays inside
    assert status == 200 and b"Keyset pagination it is" in body
    status, headers, body = client.get("/blob/" + hashlib.sha256(PNG_1x1).hexdigest())
    assert (status, headers["content-type"], body) == (200, "image/png", PNG_1x1)
    status, _, _ = client.get("/blob/" + "e" * 64)  # an SVG is never served, whatever its name
    assert status == 415
    status, headers, body = client.get("/export/" + PAGINATION)
    assert status == 200 and headers["content-disposition"].startswith("attachment")
    assert b"Keyset pagination it is" in body
    index = client.get("/")[2]
    assert b"secret" not in index  # the symlink leaving the root is not listed either
    assert b"/session/-projects-blog/inside-link.jsonl" in index


def test_every_response_carries_the_security_headers(site: tuple[Http, Path, Path, Path]) -> None:
    client = site[0]
    for path in (
        "/",
        "/session/" + PAGINATION,
        "/static/viewer.js",
        "/session/nope.jsonl",
        "/session/..%2fx",
    ):
        _status, headers, _ = client.get(path)
        policy = headers["content-security-policy"]
        assert "script-src 'self'" in policy and "default-src 'none'" in policy
        assert "unsafe-inline" not in policy
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["x-frame-options"] == "DENY"


def test_only_get_and_head_and_only_local_host_names(site: tuple[Http, Path, Path, Path]) -> None:
    client = site[0]
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        assert client.get("/session/" + PAGINATION, method=method)[0] == 405
    assert client.get("/", method="HEAD")[0] == 200
    assert client.get("/", host="evil.example")[0] == 400  # DNS rebinding
    assert client.get("/", host="localhost")[0] == 200


def test_version_changes_when_the_file_grows(site: tuple[Http, Path, Path, Path]) -> None:
    client, root, _blobs, _ = site
    path = write_session(
        root / "-grow" / "grow.jsonl",
        [{"type": "session", "id": "g", "cwd": "/g", "timestamp": "2025-01-01T00:00:00.000Z"}],
    )
    first = client.get("/api/version/-grow/grow.jsonl")[2]
    with open(path, "ab") as handle:
        handle.write(
            encode_line(
                {
                    "type": "message",
                    "id": "m1",
                    "parentId": None,
                    "timestamp": "2025-01-01T00:00:01.000Z",
                    "message": {"role": "user", "content": "grown", "timestamp": 1},
                }
            )
        )
    second = client.get("/api/version/-grow/grow.jsonl")[2]
    assert first != second
    assert b"grown" in client.get("/api/window/-grow/grow.jsonl")[2]


def test_paging_and_project_filter(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    for number in range(120):
        project = "-alpha" if number % 3 else "-beta"
        path = write_session(
            root / project / f"s{number:03d}.jsonl",
            [
                {
                    "type": "session",
                    "id": f"id{number}",
                    "cwd": f"/{project[1:]}",
                    "timestamp": "2025-01-01T00:00:00.000Z",
                },
                {
                    "type": "message",
                    "id": "m",
                    "parentId": None,
                    "timestamp": "2025-01-01T00:00:00.000Z",
                    "message": {"role": "user", "content": f"question number {number}", "timestamp": 1},
                },
            ],
        )
        os.utime(path, (1_750_000_000 + number, 1_750_000_000 + number))
    with running_viewer(root) as url:
        client = Http(url)
        first = client.get("/")[2].decode()
        assert first.count('class="session-link"') == 50
        assert first.index("question number 119") < first.index("question number 118")  # newest first
        assert "page 1 of 3" in first and 'href="/?page=2"' in first
        last = client.get("/?page=3")[2].decode()
        assert last.count('class="session-link"') == 20 and "question number 0<" in last
        beta = client.get("/?project=-beta")[2].decode()
        assert beta.count('class="session-link"') == 40 and "/alpha" not in beta.split("<main")[1]
        found = client.get("/?q=number+7")[2].decode()
        assert found.count('class="session-link"') == 11  # 7, 70–79
        assert "<mark>number 7</mark>" in found


def test_the_server_never_writes(site: tuple[Http, Path, Path, Path]) -> None:
    client, root, blobs, base = site
    before = snapshot(root, blobs, base / "outside")
    index = client.get("/")[2].decode()
    refs = sorted({part.split('"')[0] for part in index.split('href="/session/')[1:]})
    assert len(refs) >= 7
    for ref in refs:
        for prefix in ("/session/", "/api/version/", "/api/window/", "/api/rows/", "/export/"):
            assert client.get(prefix + ref)[0] == 200
    client.get("/?q=pagination")
    client.get("/blob/" + hashlib.sha256(PNG_1x1).hexdigest())
    assert snapshot(root, blobs, base / "outside") == before
