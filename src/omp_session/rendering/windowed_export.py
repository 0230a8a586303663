"""The HTML export of a session (issue 13 #2; every session's, issue 23 #2): one file that renders
lazily, window by window (used by :mod:`omp_session.export.html` and the viewer's download).

A page with every entry in the DOM is unusable at 50,000 entries (hundreds of MB of DOM, minutes of
layout). Here every entry is still rendered once, in Python, by the same templates as the viewer,
but kept out of the DOM: the entries' HTML travels as JSON strings in ``<script
type="application/json">`` blocks of :data:`HTML_CHUNK` entries (parsed only when one of their
entries is needed), the tree rows likewise, and ``export_api.js`` answers the same questions the
viewer's server answers for its windowed page (``/api/window``, ``/api/rows``), so the page script
(``windowed.js``) is the viewer's own. Nothing is fetched: it works from ``file://``. A search box
searches the text of every entry in the page.

The blocks of entries and rows are compressed (issue 30 item 3): each is its JSON gzipped and in
base64, in a ``<script type="application/octet-stream" data-encoding="gzip-base64">`` element, and
the page inflates a block with the browser's own ``DecompressionStream`` the first time it needs
it. A 50,000-entry session's export was 76 MB of mostly repeated markup; base64 of gzip holds only
letters, digits, ``+``, ``/`` and ``=``, so no block can close its element either.

Everything is escaped as on the viewer's pages: entry HTML is rendered with autoescaping and
sanitised Markdown, and :func:`~omp_session.rendering.page.script_json` escapes ``<``, ``>`` and
``&`` so no string can close its script element.
"""

from __future__ import annotations

import base64
import gc
import gzip
import json
import multiprocessing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson
from markupsafe import Markup

from omp_session.errors import EntryNotFoundError
from omp_session.format.codec import DISPLAY_ERRORS
from omp_session.gcpause import gc_paused
from omp_session.model.context import entry_to_message, is_remote_compaction
from omp_session.rendering.entry_html import entry_html
from omp_session.rendering.entry_views import ToolCalls, entry_view
from omp_session.rendering.images import ImageSource
from omp_session.rendering.markdown import highlight_code, lexer_for_path
from omp_session.rendering.page import csp_hash, environment, script_json, static_file
from omp_session.rendering.windowed import WINDOW, WindowedSession
from omp_session.rendering.windowed_open import open_windowed
from omp_session.rendering.windowed_tree import FILTER_LIMIT, ROWS
from omp_session.store import SessionStorage
from omp_session.tools.entry_kinds import EntryKind

__all__ = ["HTML_CHUNK", "ROW_CHUNK", "compressed_block", "export_windowed_html"]

Entry = dict[str, Any]

#: Entries per JSON block of rendered HTML, and tree rows per block of rows.
HTML_CHUNK = 500
ROW_CHUNK = 2000

#: gzip's level for the blocks: 1 writes the 56 MB of a 50,000-entry session's markup as 11.5 MB
#: of base64 in 0.26 s, level 4 as 10.2 MB in 0.44 s (the export's time is the goal, issue 30 #3).
_GZIP_LEVEL = 1

# Per-entry flags the page script's arrangement of a context needs (``WindowedSession.arrange``).
_IN_CONTEXT, _COMPACTION, _RESET, _REMOTE = 1, 2, 4, 8


#: ``progress(done, total)``: entries rendered so far, of all.
Progress = Callable[[int, int], None]


