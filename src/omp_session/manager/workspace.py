"""Workspace directories and the recorded cwd (omp 18 ``additionalDirectories``, §2.10).

A session may span more roots than its cwd; they live in the header and every change rewrites the
file (atomically, as every rewrite).

Internal module (part of :class:`~omp_session.SessionManager`, which is the API); not part of the public API.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from omp_session.errors import WorkspaceError  # defined in errors; importable from here as before
from omp_session.manager.persistence import Persistence
from omp_session.manager.state import SessionState

__all__ = ["Workspace", "WorkspaceError", "normalize_directories"]

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


class Workspace:
    """Workspace roots and the recorded cwd; every change rewrites the file through persistence."""

    def __init__(self, state: SessionState, persistence: Persistence) -> None:
        self._state = state
        self._persistence = persistence

    def get_additional_directories(self) -> list[str]:
        """Workspace roots besides the cwd (header ``additionalDirectories``)."""
        return list(self._state.additional_directories)

    def set_additional_directories(self, directories: Sequence[str]) -> list[str]:
        """Replace the extra workspace roots (normalised, de-duplicated, without the cwd)."""
        self._state.require_writable()
        normalized = normalize_directories(self._state.cwd, directories)
        previous = self._state.header.get("additionalDirectories", _UNSET)
        self._state.header.pop("additionalDirectories", None)
        if normalized:
            self._state.header["additionalDirectories"] = list(normalized)
        try:
            if self._state.storage.exists():
                self._persistence.rewrite_all()
        except BaseException:
            self._state.header.pop("additionalDirectories", None)
            if previous is not _UNSET:
                self._state.header["additionalDirectories"] = previous
            raise
        self._state.additional_directories = normalized
        return self.get_additional_directories()

    def add_workspace_directory(self, directory: str) -> str | None:
        """Add one root; returns it resolved, or ``None`` when already present. The cwd itself is
        refused (``WorkspaceError``), as in omp 18."""
        resolved = os.path.abspath(os.path.join(os.path.abspath(self._state.cwd), directory))
        if resolved == os.path.abspath(self._state.cwd):
            raise WorkspaceError("The current working directory is already the primary workspace root.")
        if resolved in self._state.additional_directories:
            return None
        self.set_additional_directories([*self._state.additional_directories, resolved])
        return resolved

    def remove_workspace_directory(self, directory: str) -> str | None:
        """Remove one root; returns it resolved, or ``None`` when it was not there."""
        resolved = os.path.abspath(os.path.join(os.path.abspath(self._state.cwd), directory))
        if resolved not in self._state.additional_directories:
            return None
        self.set_additional_directories([d for d in self._state.additional_directories if d != resolved])
        return resolved

    def get_recorded_cwd(self) -> str | None:
        """The cwd the header records (omp 18 may run in another one when it does not exist)."""
        cwd = self._state.header.get("cwd")
        return cwd if isinstance(cwd, str) else None
