"""The read-only web viewer: ``create_app(sessions_root, blobs_dir)`` and ``serve(...)``.

>>> from omp_session.web import create_app
>>> app = create_app("samples/sessions")   # an ASGI app; run it with uvicorn or ``omp-session serve``
"""

from __future__ import annotations

from omp_session.web.app import DEFAULT_ALLOWED_HOSTS, ViewerConfig, create_app, default_blobs_dir
from omp_session.web.server import serve

__all__ = ["DEFAULT_ALLOWED_HOSTS", "ViewerConfig", "create_app", "default_blobs_dir", "serve"]