def export_windowed_html(
    path: Path,
    images: ImageSource,
    leaf_id: str | None = None,
    progress: Progress | None = None,
    workers: int = 1,
    *,
    storage: SessionStorage | None = None,
) -> str:
    """The lazily rendered page of the session at ``path`` (a file, else a row of ``storage``),
    opened at ``leaf_id`` (default: the leaf; an unknown id raises :class:`EntryNotFoundError`).
    ``progress`` hears of the entries rendered; ``workers`` > 1 renders parts of the file in that
    many forked processes (a command line's choice: never from a process with threads that a fork
    would copy mid-work)."""
    view = open_windowed(path, images, storage=storage)
    if leaf_id is not None and leaf_id not in view.position:
        raise EntryNotFoundError(leaf_id)
    # The cyclic collector is paused while the structures of the page are built (tens of
    # thousands of rows, classes and flags, no cycles among them): left on, its full collections
    # walk the session's entries again and again (0.7 s of CPU at 50,000 entries, issue 30 #3).
    # Not while entries are rendered (their Markdown and highlighting may leave cycles behind).
    with gc_paused():
        view.kinds()  # every pass below (tree, rows, usage, flags, tool calls, entries) asks it
        view.own_usages()  # the leaf's path usage (the first window) and the flags (_meta) alike
        tree = view.tree.get()
        first = view.window(leaf_id)
        first_html = Markup(str(first.pop("summary")) + str(first.pop("html")))
        row = first.get("row") or 0
        rows_start = max(int(row) - ROWS // 2, 0)
        data = {
            "window": first,
            "rowsStart": rows_start,
            "rows": tree.slice(rows_start, ROWS),
            "rowsPending": False,
            "rowCount": len(tree.rows),
        }
    css = static_file("viewer.css") + static_file("highlight.css")
    script = static_file("export-windowed.js")
    csp = (
        f"default-src 'none'; script-src {csp_hash(script)}; style-src {csp_hash(css)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    # The workers (if any) render while this process builds the rows and the facts of the page.
    with _html_blocks(view, progress, workers) as html_blocks:
        with gc_paused():  # the workers, forked already, collect as they please
            row_chunks = [
                compressed_block([tree.row(i) for i in range(start, min(start + ROW_CHUNK, len(tree.rows)))])
                for start in range(0, len(tree.rows), ROW_CHUNK)
            ]
            export_meta = script_json(_meta(view))
        html_chunks = html_blocks()
    return (
        environment()
        .get_template("session_windowed.html")
        .render(
            f=view.facts(),
            ref="",
            row_count=len(tree.rows),
            first_html=first_html,
            data_json=script_json(data),
            exported=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            export_meta=export_meta,
            row_chunks=row_chunks,
            html_chunks=html_chunks,
            csp_meta=csp,
            inline_css=Markup(css),
            inline_js=Markup(script),
        )
    )


def compressed_block(value: Any) -> Markup:
    """``value`` as the text of a ``gzip-base64`` block: its JSON, gzipped (no timestamp, so the
    same session gives the same file), in base64."""
    try:
        # orjson writes what json.dumps writes here (compact, non-ASCII as it is), in a tenth of
        # the time: the export's 50,000 entries are 45 MB of JSON strings (issue 30 item 3).
        data = orjson.dumps(value)
    except TypeError:  # a lone surrogate (UTF-8 cannot hold it), a key that is not a string…
        data = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", DISPLAY_ERRORS)
    return Markup(base64.b64encode(gzip.compress(data, _GZIP_LEVEL, mtime=0)).decode("ascii"))


def _meta(view: WindowedSession) -> dict[str, Any]:
    """What the page script needs to cut windows: keys, parents, flags, compactions, usage."""
    tree = view.tree.get()
    flags: list[int] = []
    kept: dict[int, str] = {}
    ids: dict[int, str | None] = {}
    usage: dict[int, list[float]] = {}
    kinds, owns = view.kinds(), view.own_usages()
    for position, entry in enumerate(view.entries):
        found = kinds[position]
        flag = _IN_CONTEXT if entry_to_message(entry) is not None else 0
        if found.kind == EntryKind.COMPACTION and not found.is_message:
            flag |= _COMPACTION
            first_kept = entry.get("firstKeptEntryId")
            if isinstance(first_kept, str):
                kept[position] = first_kept
            if is_remote_compaction(entry):
                flag |= _REMOTE
        if found.kind == EntryKind.RESET_BOUNDARY:
            flag |= _RESET
        flags.append(flag)
        entry_id = entry.get("id")
        if entry_id != view.keys[position]:
            ids[position] = entry_id if isinstance(entry_id, str) else None
        own = owns[position]
        if own is not None:
            usage[position] = list(own)
    return {
        "leaf": view.leaf,
        "keys": view.keys,
        "parents": [-1 if parent is None else parent for parent in view.parents],
        "flags": flags,
        "kept": kept,
        "ids": ids,
        "usage": usage,
        "rowOf": [tree.row_of.get(key, -1) for key in view.keys],
        "rowCount": len(tree.rows),
        "rowChunk": ROW_CHUNK,
        "htmlChunk": HTML_CHUNK,
        # The sizes of the server's answers that export_api.js gives alike, written once (here).
        "window": WINDOW,
        "rowsAtMost": ROWS,
        "filterLimit": FILTER_LIMIT,
    }


def _tool_calls(view: WindowedSession, starts: list[int]) -> tuple[dict[str, Any], dict[int, ToolCalls]]:
    """The ``details`` of every tool result by call id (an edit's call draws its result's diff),
    and the tool calls a pass over the whole file knows at each of ``starts`` (sorted), each with
    those details, so each part of the file is drawn as that pass would draw it: one walk over
    the entries for both (classifying 50,000 entries takes a fifth of a second)."""
    details: dict[str, Any] = {}
    known = ToolCalls(details)
    found: dict[int, ToolCalls] = {}
    pending = iter(starts)
    start = next(pending, None)
    for position, classified in enumerate(view.kinds()):
        while start is not None and start <= position:
            found[start] = ToolCalls(details)  # details: the same dict, complete once the walk ends
            found[start].update(known)
            start = next(pending, None)
        if classified.is_message and classified.kind == EntryKind.ASSISTANT:
            if start is not None:  # past the last start no copy needs them
                known.remember(classified.fields.get("content"))
        elif classified.kind == EntryKind.TOOL_RESULT:
            call_id = classified.fields.get("toolCallId")
            if isinstance(call_id, str) and "details" in classified.fields:
                details[call_id] = classified.fields["details"]
    while start is not None:
        found[start] = ToolCalls(details)
        found[start].update(known)
        start = next(pending, None)
    return details, found


def _render(view: WindowedSession, calls: ToolCalls, start: int, stop: int) -> Iterator[list[str]]:
    """The HTML of entries ``start`` to ``stop`` in lists of :data:`HTML_CHUNK` (``start`` a
    multiple of it), drawn as a pass over the whole file would: ``calls`` holds the tool calls of
    the entries before ``start`` (see :func:`_tool_calls`)."""
    keys, entries, images, kinds = view.keys, view.entries, view.images, view.kinds()
    for first in range(start, stop, HTML_CHUNK):
        yield [
            str(entry_html(entry_view(keys[position], entries[position], images, calls, kinds[position])))
            for position in range(first, min(first + HTML_CHUNK, stop))
        ]


#: The session a forked worker renders a part of (set in the parent just before the fork).
_FORKED: tuple[WindowedSession, dict[int, ToolCalls]] | None = None


def _render_part(bounds: tuple[int, int]) -> list[str]:
    """In a forked worker: the compressed blocks of entries ``bounds`` of the parent's session."""
    assert _FORKED is not None
    view, calls = _FORKED
    start, stop = bounds
    return [str(compressed_block(chunk)) for chunk in _render(view, calls[start], start, stop)]


@contextmanager
def _html_blocks(
    view: WindowedSession, progress: Progress | None, workers: int
) -> Iterator[Callable[[], list[Markup]]]:
    """Every entry's HTML, rendered once, as compressed blocks of :data:`HTML_CHUNK` entries: the
    block yields the call that returns them. With ``workers`` > 1 (and ``fork``), parts of the file
    are rendered by that many forked processes, each a copy of this one, from the start of the
    block on: rendering is nearly all of an export's time, and it is the same work done in
    parallel (the output is byte for byte the same)."""
    global _FORKED
    total = len(view.entries)
    chunks = -(-total // HTML_CHUNK)
    forked = workers > 1 and chunks >= 2 * workers and "fork" in multiprocessing.get_all_start_methods()
    per_part = max(chunks // (workers * 4), 1) * HTML_CHUNK  # a few parts a worker: even loads
    parts = [(start, min(start + per_part, total)) for start in range(0, total, per_part)] if forked else []
    details, calls_at = _tool_calls(view, [start for start, _stop in parts])

    def alone() -> list[Markup]:
        blocks = []
        for chunk in _render(view, ToolCalls(details), 0, total):
            blocks.append(compressed_block(chunk))
            if progress is not None:
                progress(min(len(blocks) * HTML_CHUNK, total), total)
        return blocks

    if not forked:
        yield alone
        return
    _FORKED = (view, calls_at)
    # Built once here rather than once in each worker: Pygments compiles every lexer's file-name
    # patterns on its first look-up (a tenth of a second), and the common lexers' rules.
    for language in ("bash", "python"):
        highlight_code("", language)
    lexer_for_path("warm.py")
    # The workers' collector leaves what they inherit alone: frozen at the fork, the session's
    # objects are never walked by their collections, whose writes to every object's header would
    # also copy each page of the parent's memory into the worker (each worker's own state; the
    # parent thaws its objects at once).
    thaw = gc.get_freeze_count() == 0  # else the process froze objects itself: leave them be
    if thaw:
        gc.freeze()
    try:
        pool = multiprocessing.get_context("fork").Pool(workers)  # forks the workers now
    finally:
        if thaw:
            gc.unfreeze()
    try:
        with pool:
            rendered = pool.imap(_render_part, parts)  # the work starts now

            def collected() -> list[Markup]:
                out: list[Markup] = []
                for (_start, stop), part in zip(parts, rendered, strict=True):
                    out.extend(Markup(block) for block in part)
                    if progress is not None:
                        progress(stop, total)
                return out

            yield collected
    finally:
        _FORKED = None
