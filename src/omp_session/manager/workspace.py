"""Workspace directories and the recorded cwd (omp 18 ``additionalDirectories``, §2.10).

A session may span more roots than its cwd; they live in the header and every change rewrites the
file (atomically, as every rewrite).

Internal module (part of :class:`~omp_session.SessionManager`, which is the API); not part of the public API.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from omp_session.errors import WorkspaceError  # defined in errors; importable from here as before
from omp_session.store import Storage

__all__ = ["WorkspaceError", "WorkspaceMethods", "normalize_directories"]

Entry = dict[str, Any]
_UNSET: Any = object()


def normalize_directories(cwd: str, directories: Sequence[str]) -> list[str]:
    """Absolute, normalised, de-duplicated roots other than ``cwd`` (omp 18 workspace rules)."""
    root = os.path.abspath(cwd)
    out: list[str] = []
    for directory in directories:
        resolved = os.path.abspath(os.path.join(root, directory))
        if resolved != root and resolved not in out:
            out.append(resolved)
    return out


class WorkspaceMethods:
    """Mixin over the manager's state (declared here, owned by ``SessionManager``)."""

    _header: Entry
    _cwd: str
    _storage: Storage
    _additional_directories: list[str]

    if TYPE_CHECKING:  # provided by SessionManager and the other mixins

        def _rewrite_all(self, extra: Entry | None = None) -> None: ...

        def _require_writable(self) -> None: ...

    def get_additional_directories(self) -> list[str]:
        """Workspace roots besides the cwd (header ``additionalDirectories``)."""
        return list(self._additional_directories)

    def set_additional_directories(self, directories: Sequence[str]) -> list[str]:
        """Replace the extra workspace roots (normalised, de-duplicated, without the cwd)."""
        self._require_writable()
        normalized = normalize_directories(self._cwd, directories)
        previous = self._header.get("additionalDirectories", _UNSET)
        self._header.pop("additionalDirectories", None)
        if normalized:
            self._header["additionalDirectories"] = list(normalized)
        try:
            if self._storage.exists():
                self._rewrite_all()
        except BaseException:
            self._header.pop("additionalDirectories", None)
            if previous is not _UNSET:
                self._header["additionalDirectories"] = previous
            raise
        self._additional_directories = normalized
        return self.get_additional_directories()

    def add_workspace_directory(self, directory: str) -> str | None:
        """Add one root; returns it resolved, or ``None`` when already present. The cwd itself is
        refused (``WorkspaceError``), as in omp 18."""
        resolved = os.path.abspath(os.path.join(os.path.abspath(self._cwd), directory))
        if resolved == os.path.abspath(self._cwd):
            raise WorkspaceError("The current working directory is already the primary workspace root.")
        if resolved in self._additional_directories:
            return None
        self.set_additional_directories([*self._additional_directories, resolved])
        return resolved

    def remove_workspace_directory(self, directory: str) -> str | None:
        """Remove one root; returns it resolved, or ``None`` when it was not there."""
        resolved = os.path.abspath(os.path.join(os.path.abspath(self._cwd), directory))
        if resolved not in self._additional_directories:
            return None
        self.set_additional_directories([d for d in self._additional_directories if d != resolved])
        return resolved

    def get_recorded_cwd(self) -> str | None:
        """The cwd the header records (omp 18 may run in another one when it does not exist)."""
        cwd = self._header.get("cwd")
        return cwd if isinstance(cwd, str) else None
