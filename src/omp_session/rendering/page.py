"""The templates, static files and script data shared by the viewer's pages and the HTML export.

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
import json
from importlib import resources
from typing import Any

from jinja2 import Environment, PackageLoader
from jinja2.filters import do_urlencode
from markupsafe import Markup

from omp_session.rendering.entry_html import entry_html, url_quoted
from omp_session.rendering.format import format_count
from omp_session.rendering.markdown import highlight_code, lexer_for_path, pygments_css, render_markdown

__all__ = ["csp_hash", "environment", "script_json", "static_file"]

#: What the viewer serves under ``/static/``: every page of the viewer runs the one script
#: ``viewer.js`` (the session page's part does nothing on a page without its data element), so no
#: page loads a second script.
STATIC_FILES = {
    "viewer.css": "text/css",
    "viewer.js": "text/javascript",
    "highlight.css": "text/css",
}


#: Scripts kept as several source files: each source is one self-contained function expression,
#: so a script is their plain concatenation (no build step). The export inlines the viewer's
#: session script with the answers computed in the page (``export_api.js``, before
#: ``windowed.js``, which asks it) instead of the server's.
JOINED_SCRIPTS = {
    "viewer.js": ("common.js", "windowed_tree.js", "windowed.js"),
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
    runs it in a thread when it starts, so the first session opens faster (issue 13 #2)."""
    for name in ("session_windowed.html", "index.html"):
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


def csp_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def script_json(value: Any) -> Markup:
    """JSON safe to embed in ``<script type="application/json">``: ``<``, ``>``, ``&`` and line
    separators are escaped, so no string in a session can close the script element."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(raw, escaped)
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return Markup(text)
