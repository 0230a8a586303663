"""Markdown and code to safe HTML: markdown-it-py (raw HTML off), Pygments, then nh3 as a second guard.

Session content is untrusted (it holds whatever a model or a tool printed), so every path from text
to HTML goes through here or through Jinja's autoescaping; nothing else produces markup.

Internal module (part of the viewer, whose API is :mod:`omp_session.web`); not part of the public API.
"""

from __future__ import annotations

import functools
import json
import math
import re
from typing import Any

import nh3
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markupsafe import Markup, escape
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.util import ClassNotFound

from omp_session.format.codec import display_text
from omp_session.rendering.lexing import speed_up

_quote_json = json.encoder.encode_basestring  # json.dumps's quoting of a string (ensure_ascii=False)

__all__ = [
    "highlight_code",
    "highlight_json",
    "highlight_lines",
    "lexer_for_path",
    "pygments_css",
    "render_markdown",
]

#: Tags markdown-it can produce from CommonMark + tables + strikethrough (images become links).
_TAGS = {
    "a", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "li", "ol",
    "p", "pre", "s", "span", "strong", "table", "tbody", "td", "th", "thead", "tr", "ul",
}  # fmt: skip
_ATTRIBUTES = {"a": {"href", "title"}, "code": {"class"}, "span": {"class"}, "ol": {"start"}}
_URL_SCHEMES = {"http", "https", "mailto"}
_FORMATTER = HtmlFormatter(nowrap=True, classprefix="hl-")
#: Highlighting a megabyte of output costs seconds and helps nobody: plain text above this.
_MAX_HIGHLIGHT_CHARS = 200_000


def _image_as_link(
    self: RendererHTML, tokens: list[Token], idx: int, options: Any, env: Any
) -> str:  # pragma: no cover - signature fixed by markdown-it
    """Render ``![alt](url)`` as a plain link: remote images would leak that the page was opened."""
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env) or "image"
    src = token.attrGet("src") or ""
    return f'<a href="{escape(src)}">[image: {escape(alt)}]</a>'


@functools.lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    parser = MarkdownIt("commonmark", {"html": False, "highlight": _fence_highlight})
    parser.enable(["table", "strikethrough"])
    parser.add_render_rule("image", _image_as_link)
    return parser


@functools.lru_cache(maxsize=256)
def _lexer(name: str) -> Lexer | None:
    # Built once per language, tokenising with one expression per state (same tokens, fewer calls).
    try:
        return speed_up(get_lexer_by_name(name, stripnl=False, ensurenl=False))
    except ClassNotFound:
        return None


def _fence_highlight(code: str, lang: str, _attrs: str) -> str:
    lexer = _lexer(lang.strip().lower()) if lang.strip() else None
    if lexer is None or len(code) > _MAX_HIGHLIGHT_CHARS:
        return ""  # markdown-it escapes the code itself
    return str(highlight(code, lexer, _FORMATTER))


def render_markdown(text: str) -> Markup:
    """Markdown to sanitised HTML (raw HTML shown as text, only http/https/mailto links).

    >>> str(render_markdown("<b>hi</b> *there*"))
    '<p>&lt;b&gt;hi&lt;/b&gt; <em>there</em></p>\\n'
    """
    if type(text) is str and len(text) <= _CACHED_CHARS:
        return _markdown_cached(text)
    return _markdown(text)


#: Texts up to this long are rendered once per process and then remembered (a session repeats
#: its prompts, commands and the files it reads, and the HTML export draws every entry): the last
#: :data:`_CACHED_TEXTS` of each kind, some megabytes (a few tens if all were this long). Only a
#: plain ``str`` is remembered: a ``Markup`` equals the ``str`` of its text but must not get its
#: result (:func:`highlight_code` leaves a ``Markup`` as it is).
_CACHED_CHARS = 4_000
_CACHED_TEXTS = 2_048


def _markdown(text: str) -> Markup:
    text = display_text(text)  # lone surrogates shown as U+FFFD (issue 11 item 5)
    if _MARKUP.search(text) is None:
        return Markup(_prose_html(text))
    return Markup(_cleaner().clean(_parser().render(text)))


_markdown_cached = functools.lru_cache(maxsize=_CACHED_TEXTS)(_markdown)


