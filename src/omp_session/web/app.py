"""The read-only web viewer: a Starlette application over a sessions root and a blob store.

Routes (all GET; nothing here writes a file):

* ``/``                        index: sessions grouped by project, search, paging
* ``/session/<ref>``           one session: tree panel and transcript
* ``/api/version/<ref>``       ``{"version": …}`` that changes when the file does (live updates)
* ``/api/body/<ref>``          the re-rendered part of the session page
* ``/export/<ref>``            the self-contained HTML export, as a download
* ``/usage``                   usage charts and tables (``?since=YYYY-MM-DD&until=…``)
* ``/api/window/<ref>``        a window of a big session's transcript (``rendering.windowed``)
* ``/api/rows/<ref>``          rows of a big session's tree
* ``/blob/<sha256>``           an image from the blob store (PNG, JPEG, GIF or WebP only)
* ``/static/<name>``           the stylesheet and the page script
* ``POST /api/import/<ref>``   import another agent's session into the sessions root: the viewer's
  only write, refused unless same-origin and carrying the page's token (web/foreign.py)

``<ref>`` of another agent's session is ``@<agent>/<project>/<file>.jsonl`` (a converted copy in a
private mirror, see :mod:`omp_session.web.foreign`).

``<ref>`` is a path relative to the root (``<project dir>/<file>.jsonl``); see
:func:`omp_session.web.catalog.resolve_ref` for what is refused.

Internal module (part of the viewer, whose API is :mod:`omp_session.web`); not part of the public API.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import re
import secrets
import threading
import urllib.parse
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Generic, TypeVar

from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from omp_session.errors import SessionError, SessionNotFoundError
from omp_session.format.codec import DISPLAY_ERRORS
from omp_session.importers.base import AGENT_NAMES, ForeignSessionStore
from omp_session.rendering.images import blob_file, inline_images, linked_images, sniff_raster_mime
from omp_session.rendering.page import (
    STATIC_FILES,
    environment,
    render_export,
    render_session_body,
    render_session_page,
    static_file,
    warm_up,
)
from omp_session.rendering.view import SessionView, build_session_view, script_json
from omp_session.rendering.windowed import WINDOWED_BYTES, WindowedSession
from omp_session.rendering.windowed_export import export_windowed_html
from omp_session.rendering.windowed_open import open_windowed
from omp_session.store.configured import configured_storage
from omp_session.store.paths import blobs_dir_near
from omp_session.web.catalog import SessionCatalog, SessionSummary
from omp_session.web.foreign import ForeignMirror, agent_of_ref
from omp_session.web.index_search import CatalogSearch
from omp_session.web.index_view import IndexPage, build_index
from omp_session.web.security import SecurityHeadersMiddleware
from omp_session.web.usage_view import build_usage_page

__all__ = ["DEFAULT_ALLOWED_HOSTS", "ViewerConfig", "create_app", "default_blobs_dir"]

DEFAULT_ALLOWED_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
_DIGEST = re.compile(r"^[0-9a-f]{64}$")
_VIEW_CACHE_SIZE = 8
_WINDOWED_CACHE_SIZE = 2


def default_blobs_dir(sessions_root: Path) -> Path:
    """The blob store beside the sessions root (see :func:`omp_session.store.paths.blobs_dir_near`)."""
    return blobs_dir_near(sessions_root)


@dataclass(frozen=True)
class ViewerConfig:
    """What the viewer serves: sessions under ``sessions_root``, images from ``blobs_dir``."""

    sessions_root: Path
    blobs_dir: Path | None = None
    poll_ms: int = 2000
    allowed_hosts: Sequence[str] = DEFAULT_ALLOWED_HOSTS
    #: Other agents' stores shown beside omp's sessions (none by default; ``serve`` passes them).
    foreign_stores: Sequence[ForeignSessionStore] = ()
    #: Session files larger than this are shown a window at a time (issue 13 #2).
    windowed_bytes: int = WINDOWED_BYTES


_Value = TypeVar("_Value")


class _RecentlyUsed(Generic[_Value]):
    """The last ``size`` values built, by key (thread-safe; a value is built outside the lock)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._values: OrderedDict[tuple[str, str], _Value] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str], build: Callable[[], _Value]) -> _Value:
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
        value = build()
        with self._lock:
            self._values[key] = value
            while len(self._values) > self._size:
                self._values.popitem(last=False)
        return value


