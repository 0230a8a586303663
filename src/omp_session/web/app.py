"""The read-only web viewer: a Starlette application over a sessions root and a blob store.

Routes (all GET; nothing here writes a file):

* ``/``                        index: sessions grouped by project, search, paging
* ``/session/<ref>``           one session: tree panel and transcript
* ``/api/version/<ref>``       ``{"version": …}`` that changes when the file does (live updates)
* ``/export/<ref>``            the self-contained HTML export, as a download
* ``/usage``                   usage charts and tables (``?since=YYYY-MM-DD&until=…``)
* ``/api/window/<ref>``        a window of a session's transcript (``rendering.windowed``)
* ``/api/rows/<ref>``          rows of a session's tree
* ``/blob/<sha256>``           an image from the blob store (PNG, JPEG, GIF or WebP only)
* ``/static/<name>``           the stylesheet and the page script
* ``POST /api/import/<ref>``   import another agent's session into the sessions root: the viewer's
  only write, refused unless same-origin and carrying the page's token (web/foreign.py)

``<ref>`` of another agent's session is ``@<agent>/<project>/<file>.jsonl`` (a converted copy in a
private mirror, see :mod:`omp_session.web.foreign`).

``<ref>`` is a path relative to the root (``<project dir>/<file>.jsonl``); see
:func:`omp_session.web.catalog.resolve_ref` for what is refused.

Every session, of any size, is shown a window at a time (a small one is one window): the session
page and its APIs are in :mod:`omp_session.web.windowed_routes`, the import in
:mod:`omp_session.web.import_route`; responses in :mod:`omp_session.web.responses`.

Internal module (part of the viewer, whose API is :mod:`omp_session.web`); not part of the public API.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from omp_session.errors import CorruptSessionError, SessionError
from omp_session.importers.base import ForeignSessionStore
from omp_session.rendering.images import blob_file, inline_images, sniff_raster_mime
from omp_session.rendering.page import STATIC_FILES, environment, static_file, warm_up
from omp_session.rendering.windowed_export import export_windowed_html
from omp_session.store import SessionStorage
from omp_session.store.paths import blobs_dir_near
from omp_session.store.regular import read_regular
from omp_session.web.catalog import SessionCatalog, SessionSummary
from omp_session.web.foreign import ForeignMirror, agent_of_ref
from omp_session.web.import_route import ForeignImport
from omp_session.web.index_search import CatalogSearch
from omp_session.web.index_view import IndexPage, build_index
from omp_session.web.responses import NO_STORE, Html, Json, Text, day_param, not_found, unreadable
from omp_session.web.security import SecurityHeadersMiddleware
from omp_session.web.session_cache import RecentlyUsed, session_version
from omp_session.web.usage_view import build_usage_page
from omp_session.web.windowed_routes import WindowedRoutes

__all__ = ["DEFAULT_ALLOWED_HOSTS", "ViewerConfig", "create_app", "default_blobs_dir"]

DEFAULT_ALLOWED_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
_DIGEST = re.compile(r"^[0-9a-f]{64}$")
#: Rendered index pages kept (a search's page is ~200 KB: a few MB in all).
_INDEX_PAGES = 48


def default_blobs_dir(sessions_root: Path) -> Path:
    """The blob store beside the sessions root (see :func:`omp_session.store.paths.blobs_dir_near`)."""
    return blobs_dir_near(sessions_root)


#: Threads for searches and the usage page (the rest of the server keeps its own pool).
_HEAVY_THREADS = 3
#: Threads for every other request. Requests are Python work under one lock (the GIL), so more
#: threads add no throughput; with 40 (anyio's default) a search or the usage page got 1/40th of
#: the process and was not done within 30 s under 200 clients (issue 25's load test).
_REQUEST_THREADS = 4


@dataclass(frozen=True)
class ViewerConfig:
    """What the viewer serves: sessions under ``sessions_root``, images from ``blobs_dir``."""

    sessions_root: Path
    blobs_dir: Path | None = None
    poll_ms: int = 2000
    allowed_hosts: Sequence[str] = DEFAULT_ALLOWED_HOSTS
    #: Other agents' stores shown beside omp's sessions (none by default; ``serve`` passes them).
    foreign_stores: Sequence[ForeignSessionStore] = ()
    #: Where the sessions live: ``None`` for files under ``sessions_root``, else a database store
    #: whose rows under that root are served (``serve --store``).
    storage: SessionStorage | None = None


class _Viewer:
    """Request handlers sharing one catalog (the sessions' pages: :class:`WindowedRoutes`)."""

    def __init__(self, config: ViewerConfig) -> None:
        self.root = Path(config.sessions_root).absolute()
        blobs = config.blobs_dir if config.blobs_dir is not None else default_blobs_dir(self.root)
        self.blobs = Path(blobs).absolute()
        self.poll_ms = config.poll_ms
        self.storage = config.storage
        self.catalog = SessionCatalog(self.root, config.storage)
        self.search = CatalogSearch(storage=config.storage)
        self._usage_pages: RecentlyUsed[str] = RecentlyUsed(4)
        #: Rendered index pages (plain, paged, by project, searches) of the current listing.
        self._index_pages: RecentlyUsed[str] = RecentlyUsed(_INDEX_PAGES)
        #: Threads for work that reads every session (searches, the usage page).
        from anyio import CapacityLimiter  # starlette's own dependency (the [web] extra)

        self._heavy = CapacityLimiter(_HEAVY_THREADS)
        self.windowed = WindowedRoutes(
            self.blobs, self._locate, self.poll_ms, config.storage, self.catalog.parent_ref
        )
        self.foreign = ForeignMirror(config.foreign_stores) if config.foreign_stores else None
        self.importer = ForeignImport(self.foreign, self.root, self.catalog)

    # -- helpers -------------------------------------------------------------------------------

    def _locate(self, request: Request) -> Path | None:
        ref = str(request.path_params["ref"])
        if agent_of_ref(ref) is not None:
            return self.foreign.locate(ref) if self.foreign is not None else None
        return self.catalog.locate(ref)

    def _listing(self) -> tuple[list[SessionSummary], str, int]:
        """Every session the index lists (a shared list: not to be changed), a key that changes
        whenever the list may (the catalogs' generations) and how many files the scan skipped."""
        listing = self.catalog.listing()
        summaries, key = listing.summaries, str(listing.generation)
        if self.foreign is not None:
            foreign, foreign_key = self.foreign.listing()
            summaries = sorted(
                [*summaries, *foreign],
                key=lambda s: (s.last_activity, s.modified),
                reverse=True,
            )
            key = f"{key} {foreign_key}"
        return summaries, key, listing.skipped

    # -- routes --------------------------------------------------------------------------------

    async def index_route(self, request: Request) -> Response:
        """``/``: a page rendered already is answered at once; one to render waits for the
        rendering under way, or renders it: a search on the viewer's few heavy-work threads, so
        many clients searching at once wait there (without holding a thread) instead of starving
        every other page of the server's thread pool (issue 25's load test)."""
        from anyio import to_thread

        key, render = await to_thread.run_sync(self._index_request, request)
        heavy = bool(request.query_params.get("q", "").strip())
        return Html(await self._kept_or_built(self._index_pages, key, render, heavy))

    async def usage_route(self, request: Request) -> Response:
        """``/usage`` reads every session's usage: rendered on the heavy-work threads, as searches."""
        from anyio import to_thread

        key, render = await to_thread.run_sync(self._usage_request, request)
        return Html(await self._kept_or_built(self._usage_pages, key, render, True))

    async def _kept_or_built(
        self, pages: RecentlyUsed[str], key: tuple[str, str], render: Callable[[], str], heavy: bool
    ) -> str:
        from anyio import to_thread

        page = pages.kept(key)
        if page is not None:
            return page
        # Waiting for another request's rendering takes no heavy-work thread (only a build does).
        limiter = self._heavy if heavy and not pages.building(key) else None
        return await to_thread.run_sync(pages.get, key, render, limiter=limiter)

    def _index_request(self, request: Request) -> tuple[tuple[str, str], Callable[[], str]]:
        """The key of the index page asked for and how to render it."""
        query = request.query_params.get("q", "").strip()[:200]
        project = request.query_params.get("project")
        try:
            page_number = int(request.query_params.get("page", "1"))
        except ValueError:
            page_number = 1
        summaries, listed, skipped = self._listing()

        def render() -> str:
            page = build_index(summaries, self.search, query, project, page_number)
            return render_index(page, str(self.root), skipped)

        # One rendering per page and listing, shared by every request for it until a session
        # changes (a new listing key): 200 clients asking for the index at once render it once.
        return (listed, f"{page_number}\n{project!r}\n{query}"), render

    def session(self, request: Request) -> Response:
        path = self._locate(request)
        if path is None:
            return not_found(request.url.path)
        ref = str(request.path_params["ref"])
        foreign = self.importer.page_facts(path, ref)
        try:
            return self.windowed.page(path, ref, session_version(path, self.storage), foreign)
        except (SessionError, OSError) as exc:
            return unreadable(exc)

    def version(self, request: Request) -> Response:
        path = self._locate(request)
        if path is None:
            return not_found()
        return Json({"version": session_version(path, self.storage)}, headers=NO_STORE)

    def _usage_request(self, request: Request) -> tuple[tuple[str, str], Callable[[], str]]:
        """The key of the usage page asked for and how to render it: once per range and listing,
        however many clients ask at once (the page reads every session's usage: seconds over
        1,000 sessions on a loaded machine)."""
        params = request.query_params
        since, until = day_param(params.get("since")), day_param(params.get("until"))
        listing = self.catalog.listing()
        paths = [summary.path for summary in listing.summaries]

        def render() -> str:
            page = build_usage_page(paths, since, until, self.storage)
            return environment().get_template("usage.html").render(u=page)

        return (f"{since}|{until}", str(listing.generation)), render

    def export(self, request: Request) -> Response:
        path = self._locate(request)
        if path is None:
            return not_found(request.url.path)
        try:
            html = export_windowed_html(path, inline_images(self.blobs), storage=self.storage)
        except (SessionError, OSError) as exc:
            return unreadable(exc)
        name = path.stem.encode("ascii", "replace").decode("ascii").replace('"', "_")
        return Html(html, headers={"Content-Disposition": f'attachment; filename="{name}.html"'})

    def blob(self, request: Request) -> Response:
        digest = str(request.path_params["digest"])
        path = blob_file(self.blobs, digest) if _DIGEST.match(digest) else None
        if path is None:
            return not_found()
        try:
            data = read_regular(path)
        except (OSError, CorruptSessionError):
            return not_found()
        mime = sniff_raster_mime(data[:16])
        if mime is None:
            return Text("not a raster image", status_code=415)
        return Response(
            data, media_type=mime, headers={"Cache-Control": "private, max-age=31536000, immutable"}
        )

    def static(self, request: Request) -> Response:
        name = str(request.path_params["name"])
        if name not in STATIC_FILES:
            return not_found()
        return Response(static_file(name), media_type=STATIC_FILES[name] + "; charset=utf-8")


def render_index(page: IndexPage, root: str, skipped: int = 0) -> str:
    """The index page (sessions by project, search results), from the shared templates;
    ``skipped``: how many files the scan could not read (issue 11 item 16)."""
    return environment().get_template("index.html").render(page=page, root=root, use_js=True, skipped=skipped)


def create_app(
    sessions_root: Path | str,
    blobs_dir: Path | str | None = None,
    *,
    poll_ms: int = 2000,
    allowed_hosts: Sequence[str] = DEFAULT_ALLOWED_HOSTS,
    foreign_stores: Sequence[ForeignSessionStore] = (),
    banner_lines: Sequence[str] | None = None,
    storage: SessionStorage | None = None,
) -> Starlette:
    """The viewer application for ``sessions_root`` (blobs default to ``<root>/../blobs``).

    Only requests whose ``Host`` is in ``allowed_hosts`` are answered, so a web page cannot reach
    the viewer through DNS rebinding. ``banner_lines`` (``serve --redact``) puts the "redacted"
    banner with those lines on every page. ``storage``: serve the rows of that store under
    ``sessions_root`` instead of files.
    """
    config = ViewerConfig(
        Path(sessions_root),
        Path(blobs_dir) if blobs_dir is not None else None,
        poll_ms,
        tuple(allowed_hosts),
        tuple(foreign_stores),
        storage,
    )
    viewer = _Viewer(config)
    routes = [
        Route("/", viewer.index_route),
        Route("/session/{ref:path}", viewer.session),
        Route("/api/version/{ref:path}", viewer.version),
        Route("/api/window/{ref:path}", viewer.windowed.window),
        Route("/api/rows/{ref:path}", viewer.windowed.rows),
        Route("/export/{ref:path}", viewer.export),
        Route("/usage", viewer.usage_route),
        Route("/blob/{digest}", viewer.blob),
        Route("/static/{name}", viewer.static),
        Route("/api/import/{ref:path}", viewer.importer.handle, methods=["POST"]),
    ]
    middleware = [
        Middleware(SecurityHeadersMiddleware),
        Middleware(TrustedHostMiddleware, allowed_hosts=list(config.allowed_hosts)),
    ]
    if banner_lines is not None:
        from omp_session.web.redacted import RedactedBannerMiddleware, banner_html

        middleware.append(Middleware(RedactedBannerMiddleware, banner=banner_html(list(banner_lines))))

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        # Templates, Markdown and Pygments are compiled on first use (~0.2 s): not on a first page.
        threading.Thread(target=warm_up, daemon=True).start()
        from anyio import to_thread

        to_thread.current_default_thread_limiter().total_tokens = _REQUEST_THREADS
        yield
        if viewer.foreign is not None:
            viewer.foreign.close()  # the mirror is a private temporary directory

    async def unknown_address(request: Request, _exc: Exception) -> Response:
        return not_found(request.url.path)

    app = Starlette(
        routes=routes, middleware=middleware, lifespan=lifespan, exception_handlers={404: unknown_address}
    )
    app.state.viewer = viewer
    return app
