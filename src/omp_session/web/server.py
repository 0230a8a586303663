"""Running the viewer with uvicorn on a local address.

Internal module (part of the viewer, whose API is :mod:`omp_session.web`); not part of the public API.
"""

from __future__ import annotations

import threading
import webbrowser
from collections.abc import Callable, Sequence
from pathlib import Path

import uvicorn

from omp_session.importers.base import ForeignSessionStore
from omp_session.store import SessionStorage
from omp_session.web.app import DEFAULT_ALLOWED_HOSTS, create_app

__all__ = ["allowed_hosts_for", "serve", "viewer_url"]

_ANY_ADDRESS = ("0.0.0.0", "::", "")


def viewer_url(host: str, port: int) -> str:
    """The URL to open for a server bound to ``host:port`` (``0.0.0.0`` is reached via 127.0.0.1)."""
    shown = "127.0.0.1" if host in _ANY_ADDRESS else host
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/"


def allowed_hosts_for(host: str) -> list[str]:
    """Host headers to accept: the loopback names plus the bound address (any, if bound to all)."""
    if host in _ANY_ADDRESS:
        return ["*"]
    return sorted({*DEFAULT_ALLOWED_HOSTS, host})


def serve(
    sessions_root: Path | str,
    blobs_dir: Path | str | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    open_browser: bool = False,
    announce: Callable[[str], None] = print,
    foreign_stores: Sequence[ForeignSessionStore] = (),
    banner_lines: Sequence[str] | None = None,
    storage: SessionStorage | None = None,
) -> None:
    """Serve the viewer until interrupted (Ctrl-C). Binds to 127.0.0.1 unless told otherwise.
    ``storage``: serve its rows under ``sessions_root`` instead of files."""
    app = create_app(
        sessions_root,
        blobs_dir,
        allowed_hosts=allowed_hosts_for(host),
        foreign_stores=foreign_stores,
        banner_lines=banner_lines,
        storage=storage,
    )
    url = viewer_url(host, port)
    announce(f"omp-session viewer for {Path(sessions_root)} at {url}  (Ctrl-C to stop)")
    if open_browser:
        threading.Timer(0.8, webbrowser.open, args=(url,)).start()
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
