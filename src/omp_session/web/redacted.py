"""The "redacted" banner of ``serve --redact``: every HTML page says that it shows redacted copies
and what was masked (docs/sharing.md).

Internal module (part of the viewer, whose API is :mod:`omp_session.web`); not part of the public API.
"""

from __future__ import annotations

import html
import re

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["RedactedBannerMiddleware", "banner_html"]

_BODY_OPEN = re.compile(rb"<body\b[^>]*>")


def banner_html(lines: list[str]) -> bytes:
    """The banner element: a heading line and the summary lines of the redaction report."""
    items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    return (
        '<div class="redacted-banner" role="status" id="redacted-banner"><strong>Redacted</strong>: '
        f"these are redacted copies of the sessions.<ul>{items}</ul></div>"
    ).encode()


class RedactedBannerMiddleware:
    """Inserts the banner right after ``<body …>`` of every HTML response."""

    def __init__(self, app: ASGIApp, banner: bytes) -> None:
        self.app = app
        self.banner = banner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        chunks: list[bytes] = []

        async def capture(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers", []))
                if not headers.get(b"content-type", b"").startswith(b"text/html"):
                    await send(message)
                    return
                start = message
                return
            if start is None:
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body"):
                return
            body = b"".join(chunks)
            body = _BODY_OPEN.sub(lambda m: m.group(0) + self.banner, body, count=1)
            kept: list[tuple[bytes, bytes]] = [
                (k, v) for k, v in start.get("headers", []) if k != b"content-length"
            ]
            kept.append((b"content-length", str(len(body)).encode()))
            await send({**start, "headers": kept})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, capture)