#: What can make Markdown of a text more than its paragraphs: a character that starts inline markup,
#: an entity or raw HTML (``&`` and ``<`` also need escaping), whitespace other than a space or a
#: line break and control characters (markdown-it and the sanitiser treat those specially), a line
#: that could open a block (anything but a letter first: a list, a quote, a heading, a fence, an
#: indented code block, a setext underline, a table row) or end in a hard break (trailing spaces).
_MARKUP = re.compile(r"[\\`*_\[\]<&~|]|[^\S \n]|[\x00-\x09\x0b-\x1f\x7f-\x9f]|^[^\w\n]|^\d| $", re.MULTILINE)
_BLANK_LINES = re.compile(r"\n{2,}")


def _prose_html(text: str) -> str:
    """What markdown-it and then the sanitiser make of a text without markup (no match of
    :data:`_MARKUP`), without parsing it: its paragraphs, ``>`` escaped (the sanitiser writes the
    ``&quot;`` markdown-it makes of ``"`` back as ``"``). Most prompts and replies are such prose; a
    property test holds this to the parser's output."""
    return "".join(
        f"<p>{paragraph.replace('>', '&gt;')}</p>\n"
        for paragraph in _BLANK_LINES.split(text.strip("\n"))
        if paragraph
    )


@functools.lru_cache(maxsize=1)
def _cleaner() -> nh3.Cleaner:
    """The sanitiser, built once: ``nh3.clean`` converts its allow-lists on every call, a third of
    its time on the short texts of a session (issue 30's export of 50,000 entries)."""
    return nh3.Cleaner(
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes=_URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )


def highlight_code(code: str, language: str | None) -> Markup:
    """``code`` as escaped HTML, with Pygments classes when ``language`` is known (no ``<pre>``);
    a short text's result is remembered (see :data:`_CACHED_CHARS`)."""
    if type(code) is str and len(code) <= _CACHED_CHARS and (language is None or type(language) is str):
        return _highlight_cached(code, language)
    return _highlight(code, language)


def _highlight(code: str, language: str | None) -> Markup:
    lexer = _lexer(language) if language else None
    if lexer is None or len(code) > _MAX_HIGHLIGHT_CHARS:
        return escape(code)
    return Markup(highlight(code, lexer, _FORMATTER))


_highlight_cached = functools.lru_cache(maxsize=_CACHED_TEXTS)(_highlight)


def highlight_json(value: Any) -> Markup:
    """``value`` as indented JSON (``json.dumps(value, indent=2, ensure_ascii=False,
    default=str)``), highlighted: what :func:`highlight_code` makes of that text with the ``json``
    lexer, written while walking the value. A session has thousands of tool arguments and details
    shown this way, and the indenting encoder and the lexer are pure Python (a property test holds
    the walk to the lexer's output); values JSON cannot hold as they are (``NaN``, keys that are
    not strings, other types) and texts too long to highlight take that reference path."""
    writer = _JsonWriter()
    try:
        writer.value(value, 0)
    except (_NotPlainJson, RecursionError):
        writer.size = _MAX_HIGHLIGHT_CHARS + 1
    if writer.size > _MAX_HIGHLIGHT_CHARS:
        return highlight_code(json.dumps(value, indent=2, ensure_ascii=False, default=str), "json")
    writer.close()
    return Markup("".join(writer.out))


class _NotPlainJson(Exception):
    """A value :class:`_JsonWriter` leaves to the reference path."""


#: The escaping of Pygments' HTML formatter: quotes stay as they are.
_HTML_TEXT = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


