"""One entry (an :class:`~omp_session.rendering.entry_views.EntryView`) as the HTML of the viewer's
pages and the HTML export: the ``<article>`` with its header and blocks.

Every page draws its entries through :func:`entry_html` (the session page's templates call it as
``entry(e)``). It is plain Python rather than a Jinja macro: a macro call costs more than the markup
it writes, and the HTML export draws 50,000 entries with several blocks each (issue 30 item 3).
Escaping is as strict as the templates' autoescaping: every string from the view goes through
:func:`markupsafe.escape`, and only the ``Markup`` of the blocks (sanitised Markdown, highlighted
code, escaped text, from :mod:`omp_session.rendering.markdown`) is written as it is.

Internal module (shared by the viewer and the export); not part of the public API.
"""

from __future__ import annotations

from jinja2.filters import do_urlencode
from markupsafe import Markup, escape

from omp_session.format.codec import display_text
from omp_session.rendering.blocks import Block
from omp_session.rendering.entry_views import EntryView

__all__ = ["entry_html", "url_quoted"]

_SIGNS = {"add": "+", "del": "-", "hunk": "@@"}


def _text(value: object) -> str:
    """``str(markupsafe.escape(value))``: a plain string's five characters replaced without
    making a ``Markup`` of it (an export draws half a million of them), anything else (the
    ``Markup`` of the blocks, which stays as it is) through :func:`markupsafe.escape`. A property
    test holds the two to the same text."""
    if type(value) is not str:
        return str(escape(value))
    return (
        value.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("'", "&#39;")
        .replace('"', "&#34;")
    )


def url_quoted(value: str) -> str:
    """``value`` quoted for a URL, as Jinja's ``urlencode`` filter quotes a string (``/`` kept),
    lone surrogates shown as U+FFFD first (UTF-8 cannot hold them, issue 11 item 5)."""
    return do_urlencode(display_text(value))


def _block(b: Block, out: list[str]) -> None:
    kind = b.kind
    if kind == "markdown":
        out.append(f'<div class="md">{_text(b.html)}</div>')
    elif kind == "thinking":
        out.append(
            f'<details class="thinking"><summary><span class="cap">Thinking</span> <span class="dim">'
            f'{_text(b.title)}</span> <span class="preview">{_text(b.preview)}</span></summary>'
            f'<div class="md">{_text(b.html)}</div></details>'
        )
    elif kind == "toolcall":
        out.append(
            f'<details class="toolcall"><summary><span class="cap">⚙ {_text(b.title)}</span> '
            f'<code class="hint">{_text(b.detail)}</code></summary><div class="inner">'
        )
        for child in b.children:
            _block(child, out)
        out.append("</div></details>")
    elif kind == "diff":
        out.append(f'<div class="codeblock diffblock"><div class="cap">{_text(b.title)}')
        if b.detail:
            out.append(f' <span class="dim">· {_text(b.detail)}</span>')
        out.append("</div>")
        if b.rows:
            out.append('<table class="code diff">')
            out.extend(
                f'<tr class="d-{_text(cls)}"><td class="ln">{_text(old)}</td><td class="ln">{_text(new)}'
                f'</td><td class="sg">{_SIGNS.get(cls, "")}</td><td class="dl">{_text(html)}</td></tr>'
                for cls, old, new, html in b.rows
            )
            out.append("</table>")
        out.append("</div>")
    elif kind == "code":
        title = f'<div class="cap">{_text(b.title)}</div>' if b.title else ""
        out.append(f'<div class="codeblock">{title}<pre class="code">{_text(b.html)}</pre></div>')
    elif kind == "json":
        shown = "" if b.collapsed else " open"
        out.append(
            f'<details class="json"{shown}><summary><span class="cap">{_text(b.title)}</span></summary>'
            f'<pre class="code">{_text(b.html)}</pre></details>'
        )
    elif kind == "output":
        if b.lines == 0:
            out.append('<div class="note">(no output)</div>')
            return
        shown = "" if b.collapsed else " open"
        lines = f"{b.lines} line{'s' if b.lines != 1 else ''}"
        preview = f'<pre class="preview">{_text(b.preview)}</pre>' if b.preview else ""
        out.append(
            f'<details class="output"{shown}><summary><span class="cap">{_text(b.title)} · {lines}</span>'
            f'{preview}</summary><pre class="code">{_text(b.html)}</pre></details>'
        )
    elif kind == "image":
        if b.src:
            out.append(
                f'<figure class="image"><img src="{_text(b.src)}" alt="{_text(b.title)}" loading="lazy">'
                f"<figcaption>{_text(b.title)}</figcaption></figure>"
            )
        else:
            out.append(f'<div class="note image-missing">image: {_text(b.detail)}</div>')
    else:
        out.append(f'<div class="note">{_text(b.title)}</div>')


def entry_html(e: EntryView) -> Markup:
    """The ``<article>`` of one entry: its header (who, badges, references, usage, time) and its
    blocks; a state change (``meta``) shows its notes in the header instead of a body."""
    meta = " meta" if e.meta else ""
    out = [
        f'<article class="entry k-{_text(e.kind)}{meta}" data-key="{_text(e.key)}">\n'
        f'<header class="eh"><span class="who">{_text(e.heading)}</span>'
    ]
    if e.meta:
        out.extend(f' <span class="what">{_text(b.title)}</span>' for b in e.blocks if b.kind == "note")
    out.extend(f' <span class="badge">{_text(badge)}</span>' for badge in e.badges)
    out.extend(
        f' <span class="ref">{_text(label)} <a href="#{_text(url_quoted(ref))}">{_text(ref)}</a></span>'
        for label, ref in e.refs
    )
    out.append('\n<span class="spacer"></span>')
    if e.usage_text:
        out.append(f'<span class="usage" title="tokens and cost of this turn">{_text(e.usage_text)}</span>')
    when = (
        f'<time datetime="{_text(e.iso)}" data-format="time">{_text(e.timestamp)}</time>'
        if e.timestamp
        else "#"
    )
    out.append(
        f'\n<a class="permalink" href="#{_text(url_quoted(e.key))}" title="link to this entry '
        f'({_text(e.iso)})">{when}</a></header>'
    )
    if e.error:
        out.append(f'<div class="error">{_text(e.error)}</div>')
    body = [b for b in e.blocks if b.kind != "note"] if e.meta else e.blocks
    if body:
        out.append('<div class="eb">')
        for b in body:
            _block(b, out)
        out.append("</div>")
    out.append("\n</article>")
    return Markup("".join(out))
