"""Exporters: one branch of a session as Markdown, as a new session file (JSONL), or as HTML.

``omp_session.export.html`` (the self-contained page shared with the viewer) is imported on
demand by its callers, so the Markdown and JSONL exporters work without its templates.
"""

from __future__ import annotations

from omp_session.export.jsonl import export_jsonl
from omp_session.export.markdown import export_markdown, render_markdown

__all__ = ["export_jsonl", "export_markdown", "render_markdown"]
