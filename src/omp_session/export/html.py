"""A session as one self-contained HTML file: the viewer's page with CSS, script and images inline.

The file works offline from disk: the tree panel is there, and clicking a node shows the context at
that node, all in the page (the same templates, script and rendering module,
:mod:`omp_session.rendering`, as ``omp-session serve``; the export does not import the viewer).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from omp_session.errors import EntryNotFoundError
from omp_session.rendering.images import inline_images
from omp_session.rendering.page import render_export
from omp_session.rendering.view import build_session_view, stored_size
from omp_session.rendering.windowed import WINDOWED_BYTES
from omp_session.rendering.windowed_export import export_windowed_html
from omp_session.store import SessionStorage
from omp_session.store.paths import blobs_dir_near

__all__ = ["blobs_dir_for", "export_html"]


def blobs_dir_for(path: Path) -> Path:
    """The blob store of a session file (see :func:`omp_session.store.paths.blobs_dir_near`)."""
    return blobs_dir_near(path)


def export_html(
    path: Path,
    leaf_id: str | None = None,
    *,
    blobs_dir: Path | None = None,
    windowed_bytes: int = WINDOWED_BYTES,
    progress: Callable[[int, int], None] | None = None,
    workers: int = 1,
    storage: SessionStorage | None = None,
) -> str:
    """The HTML page of the session at ``path`` (a file, else a row of ``storage``), showing the
    context at ``leaf_id`` when opened (default: the session's leaf). Images, including blob
    references, are inlined as data URLs. A file larger than ``windowed_bytes`` gives the lazily
    rendered page of
    :mod:`omp_session.rendering.windowed_export` (as the viewer windows such a session), and
    ``progress(done, total)`` hears of its entries rendered, by ``workers`` forked processes when
    more than one (see :func:`~omp_session.rendering.windowed_export.export_windowed_html`).

    >>> html = export_html(Path("samples/sessions/-work-shop/…jsonl"))  # doctest: +SKIP
    """
    blobs = blobs_dir if blobs_dir is not None else blobs_dir_for(path)
    if stored_size(path, storage) > windowed_bytes:
        return export_windowed_html(path, inline_images(blobs), leaf_id, progress, workers, storage=storage)
    view = build_session_view(path, inline_images(blobs), leaf_id, storage=storage)
    if leaf_id is not None and view.selected_key != leaf_id:
        raise EntryNotFoundError(leaf_id)
    return render_export(view)
