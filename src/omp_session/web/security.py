"""Request filtering and response headers shared by every route of the viewer.

* Only ``GET`` and ``HEAD`` are answered, except ``POST /api/import/…`` (importing another agent's
  session: the viewer's one write, which the route itself guards with a token and an Origin check).
* A raw path holding an encoded separator or NUL (``%2f``, ``%5c``, ``%00``) is refused before
  routing, so ``a%2F..%2Fb`` can never be decoded into a path that names another directory.
* Every response, an internal error's 500 included, carries a strict Content-Security-Policy
  (scripts and styles from this server only, images from it or ``data:``), ``nosniff``, no
  referrer and no framing.

Internal module (part of the viewer, whose API is :mod:`omp_session.web`); not part of the public API.
"""

from __future__ import annotations

import logging

from starlette.datastructures import MutableHeaders
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["CONTENT_SECURITY_POLICY", "SecurityHeadersMiddleware"]

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Resource-Policy": "same-origin",
}
_ENCODED_SEPARATORS = (b"%2f", b"%5c", b"%00")
_log = logging.getLogger("omp_session.web")
IMPORT_PREFIX = "/api/import/"


class SecurityHeadersMiddleware:
    """Pure ASGI middleware (no response buffering, works with any route)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw = bytes(scope.get("raw_path") or scope.get("path", "").encode("utf-8", "surrogateescape")).lower()
        refusal = None
        import_post = scope.get("method") == "POST" and scope.get("path", "").startswith(IMPORT_PREFIX)
        if scope.get("method") not in ("GET", "HEAD") and not import_post:
            refusal = PlainTextResponse(
                "the viewer is read-only", status_code=405, headers={"Allow": "GET, HEAD"}
            )
        elif any(marker in raw for marker in _ENCODED_SEPARATORS) or "\\" in scope.get("path", ""):
            refusal = PlainTextResponse("encoded separators are not allowed in paths", status_code=400)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in _HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        if refusal is not None:
            await refusal(scope, receive, send_with_headers)
            return
        started = False

        async def send_tracking(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send_with_headers(message)

        try:
            await self.app(scope, receive, send_tracking)
        except Exception:
            # Starlette's own error page is sent from outside this middleware, without the headers
            # above (issue 11 item 15): answer here, log the traceback, and send no details.
            _log.exception("internal error while answering %s", scope.get("path"))
            if started:
                raise
            failure = PlainTextResponse("internal error (see the server log)", status_code=500)
            await failure(scope, receive, send_with_headers)
