"""The viewer's routes of a session, shown a window at a time (issue 13 #2; every session, however
small, issue 23 #2): the session page and the two APIs its script (``static/windowed.js``, served
as part of ``viewer.js``) asks, ``/api/window`` and ``/api/rows``.

Internal module (part of the viewer, whose API is :mod:`omp_session.web`); not part of the public API.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response

from omp_session.errors import SessionError
from omp_session.rendering.images import linked_images
from omp_session.rendering.page import environment, script_json
from omp_session.rendering.windowed import WindowedSession
from omp_session.rendering.windowed_open import open_windowed
from omp_session.store import SessionStorage
from omp_session.web.responses import NO_STORE, Html, Json, int_param, not_found, unreadable
from omp_session.web.session_cache import RecentlyUsed, session_version

__all__ = ["WindowedRoutes"]

_CACHE_SIZE = 2  # sessions kept open (each holds its entries and tree rows: a big one, hundreds of MB)
_PAGES = 8  # their rendered pages (~100 KB each at most: a window of entries and 200 rows)


class WindowedRoutes:
    """The session page and its APIs over the recently opened sessions."""

    def __init__(
        self,
        blobs: Path,
        locate: Callable[[Request], Path | None],
        poll_ms: int,
        storage: SessionStorage | None = None,
        parent_ref: Callable[[str], str | None] = lambda _parent: None,
    ) -> None:
        self._storage = storage
        #: The ref of a header's ``parentSession`` (the catalog's), for the link to the parent.
        self._parent_ref = parent_ref
        self._images = linked_images(blobs, lambda digest: f"/blob/{digest}")
        self._locate = locate
        self._poll_ms = poll_ms
        self._sessions: RecentlyUsed[WindowedSession] = RecentlyUsed(_CACHE_SIZE)
        self._pages: RecentlyUsed[str] = RecentlyUsed(_PAGES)

    def _open(self, path: Path, version: str) -> WindowedSession:
        return self._sessions.get(
            (str(path), version), lambda: open_windowed(path, self._images, storage=self._storage)
        )

    def page(self, path: Path, ref: str, version: str, foreign: dict[str, str] | None = None) -> Response:
        """The session page: the first window, the rest fetched by its script.
        Rendered once per file version (and once more when the tree rows are built: the page
        then carries them), however many clients ask. ``foreign`` marks another agent's session
        (``agent``, ``source`` path, import ``token``: the same for every page of this server)."""
        view = self._open(path, version)

        def render() -> str:
            data, first_html = view.page_data()
            parent = view.facts()["parent_session"]
            return (
                environment()
                .get_template("session_windowed.html")
                .render(
                    f=view.facts(),
                    ref=ref,
                    version=version,
                    poll_ms=self._poll_ms,
                    row_count=data["rowCount"],
                    first_html=first_html,
                    data_json=script_json(data),
                    parent_ref=self._parent_ref(parent) if parent else None,
                    foreign=foreign,
                    use_js=True,
                )
            )

        view.prepare_page()  # before the key: whether the page carries the tree rows
        page = self._pages.get((str(path), f"{version} {view.tree.ready} {ref}"), render)
        # The tree rows are built after the page has gone out: the first screen waits only for
        # the open and the first window (issue 13 #2).
        return Html(page, background=BackgroundTask(view.build_tree))

    def _opened(self, request: Request) -> WindowedSession | Response:
        path = self._locate(request)
        if path is None:
            return not_found()
        try:
            return self._open(path, session_version(path, self._storage))
        except (SessionError, OSError) as exc:
            return unreadable(exc)

    def window(self, request: Request) -> Response:
        """``/api/window/<ref>``: a window of the transcript (at a node, around an entry, by
        position, after an entry, or a compaction's dropped entries)."""
        view = self._opened(request)
        if isinstance(view, Response):
            return view
        params = request.query_params
        target = params.get("target")
        # ``from``: the node whose context the page shows (a deep link keeps it if it holds the target).
        at = params.get("at") or (view.newest_leaf_under(target, params.get("from")) if target else None)
        reply = view.window(
            at,
            start=int_param(params.get("start")),
            end=int_param(params.get("end")),
            around=target,
            after=params.get("after"),
            dropped=params.get("dropped") == "1",
        )
        return Json(reply, headers=NO_STORE)

    def rows(self, request: Request) -> Response:
        """``/api/rows/<ref>``: tree rows near a node, matching a filter, or a slice."""
        view = self._opened(request)
        if isinstance(view, Response):
            return view
        params = request.query_params
        reply: Any
        if "near" in params:
            reply = view.rows_near(params.get("near") or None, params.getlist("keys"))
        elif "q" in params:
            reply = view.tree.get().matching(params.get("q") or "")
        else:
            start, count = int_param(params.get("start")) or 0, int_param(params.get("count")) or 200
            reply = view.rows_slice(start, count)
        return Json(reply, headers=NO_STORE)