class _Viewer:
    """Request handlers sharing one catalog and a small cache of rendered session views."""

    def __init__(self, config: ViewerConfig) -> None:
        self.root = Path(config.sessions_root).absolute()
        blobs = config.blobs_dir if config.blobs_dir is not None else default_blobs_dir(self.root)
        self.blobs = Path(blobs).absolute()
        self.poll_ms = config.poll_ms
        self.catalog = SessionCatalog(self.root)
        self.search = CatalogSearch()
        self._views: _RecentlyUsed[SessionView] = _RecentlyUsed(_VIEW_CACHE_SIZE)
        self._windowed: _RecentlyUsed[WindowedSession] = _RecentlyUsed(_WINDOWED_CACHE_SIZE)
        self.windowed_bytes = config.windowed_bytes
        self.foreign = ForeignMirror(config.foreign_stores) if config.foreign_stores else None
        #: Proves an import POST came from a page this server rendered (with the Origin check).
        self.import_token = secrets.token_urlsafe(32)

    # -- helpers -------------------------------------------------------------------------------

    def _locate(self, request: Request) -> Path | None:
        ref = str(request.path_params["ref"])
        if agent_of_ref(ref) is not None:
            return self.foreign.locate(ref) if self.foreign is not None else None
        return self.catalog.locate(ref)

    def _summaries(self) -> list[SessionSummary]:
        summaries = self.catalog.sessions()
        if self.foreign is not None:
            summaries = sorted(
                [*summaries, *self.foreign.sessions()],
                key=lambda s: (s.last_activity, s.modified),
                reverse=True,
            )
        return summaries

    @staticmethod
    def _version(path: Path) -> str:
        store = configured_storage()
        if store is None:  # a file: its exact mtime in nanoseconds
            found = path.stat()
            return f"{found.st_mtime_ns}-{found.st_size}"
        stat = store.stat_session(path)  # a database row: mtime_ms, which every write moves
        if stat is None:
            raise SessionNotFoundError(path)
        return f"{round(stat.mtime * 1e9)}-{stat.size}"

    def _view(self, path: Path, version: str) -> SessionView:
        images = linked_images(self.blobs, lambda digest: f"/blob/{digest}")
        return self._views.get((str(path), version), lambda: build_session_view(path, images))

    def _windowed_view(self, path: Path, version: str) -> WindowedSession:
        images = linked_images(self.blobs, lambda digest: f"/blob/{digest}")
        return self._windowed.get((str(path), version), lambda: open_windowed(path, images))

    def _is_big(self, path: Path) -> bool:
        store = configured_storage()
        if store is None:
            return path.stat().st_size > self.windowed_bytes
        stat = store.stat_session(path)  # a database row
        return stat is not None and stat.size > self.windowed_bytes

    def _windowed_page(self, view: WindowedSession, ref: str, version: str) -> str:
        data, first_html = view.page_data()
        return (
            environment()
            .get_template("session_windowed.html")
            .render(
                f=view.facts(),
                ref=ref,
                version=version,
                poll_ms=self.poll_ms,
                row_count=data["rowCount"],
                first_html=first_html,
                data_json=script_json(data),
                use_js=True,
                extra_js=("windowed_tree.js", "windowed.js"),
            )
        )

    def window(self, request: Request) -> Response:
        path = self._locate(request)
        if path is None:
            return _not_found()
        try:
            view = self._windowed_view(path, self._version(path))
        except (SessionError, OSError) as exc:
            return _Text(f"cannot read this session: {exc}", status_code=422)
        params = request.query_params
        target = params.get("target")
        at = params.get("at") or (view.newest_leaf_under(target) if target else None)
        reply = view.window(
            at,
            start=_int(params.get("start")),
            end=_int(params.get("end")),
            around=target,
            after=params.get("after"),
            dropped=params.get("dropped") == "1",
        )
        return _Json(reply, headers={"Cache-Control": "no-store"})

    def rows(self, request: Request) -> Response:
        path = self._locate(request)
        if path is None:
            return _not_found()
        try:
            view = self._windowed_view(path, self._version(path))
        except (SessionError, OSError) as exc:
            return _Text(f"cannot read this session: {exc}", status_code=422)
        params = request.query_params
        reply: Any
        if "near" in params:
            reply = view.rows_near(params.get("near") or None, params.getlist("keys"))
        elif "q" in params:
            reply = view.tree.get().matching(params.get("q") or "")
        else:
            reply = view.rows_slice(_int(params.get("start")) or 0, _int(params.get("count")) or 200)
        return _Json(reply, headers={"Cache-Control": "no-store"})

    def _parent_ref(self, view: SessionView) -> str | None:
        return self.catalog.parent_ref(view.parent_session) if view.parent_session else None

    # -- routes --------------------------------------------------------------------------------

    def index(self, request: Request) -> Response:
        query = request.query_params.get("q", "").strip()[:200]
        project = request.query_params.get("project")
        try:
            page_number = int(request.query_params.get("page", "1"))
        except ValueError:
            page_number = 1
        page = build_index(self._summaries(), self.search, query, project, page_number)
        return _Html(render_index(page, str(self.root), self.catalog.skipped))

    def session(self, request: Request) -> Response:
        path = self._locate(request)
        if path is None:
            return _not_found()
        ref = str(request.path_params["ref"])
        try:
            version = self._version(path)
            if self._is_big(path) and agent_of_ref(ref) is None:
                view_big = self._windowed_view(path, version)
                # The tree rows are built after the page has gone out: the first screen waits only
                # for the open and the first window (issue 13 #2).
                page = self._windowed_page(view_big, ref, version)
                return _Html(page, background=BackgroundTask(view_big.build_tree))
            view = self._view(path, version)
        except (SessionError, OSError) as exc:
            return _Text(f"cannot read this session: {exc}", status_code=422)
        agent = agent_of_ref(ref)
        foreign = None
        if agent is not None and self.foreign is not None:
            info = self.foreign.info_of(path)
            foreign = {
                "agent": AGENT_NAMES.get(agent, agent),
                "source": info.path if info else "",
                "token": self.import_token,
            }
        page = render_session_page(view, ref, self._parent_ref(view), version, self.poll_ms, foreign=foreign)
        return _Html(page)

    async def import_session(self, request: Request) -> Response:
        """Import another agent's session into the sessions root, then show the omp session."""
        ref = str(request.path_params["ref"])
        body = await request.body()
        form = urllib.parse.parse_qs(body[:4096].decode("utf-8", "replace"))  # a token, nothing more
        token = (form.get("token") or [""])[0]
        # The token (only in pages this server rendered; another site cannot read them) is the
        # guard; a browser's own same-origin signals must agree too. Origin is "null" under our
        # no-referrer policy, so only a concrete foreign Origin is refused.
        origin = request.headers.get("origin")
        fetch_site = request.headers.get("sec-fetch-site")
        expected_origin = f"{request.url.scheme}://{request.url.netloc}"
        foreign_origin = origin not in (None, "null", expected_origin)
        cross_site = fetch_site is not None and fetch_site not in ("same-origin", "none")
        if not hmac.compare_digest(token, self.import_token) or foreign_origin or cross_site:
            return _Text("refused: not a request from this viewer's page", status_code=403)
        if self.foreign is None or agent_of_ref(ref) is None:
            return _not_found()
        try:
            outcome = self.foreign.import_into(ref, self.root)
        except (SessionError, OSError) as exc:
            return _Text(f"import failed: {exc}", status_code=422)
        if outcome is None or outcome.path is None:
            return _not_found()
        target = self.catalog.ref_of(outcome.path)
        if target is None:
            return _Text(f"imported to {outcome.path} (outside this viewer's root)")
        return RedirectResponse(f"/session/{target}?imported={outcome.status}", status_code=303)

    def version(self, request: Request) -> Response:
        path = self._locate(request)
        if path is None:
            return _not_found()
        return _Json({"version": self._version(path)}, headers={"Cache-Control": "no-store"})

    def body(self, request: Request) -> Response:
        path = self._locate(request)
        if path is None:
            return _not_found()
        try:
            view = self._view(path, self._version(path))
        except (SessionError, OSError) as exc:
            return _Text(f"cannot read this session: {exc}", status_code=422)
        return _Html(render_session_body(view, self._parent_ref(view)), headers={"Cache-Control": "no-store"})

    def usage(self, request: Request) -> Response:
        since, until = _day(request.query_params.get("since")), _day(request.query_params.get("until"))
        paths = [summary.path for summary in self.catalog.sessions()]
        page = build_usage_page(paths, since, until)
        return _Html(environment().get_template("usage.html").render(u=page))

    def export(self, request: Request) -> Response:
        path = self._locate(request)
        if path is None:
            return _not_found()
        try:
            if self._is_big(path) and agent_of_ref(str(request.path_params["ref"])) is None:
                html = export_windowed_html(path, inline_images(self.blobs))  # lazy, as the page
            else:
                html = render_export(build_session_view(path, inline_images(self.blobs)))
        except (SessionError, OSError) as exc:
            return _Text(f"cannot read this session: {exc}", status_code=422)
        name = path.stem.encode("ascii", "replace").decode("ascii").replace('"', "_")
        return _Html(html, headers={"Content-Disposition": f'attachment; filename="{name}.html"'})

    def blob(self, request: Request) -> Response:
        digest = str(request.path_params["digest"])
        path = blob_file(self.blobs, digest) if _DIGEST.match(digest) else None
        if path is None:
            return _not_found()
        data = path.read_bytes()
        mime = sniff_raster_mime(data[:16])
        if mime is None:
            return _Text("not a raster image", status_code=415)
        return Response(
            data, media_type=mime, headers={"Cache-Control": "private, max-age=31536000, immutable"}
        )

    def static(self, request: Request) -> Response:
        name = str(request.path_params["name"])
        if name not in STATIC_FILES:
            return _not_found()
        return Response(static_file(name), media_type=STATIC_FILES[name] + "; charset=utf-8")


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None and text != "" else None
    except ValueError:
        return None


