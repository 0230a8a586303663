"""Claude Code, Codex and pi sessions in the viewer, beside omp's (docs/viewer.md, "Other agents").

Each foreign session is converted on the fly (the lossless importer) into an omp session file in a
private mirror directory owned by the viewer process (a temporary directory, removed at exit), and
re-converted only when its source file changes. The mirror is laid out like a sessions root per
agent, so the viewer's own catalog, search and page rendering work on it unchanged; its refs are
``@<agent>/<project>/<file>.jsonl``. Source files are only read.

Importing a foreign session into the real sessions root (:meth:`ForeignMirror.import_into`) is the
viewer's only write; the app allows it only as a same-origin POST carrying the page's token.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from omp_session.errors import ForeignSessionError
from omp_session.importers.base import AGENT_NAMES, ForeignSessionInfo, ForeignSessionStore
from omp_session.importers.persist import ImportOutcome, import_session, write_view_copy
from omp_session.store.paths import encode_session_dir_name, home_dir, temp_root
from omp_session.web.catalog import SessionCatalog, SessionSummary

__all__ = ["ForeignMirror", "agent_of_ref"]

_LIST_SECONDS = 5.0
_NAME_BYTES = 200  # a mirror directory's name at most: below the usual 255-byte file-name limit


def agent_of_ref(ref: str) -> str | None:
    """``claude`` for ``@claude/…``; ``None`` for an omp session."""
    if not ref.startswith("@") or "/" not in ref:
        return None
    return ref[1:].split("/", 1)[0]


class ForeignMirror:
    """Converted copies of other agents' sessions, kept current, for the viewer to read."""

    def __init__(self, stores: Sequence[ForeignSessionStore], directory: Path | None = None) -> None:
        self.stores = {store.source: store for store in stores}
        self._owned = directory is None
        self.directory = Path(directory or tempfile.mkdtemp(prefix="omp-session-foreign-"))
        self.catalogs = {source: SessionCatalog(self.directory / f"@{source}") for source in self.stores}
        self._infos: dict[str, tuple[ForeignSessionInfo, Path]] = {}  # mirror file → (info, source)
        self._converted: dict[str, tuple[int, int]] = {}  # source path → (mtime_ns, size) converted
        self._listed_at = 0.0
        self._lock = threading.Lock()

    def close(self) -> None:
        if self._owned:
            shutil.rmtree(self.directory, ignore_errors=True)

    # ------------------------------------------------------------------------------ conversion

    def _mirror_path(self, info: ForeignSessionInfo) -> Path:
        project = encode_session_dir_name(info.cwd or "/", home_dir(), temp_root(), canonicalize=False)
        if len(project.encode("utf-8")) > _NAME_BYTES:
            # A cwd longer than a directory name may be (a transcript may record any text; found
            # by fuzzing the viewer): its start and a digest of all of it, so the session is shown.
            whole = hashlib.sha256(project.encode("utf-8")).hexdigest()[:12]
            project = f"{project.encode('utf-8')[: _NAME_BYTES - 13].decode('utf-8', 'ignore')}-{whole}"
        digest = hashlib.sha256(info.path.encode()).hexdigest()[:12]
        name = "".join(c if c.isalnum() or c in "-_." else "_" for c in info.id)[:80] or "session"
        return self.directory / f"@{info.source}" / project / f"{name}-{digest}.jsonl"

    def _convert(self, store: ForeignSessionStore, info: ForeignSessionInfo, target: Path) -> None:
        try:
            stat = os.stat(info.path)
        except OSError:
            return
        version = (stat.st_mtime_ns, stat.st_size)
        if self._converted.get(info.path) == version and target.exists():
            return
        try:
            converted = store.convert(info)
        except ForeignSessionError:
            return  # unreadable: not shown (the CLI import reports why)
        target.parent.mkdir(parents=True, exist_ok=True)
        write_view_copy(target, converted)
        os.utime(target, ns=(stat.st_mtime_ns, stat.st_mtime_ns))
        self._converted[info.path] = version

    def refresh(self, force: bool = False) -> None:
        """List every store (at most every few seconds) and convert what is new or changed."""
        with self._lock:
            if not force and time.monotonic() - self._listed_at < _LIST_SECONDS:
                return
            infos: dict[str, tuple[ForeignSessionInfo, Path]] = {}
            for store in self.stores.values():
                for info in store.list():
                    target = self._mirror_path(info)
                    self._convert(store, info, target)
                    if target.exists():
                        infos[str(target)] = (info, target)
            for stale in set(self._infos) - set(infos):
                Path(stale).unlink(missing_ok=True)
            self._infos = infos
            self._listed_at = time.monotonic()

    # ------------------------------------------------------------------------------ catalog

    def sessions(self) -> list[SessionSummary]:
        """Index rows of every foreign session; refs and projects carry the ``@agent/`` prefix."""
        return self.listing()[0]

    def listing(self) -> tuple[list[SessionSummary], str]:
        """:meth:`sessions` and a key that changes whenever they may (the generations of the
        mirror's listings: see :meth:`SessionCatalog.listing`)."""
        self.refresh()
        rows = []
        generations = []
        for source, catalog in self.catalogs.items():
            name = AGENT_NAMES[source]
            listing = catalog.listing()
            generations.append(f"{source}:{listing.generation}")
            for summary in listing.summaries:
                rows.append(
                    dataclasses.replace(
                        summary,
                        ref=f"@{source}/{summary.ref}",
                        project=f"@{source}/{summary.project}",
                        info=dataclasses.replace(summary.info, cwd=f"{name} · {summary.cwd}"),
                    )
                )
        return rows, " ".join(generations)

    def locate(self, ref: str) -> Path | None:
        source = agent_of_ref(ref)
        if source not in self.catalogs:
            return None
        self.refresh()
        return self.catalogs[source].locate(ref.split("/", 1)[1])

    def info_of(self, path: Path) -> ForeignSessionInfo | None:
        found = self._infos.get(str(path))
        return found[0] if found else None

    def import_into(self, ref: str, root: Path) -> ImportOutcome | None:
        """Import the session behind ``ref`` into the sessions ``root`` (idempotent)."""
        path = self.locate(ref)
        info = self.info_of(path) if path is not None else None
        if info is None:
            return None
        return import_session(self.stores[info.source], info, root=root, fallback_cwd=os.getcwd())
