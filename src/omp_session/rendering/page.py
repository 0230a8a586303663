"""Jinja2 rendering of the session page, its live-update fragment and the HTML export.

The viewer (:mod:`omp_session.web`) and the HTML export (:mod:`omp_session.export.html`) both render
through this module and its templates; neither imports the other. Templates and static files are
package data beside this module; autoescaping is always on, and the only ``Markup`` that reaches a
template comes from :mod:`omp_session.rendering.markdown` or Pygments.

Internal module (shared by the viewer and the export); not part of the public API.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from datetime import datetime, timezone
from importlib import resources

from jinja2 import Environment, PackageLoader
from jinja2.filters import do_urlencode
from markupsafe import Markup

from omp_session.rendering.entry_html import entry_html, url_quoted
from omp_session.rendering.format import format_count
from omp_session.rendering.markdown import highlight_code, lexer_for_path, pygments_css, render_markdown
from omp_session.rendering.view import SessionView

__all__ = [
    "csp_hash",
    "environment",
    "render_export",
    "render_session_body",
    "render_session_page",
    "static_file",
]

#: What the viewer serves under ``/static/``: every page of the viewer runs the one script
#: ``viewer.js`` (the whole page's and the windowed page's parts; each part does nothing on a page
#: without its data element), so no page loads a second script.
STATIC_FILES = {
    "viewer.css": "text/css",
    "viewer.js": "text/javascript",
    "highlight.css": "text/css",
}


#: Scripts kept as several source files: each source is one self-contained function expression,
#: so a script is their plain concatenation (no build step). The exports inline theirs: the whole
#: page's without the windowed parts, the windowed page's with the answers computed in the page
#: (``export_api.js``, before ``windowed.js``, which asks it) and without the whole page's part.
JOINED_SCRIPTS = {
    "viewer.js": ("common.js", "session.js", "windowed_tree.js", "windowed.js"),
    "export-page.js": ("common.js", "session.js"),
    "export-windowed.js": ("common.js", "export_api.js", "windowed_tree.js", "windowed.js"),
}


@functools.lru_cache(maxsize=1)
def environment() -> Environment:
    env = Environment(loader=PackageLoader("omp_session.rendering", "templates"), autoescape=True)
    # URL-quoting encodes to UTF-8, which a lone surrogate in an id cannot be (issue 11 item 5).
    env.filters["urlencode"] = lambda value: (
        url_quoted(value) if isinstance(value, str) else do_urlencode(value)
    )
    env.globals["entry"] = entry_html  # one entry's article (a function: see rendering.entry_html)
    env.filters["count_text"] = format_count  # not "count": that is Jinja's own (a length)
    return env


def warm_up() -> None:
    """Do once what a first page would otherwise pay for (about 0.2 s on a quiet machine): compile
    the templates, build the Markdown parser and compile Pygments' file-name patterns. The viewer
    runs it in a thread when it starts, so the first big session opens faster (issue 13 #2)."""
    for name in ("session_windowed.html", "session.html", "index.html"):
        environment().get_template(name)
    render_markdown("*warm* `up`\n\n```python\nx = 1\n```")
    lexer_for_path("warm-up.py")
    highlight_code("x = 1", "python")


@functools.lru_cache(maxsize=8)
def static_file(name: str) -> str:
    """The text of one static asset (a name of :data:`STATIC_FILES` or :data:`JOINED_SCRIPTS`;
    ``highlight.css`` is generated)."""
    if name == "highlight.css":
        return pygments_css()
    if name not in STATIC_FILES and name not in JOINED_SCRIPTS:
        raise KeyError(name)
    static = resources.files("omp_session.rendering").joinpath("static")
    parts = JOINED_SCRIPTS.get(name, (name,))
    return "".join(static.joinpath(part).read_text(encoding="utf-8") for part in parts)


def render_session_page(
    view: SessionView,
    ref: str,
    parent_ref: str | None,
    version: str,
    poll_ms: int,
    foreign: dict[str, str] | None = None,
) -> str:
    """The server's session page: linked assets, live updates on. ``foreign`` marks another agent's
    session (``agent``, ``source`` path, import ``token``)."""
    return (
        environment()
        .get_template("session.html")
        .render(
            v=view,
            ref=ref,
            parent_ref=parent_ref,
            version=version,
            poll_ms=poll_ms,
            live=True,
            use_js=True,
            foreign=foreign,
        )
    )


def render_session_body(view: SessionView, parent_ref: str | None) -> str:
    """Only the part of the page that changes when the session grows (for live updates)."""
    return environment().get_template("_session_root.html").render(v=view, parent_ref=parent_ref)


def csp_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def render_export(view: SessionView) -> str:
    """One self-contained page: CSS and script inline, images as data URLs, nothing fetched.

    A Content-Security-Policy allows exactly the inline script and style shipped here (by hash), so
    even markup that slipped past sanitising could not run a script or load anything remote.
    """
    css = static_file("viewer.css") + static_file("highlight.css")
    script = static_file("export-page.js")
    csp = (
        f"default-src 'none'; script-src {csp_hash(script)}; style-src {csp_hash(css)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    exported = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (
        environment()
        .get_template("session.html")
        .render(
            v=view,
            ref="",
            parent_ref=None,
            live=False,
            exported=exported,
            csp_meta=csp,
            inline_css=Markup(css),
            inline_js=Markup(script),
        )
    )
