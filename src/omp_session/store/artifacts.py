"""Tool-output artifacts and blobs of a session (spec §6.7).

Artifacts live in ``<session file minus .jsonl>/``, named ``<n>.<tool type>.log`` with ``n``
counting up from the highest existing number. In-memory sessions keep them in a dict (ids "0",
"1", …), as omp does. Names built from arguments go through ``paths.safe_child``, so a tool type
can never steer a write outside the artifact directory.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from omp_session.errors import PersistenceError
from omp_session.store import Storage
from omp_session.store.blobs import FileBlobStore, blob_ref
from omp_session.store.paths import blobs_dir, safe_child, validate_name

__all__ = ["ArtifactSlot", "Artifacts", "BlobInfo"]

_NUMBERED = re.compile(r"^(\d+)\..*\.log$")


def _utf8_as_javascript(text: str) -> bytes:
    """UTF-8 as ``Bun.write`` writes a JS string: surrogate pairs joined, lone ones as U+FFFD."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace").encode("utf-8")


class ArtifactSlot(NamedTuple):
    id: str
    path: Path


class BlobInfo(NamedTuple):
    hash: str
    path: Path
    ref: str


class Artifacts:
    """The artifacts and blobs of one session. ``storage`` answers the session's current backend
    (a fork or a branch moves the session to a new file, and its artifacts with it);
    ``blobs_dir`` the agent directory's blob store (the manager answers from its runtime)."""

    def __init__(self, storage: Callable[[], Storage], blobs_dir: Callable[[], Path] = blobs_dir) -> None:
        self._storage = storage
        self._blobs_dir = blobs_dir
        #: Next artifact number per artifact directory (a fork or branch moves to a new one).
        self._next_artifact: dict[str, int] = {}
        self._memory_artifacts: dict[str, str] = {}

    def get_artifacts_dir(self) -> str | None:
        """``<session file minus .jsonl>``, or ``None`` for an in-memory session."""
        path = self._storage().path
        return os.fspath(path.with_suffix("")) if path is not None else None

    def allocate_artifact_path(self, tool_type: str) -> ArtifactSlot | None:
        """Reserve the next ``<n>.<tool_type>.log``; ``None`` in memory.

        Writes: creates the artifact directory. Raises :class:`UnsafeNameError` (nothing created)
        when ``tool_type`` would make the name leave the directory, :class:`PersistenceError` when
        the directory cannot be created or listed.
        """
        directory = self.get_artifacts_dir()
        if directory is None:
            return None
        root = Path(directory)
        validate_name(f"0.{tool_type}.log")  # before any mkdir: a refused name leaves no trace
        try:
            root.mkdir(parents=True, exist_ok=True)
            if directory not in self._next_artifact:  # scan once, then count on (§6.7)
                numbers = [int(m.group(1)) for p in root.iterdir() if (m := _NUMBERED.match(p.name))]
                self._next_artifact[directory] = max(numbers, default=-1) + 1
        except OSError as exc:
            raise PersistenceError(root, exc) from exc
        number = self._next_artifact[directory]
        path = safe_child(root, f"{number}.{tool_type}.log")
        self._next_artifact[directory] = number + 1
        return ArtifactSlot(str(number), path)

    def save_artifact(self, content: str, tool_type: str) -> str:
        """Store ``content`` as the next artifact and return its id.

        Writes ``<artifacts dir>/<n>.<tool_type>.log`` (in memory: a dict, as omp, with no check of
        ``tool_type``). Raises :class:`UnsafeNameError` for a ``tool_type`` that is not part of a
        safe file name and :class:`PersistenceError` when the file cannot be written.
        """
        slot = self.allocate_artifact_path(tool_type)
        if slot is None:
            artifact_id = str(len(self._memory_artifacts))
            self._memory_artifacts[artifact_id] = content
            return artifact_id
        try:
            slot.path.write_bytes(_utf8_as_javascript(content))
        except OSError as exc:
            raise PersistenceError(slot.path, exc) from exc
        return slot.id

    def get_artifact_path(self, artifact_id: str) -> str | None:
        """The first file of the artifact directory named ``<id>.…``, or ``None``."""
        directory = self.get_artifacts_dir()
        if directory is None or not os.path.isdir(directory):
            return None
        for name in sorted(os.listdir(directory)):
            if name.startswith(f"{artifact_id}."):
                return os.path.join(directory, name)
        return None

    def put_blob(self, data: bytes) -> BlobInfo:
        """Store ``data`` in the agent directory's content-addressed blob store,
        ``<agent dir>/blobs/<sha256>`` (written atomically; skipped when a blob of that size is
        there). Writes to disk even for an in-memory session."""
        store = FileBlobStore(self._blobs_dir())
        digest = store.put(data)
        return BlobInfo(digest, store.path_of(digest), blob_ref(digest))