class _JsonWriter:
    """The HTML Pygments' formatter writes for the JSON lexer's tokens (``nowrap``): a span per
    run of tokens of one class (``hl-p`` for ``[],``), closed at every line break, a line break
    after the last line."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.open = ""
        self.size = 0

    def emit(self, css: str, text: str) -> None:
        """``text`` (escaped) in a span of class ``css``; :attr:`size` counts the JSON text."""
        if css != self.open:
            if self.open:
                self.out.append("</span>")
            self.out.append(f'<span class="hl-{css}">')
            self.open = css
        self.out.append(text)

    def close(self) -> None:
        if self.open:
            self.out.append("</span>")
            self.open = ""
        self.out.append("\n")

    def plain(self, css: str, text: str) -> None:
        """``text`` that needs no escaping (punctuation, numbers, keywords, indents)."""
        self.size += len(text)
        self.emit(css, text)

    def string(self, css: str, text: str) -> None:
        quoted = _quote_json(text)
        self.size += len(quoted)
        self.emit(css, quoted.translate(_HTML_TEXT))

    def value(self, value: Any, level: int) -> None:
        kind = type(value)
        if kind is str:
            self.string("s2", value)
        elif value is None or kind is bool:
            self.plain("kc", "null" if value is None else "true" if value else "false")
        elif kind is int:
            self.plain("mi", int.__repr__(value))
        elif kind is float:
            if not math.isfinite(value):
                raise _NotPlainJson  # json.dumps writes NaN and Infinity, which the lexer marks as errors
            self.plain("mf", float.__repr__(value))
        elif kind is dict or kind is list:
            self.container(value, level)
        else:
            raise _NotPlainJson

    def container(self, value: dict[Any, Any] | list[Any], level: int) -> None:
        opening, closing = ("{", "}") if type(value) is dict else ("[", "]")
        if not value:
            self.plain("p", opening + closing)
            return
        self.plain("p", opening)
        inner = "  " * (level + 1)
        first = True
        members = value.items() if isinstance(value, dict) else ((None, item) for item in value)
        for key, item in members:
            if not first:
                self.plain("p", ",")
            first = False
            self.close()
            self.size += 1  # the line break
            self.plain("w", inner)
            if isinstance(value, dict):
                if type(key) is not str:
                    raise _NotPlainJson  # json.dumps turns such keys into strings its own way
                self.string("nt", key)
                self.plain("p", ":")
                self.plain("w", " ")
            self.value(item, level + 1)
        self.close()
        self.size += 1
        if level:
            self.plain("w", "  " * level)
        self.plain("p", closing)


def highlight_lines(lines: list[str], language: str | None) -> list[Markup]:
    """Each of ``lines`` as HTML, highlighted as one text and then split: a token that spans
    lines (a ``/** … */`` comment, a triple-quoted string) is coloured as what it is, where
    highlighting each line alone shows its ends as errors. Pygments' HTML formatter closes and
    reopens its spans at every line break, so every piece is balanced HTML on its own. For the
    lines of a diff: a lexer error is shown as plain text (see below)."""
    if not lines:
        return []
    text = "\n".join(lines)
    lexer = _lexer(language) if language else None
    if lexer is None or len(text) > _MAX_HIGHLIGHT_CHARS:
        return [escape(line) for line in lines]
    pieces = str(highlight(text, lexer, _FORMATTER)).split("\n")
    if len(pieces) > len(lines) and not pieces[-1]:
        pieces.pop()  # a lexer that ends the text with a line break
    if len(pieces) != len(lines):  # never seen; plain text rather than lines out of step
        return [escape(line) for line in lines]
    # The lines are a fragment of a file (a hunk may start inside a comment): what the lexer
    # calls an error there is missing context, not an error in the file, so it is not boxed.
    return [Markup(piece.replace('<span class="hl-err">', "<span>")) for piece in pieces]


def lexer_for_path(path: str) -> str | None:
    """A Pygments lexer alias for a file name (``"src/app.py"`` → ``"python"``), or ``None``."""
    return _lexer_for_name(path.rsplit("/", 1)[-1])


@functools.lru_cache(maxsize=512)
def _lexer_for_name(name: str) -> str | None:
    # Pygments matches the name against every lexer's patterns (its first call also compiles them:
    # about 0.1 s), and a session names the same few files again and again.
    try:
        lexer = get_lexer_for_filename(name)
    except ClassNotFound:
        return None
    aliases = lexer.aliases
    return aliases[0] if aliases else None


#: Pygments styles of the two colour schemes: readable on white, and on the dark theme's near-black
#: (GitHub's dark palette, the one viewer.css's dark mode uses).
LIGHT_STYLE = "default"
DARK_STYLE = "github-dark"


def _style_rules(style: str) -> list[str]:
    # Only the rules scoped to .code: Pygments also emits global pre/td rules we do not want.
    formatter = HtmlFormatter(classprefix="hl-", style=style)
    css = str(formatter.get_style_defs(".code"))  # type: ignore[no-untyped-call]  # untyped in the stubs
    return [line for line in css.splitlines() if line.startswith(".code")]


@functools.lru_cache(maxsize=1)
def pygments_css() -> str:
    """Stylesheet for the classes :func:`highlight_code` emits: the light style, and the dark one
    when the system asks for dark mode. Each scheme's rules apply only in that scheme, so no light
    rule (a border, a background, bold) lingers under the dark colours; the dark style's own page
    background is left out, the theme's card colour stays."""
    light = _style_rules(LIGHT_STYLE)
    dark = [rule for rule in _style_rules(DARK_STYLE) if not rule.startswith(".code {")]
    return (
        "@media not all and (prefers-color-scheme: dark) {\n"
        + "\n".join(light)
        + "\n}\n@media (prefers-color-scheme: dark) {\n"
        + "\n".join(dark)
        + "\n}\n"
    )
