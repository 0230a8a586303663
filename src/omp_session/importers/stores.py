"""One store per source, built from its name (the CLI's and the viewer's entry point)."""

from __future__ import annotations

from collections.abc import Mapping

from omp_session.importers.base import ForeignSessionStore, Source
from omp_session.importers.claude import ClaudeSessionStore
from omp_session.importers.codex import CodexSessionStore
from omp_session.importers.pi import PiSessionStore
from omp_session.store.tuning import DEFAULT_TUNING, Tuning


def make_store(
    source: str,
    root: str | None = None,
    env: Mapping[str, str] | None = None,
    *,
    tuning: Tuning = DEFAULT_TUNING,
) -> ForeignSessionStore:
    """The store of ``source`` (``claude``, ``codex`` or ``pi``) at its default root or ``root``
    (``tuning``: the sizes of its searches of big transcripts)."""
    if source == "claude":
        return ClaudeSessionStore(root, env, tuning=tuning)
    if source == "codex":
        return CodexSessionStore(root, env)
    if source == "pi":
        return PiSessionStore(root, env)
    raise ValueError(f"unknown source {source!r}")


__all__ = ["Source", "make_store"]
