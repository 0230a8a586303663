"""The viewer's responses and query-parameter parsing, shared by its routes.

A session may hold lone surrogate escapes (``"\\ud83d"``: valid JSON, what omp writes for a cut
emoji; issue 11 item 5). They cannot be encoded as UTF-8, so every response carrying session text
sends them as U+FFFD, as the pages show them, instead of failing with HTTP 500.

Internal module (part of the viewer, whose API is :mod:`omp_session.web`); not part of the public API.
"""

from __future__ import annotations

import json
from datetime import date
from typing import Any

from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response

from omp_session.format.codec import DISPLAY_ERRORS
from omp_session.rendering.page import environment

__all__ = ["NO_STORE", "Html", "Json", "Text", "day_param", "int_param", "not_found", "unreadable"]

#: The headers of an answer that changes with the file (live updates, windows, rows).
NO_STORE = {"Cache-Control": "no-store"}


class Html(HTMLResponse):
    """HTML whose text may hold lone surrogates from a session: sent as U+FFFD."""

    def render(self, content: Any) -> bytes | memoryview:
        return (
            content.encode(self.charset, DISPLAY_ERRORS)
            if isinstance(content, str)
            else super().render(content)
        )


class Json(JSONResponse):
    """JSON whose lone surrogates (valid in a session file, unencodable as UTF-8) are sent as
    U+FFFD, as the pages show them, instead of failing the response."""

    def render(self, content: Any) -> bytes:
        text = json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        return text.encode("utf-8", DISPLAY_ERRORS)


class Text(PlainTextResponse):
    """Plain text (an error's message may quote a session's text): lone surrogates as U+FFFD."""

    def render(self, content: Any) -> bytes | memoryview:
        return (
            content.encode(self.charset, DISPLAY_ERRORS)
            if isinstance(content, str)
            else super().render(content)
        )


#: Why a page was not found, by what its address asked for (the page says it, not only "404").
_REASONS = {
    "/session/": "No session under the viewer's root has this id or file name; "
    "it may have been moved or deleted.",
    "/export/": "No session under the viewer's root has this id or file name: nothing to export.",
}


def not_found(path: str = "") -> Response:
    """404 as a page in the viewer's style, naming the address asked for (escaped by the template:
    the address is whatever a link or a person typed)."""
    prefix = next((prefix for prefix in _REASONS if path.startswith(prefix)), None)
    reason = _REASONS[prefix] if prefix is not None else ""
    # Only a bare id or file name is repeated: an address through directories may name what lies
    # outside the root (a symlink, ``..``), and the answer must say nothing of it.
    ref = path.removeprefix(prefix) if prefix is not None else None
    shown = path if ref is not None and "/" not in ref and ref not in ("", ".", "..") else ""
    page = environment().get_template("not_found.html").render(path=shown, reason=reason)
    return Html(page, status_code=404)


def unreadable(error: Exception) -> Response:
    """The answer for a session the library refused to read (damaged, vanished): 422, its reason."""
    return Text(f"cannot read this session: {error}", status_code=422)


def int_param(text: str | None) -> int | None:
    """A query parameter as an integer; ``None`` when absent, empty or not a number."""
    try:
        return int(text) if text is not None and text != "" else None
    except ValueError:
        return None


def day_param(text: str | None) -> date | None:
    """A query parameter as a ``YYYY-MM-DD`` day; ``None`` when absent or not a day."""
    try:
        return date.fromisoformat(text) if text else None
    except ValueError:
        return None
