"""A session as one self-contained HTML file: the viewer's page with CSS, script and images inline.

The file works offline from disk: the tree panel is there, and clicking a node shows the context at
that node, all in the page (the same templates, script and rendering module,
:mod:`omp_session.rendering`, as ``omp-session serve``; the export does not import the viewer).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from omp_session.rendering.images import inline_images
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
    progress: Callable[[int, int], None] | None = None,
    workers: int = 1,
    storage: SessionStorage | None = None,
) -> str:
    """The HTML page of the session at ``path`` (a file, else a row of ``storage``), showing the
    context at ``leaf_id`` when opened (default: the session's leaf). Images, including blob
    references, are inlined as data URLs. The page renders lazily, a window at a time, as the
    viewer's page does (:mod:`omp_session.rendering.windowed_export`; a small session is one
    window); an unknown ``leaf_id`` raises :class:`~omp_session.errors.EntryNotFoundError`.
    ``progress(done, total)`` hears of the entries rendered, by ``workers`` forked processes when
    more than one (see :func:`~omp_session.rendering.windowed_export.export_windowed_html`).

    >>> html = export_html(Path("samples/sessions/-work-shop/…jsonl"))  # doctest: +SKIP
    """
    blobs = blobs_dir if blobs_dir is not None else blobs_dir_for(path)
    return export_windowed_html(path, inline_images(blobs), leaf_id, progress, workers, storage=storage)
