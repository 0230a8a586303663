"""Helpers for the viewer tests: a real uvicorn server in a thread, crafted sessions, screenshots."""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
import re
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import uvicorn

from omp_session.format.codec import encode_line
from omp_session.rendering.entry_views import EntryView, ToolCalls, entry_view
from omp_session.rendering.images import ImageSource, linked_images
from omp_session.rendering.windowed import WindowedSession
from omp_session.rendering.windowed_open import open_windowed
from omp_session.rendering.windowed_tree import TreeRow
from omp_session.tools.entry_kinds import EntryKind
from omp_session.web import create_app

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
PAGINATION = "-projects-shop-api/2025-06-02T09-32-00-700Z_13234c46f7800002.jsonl"
FLAKY = "-projects-shop-api/2025-06-03T10-32-00-700Z_1324a39997800003.jsonl"
BLOG = "-projects-blog/2025-06-04T11-32-00-700Z_1325faec37800004.jsonl"
FORK = "-projects-shop-api/2025-06-08T09-32-01-050Z_132b05d14f000064.jsonl"
INFRA = "--srv-infra--/2025-06-07T14-32-00-700Z_132a00e417800007.jsonl"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def running_viewer(
    root: Path,
    blobs: Path | None = None,
    poll_ms: int = 2000,
    foreign_stores: Any = (),
) -> Iterator[str]:
    """Serve ``root`` on a free localhost port for the duration of the block; yields the base URL."""
    app = create_app(root, blobs, poll_ms=poll_ms, foreign_stores=foreign_stores)
    with serving(app) as url:
        yield url


@contextmanager
def serving(app: Any, log_level: str = "warning") -> Iterator[str]:
    """Serve the ASGI ``app`` with uvicorn on a free localhost port, in a thread, for the duration
    of the block; yields the base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level=log_level))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the viewer did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def copy_samples(target: Path) -> tuple[Path, Path]:
    """The committed samples copied to ``target``; returns (sessions root, blobs dir)."""
    shutil.copytree(SAMPLES / "sessions", target / "sessions")
    shutil.copytree(SAMPLES / "blobs", target / "blobs")
    return target / "sessions", target / "blobs"


def snapshot(*directories: Path) -> dict[str, tuple[str, int]]:
    """Every file (and symlink) under ``directories``: content hash and mtime, to prove nothing changed."""
    state: dict[str, tuple[str, int]] = {}
    for directory in directories:
        for dirpath, dirnames, filenames in os.walk(directory):
            for name in sorted(filenames + dirnames):
                path = Path(dirpath) / name
                if path.is_symlink() or path.is_dir():
                    state[str(path)] = (
                        os.readlink(path) if path.is_symlink() else "dir",
                        path.lstat().st_mtime_ns,
                    )
                else:
                    state[str(path)] = (
                        hashlib.sha256(path.read_bytes()).hexdigest(),
                        path.stat().st_mtime_ns,
                    )
    return state


def write_session(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(encode_line(record) for record in records))
    return path


def screenshot(page: Any, name: str, *, full_page: bool = False) -> Path:
    """Save a screenshot under test-artifacts/ (kept for a human to look at)."""
    ARTIFACTS.mkdir(exist_ok=True)
    target = ARTIFACTS / f"{name}.png"
    if full_page:  # sticky bars would otherwise be drawn where the page happens to be scrolled
        page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(target), full_page=full_page)
    return target


#: The smallest valid PNG (1×1, opaque white).
PNG_1x1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4//8/AAX+Av4N70a4AAAAAElFTkSuQmCC"
)


def opened(path: Path, images: ImageSource | None = None) -> WindowedSession:
    """The session at ``path`` as the viewer opens it (images as links by default)."""
    return open_windowed(path, images if images is not None else linked_images(None, str))


def entry_views(path: Path, images: ImageSource | None = None) -> list[EntryView]:
    """Every entry's view, in file order, drawn as the viewer draws it (tool calls with their
    results' details)."""
    session = opened(path, images)
    details = {
        found.fields["toolCallId"]: found.fields["details"]
        for found in session.kinds()
        if found.kind == EntryKind.TOOL_RESULT
        and isinstance(found.fields.get("toolCallId"), str)
        and "details" in found.fields
    }
    calls = ToolCalls(details)
    return [
        entry_view(session.keys[p], entry, session.images, calls, session.kind_at(p))
        for p, entry in enumerate(session.entries)
    ]


def tree_panel(path: Path) -> list[tuple[TreeRow, str]]:
    """The tree panel's rows of the session at ``path``: each with its prefix and text as drawn."""
    tree = opened(path).tree.get()
    return [(row, row.prefix + tree.text(index)) for index, row in enumerate(tree.rows)]


_GZIP_BLOCK = re.compile(
    r'(<script type="application/octet-stream" data-encoding="gzip-base64"[^>]*>)(.*?)(</script>)', re.S
)


def readable_export(html: str) -> str:
    """An HTML export with its compressed blocks (gzipped JSON in base64) as the JSON they hold, so
    a test can look for text anywhere in the file."""
    return _GZIP_BLOCK.sub(
        lambda m: m.group(1) + gzip.decompress(base64.b64decode(m.group(2))).decode("utf-8") + m.group(3),
        html,
    )