def _day(text: str | None) -> date | None:
    try:
        return date.fromisoformat(text) if text else None
    except ValueError:
        return None


def render_index(page: IndexPage, root: str, skipped: int = 0) -> str:
    """The index page (sessions by project, search results), from the shared templates;
    ``skipped``: how many files the scan could not read (issue 11 item 16)."""
    return environment().get_template("index.html").render(page=page, root=root, use_js=True, skipped=skipped)


class _Html(HTMLResponse):
    """HTML whose text may hold lone surrogates from a session (valid JSON, issue 11 item 5):
    they are sent as U+FFFD instead of failing to encode."""

    def render(self, content: Any) -> bytes | memoryview:
        return (
            content.encode(self.charset, DISPLAY_ERRORS)
            if isinstance(content, str)
            else super().render(content)
        )


class _Json(JSONResponse):
    """JSON whose lone surrogates (valid in a session file, unencodable as UTF-8) are sent as
    U+FFFD, as the pages show them (``_Text``), instead of failing the response."""

    def render(self, content: Any) -> bytes:
        text = json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        return text.encode("utf-8", DISPLAY_ERRORS)


class _Text(PlainTextResponse):
    def render(self, content: Any) -> bytes | memoryview:
        return (
            content.encode(self.charset, DISPLAY_ERRORS)
            if isinstance(content, str)
            else super().render(content)
        )


def _not_found() -> Response:
    return _Text("not found", status_code=404)


def create_app(
    sessions_root: Path | str,
    blobs_dir: Path | str | None = None,
    *,
    poll_ms: int = 2000,
    allowed_hosts: Sequence[str] = DEFAULT_ALLOWED_HOSTS,
    foreign_stores: Sequence[ForeignSessionStore] = (),
    windowed_bytes: int = WINDOWED_BYTES,
) -> Starlette:
    """The viewer application for ``sessions_root`` (blobs default to ``<root>/../blobs``).

    Only requests whose ``Host`` is in ``allowed_hosts`` are answered, so a web page cannot reach
    the viewer through DNS rebinding.
    """
    config = ViewerConfig(
        Path(sessions_root),
        Path(blobs_dir) if blobs_dir is not None else None,
        poll_ms,
        tuple(allowed_hosts),
        tuple(foreign_stores),
        windowed_bytes,
    )
    viewer = _Viewer(config)
    routes = [
        Route("/", viewer.index),
        Route("/session/{ref:path}", viewer.session),
        Route("/api/version/{ref:path}", viewer.version),
        Route("/api/body/{ref:path}", viewer.body),
        Route("/api/window/{ref:path}", viewer.window),
        Route("/api/rows/{ref:path}", viewer.rows),
        Route("/export/{ref:path}", viewer.export),
        Route("/usage", viewer.usage),
        Route("/blob/{digest}", viewer.blob),
        Route("/static/{name}", viewer.static),
        Route("/api/import/{ref:path}", viewer.import_session, methods=["POST"]),
    ]
    middleware = [
        Middleware(SecurityHeadersMiddleware),
        Middleware(TrustedHostMiddleware, allowed_hosts=list(config.allowed_hosts)),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        # Templates, Markdown and Pygments are compiled on first use (~0.2 s): not on a first page.
        threading.Thread(target=warm_up, daemon=True).start()
        yield
        if viewer.foreign is not None:
            viewer.foreign.close()  # the mirror is a private temporary directory

    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
    app.state.viewer = viewer
    return app
