"""omp 18's recovery of orphaned rewrite backups (``recoverOrphanedBackups``, run by its listing).

omp 18 rewrites a session, where a rename over it fails (``EPERM``), by moving the old file aside
as ``<name>.jsonl.<snowflake>.bak`` first; a crash between its two renames leaves only that
backup. Its listing therefore renames, per missing ``<name>.jsonl``, the newest
``<name>.jsonl.<x>.bak`` back into place before it scans the directory. We do the same, only
when a dialect's listing asks for it (omp 18.2 and 18.3; see docs/compatibility.md, which also
says what this means for our own ``.v<N>.bak`` migration backups).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["promote_orphaned_backups"]


def promote_orphaned_backups(directory: Path) -> list[Path]:
    """Rename the newest ``<name>.jsonl.<x>.bak`` of each missing ``<name>.jsonl`` in ``directory``
    back to ``<name>.jsonl`` and return the promoted paths. Writes: only those renames (a rename
    that fails is skipped, as in omp)."""
    newest: dict[str, tuple[float, str]] = {}
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                name = entry.name
                if not name.endswith(".bak"):
                    continue
                trimmed = name[: -len(".bak")]
                dot = trimmed.rfind(".")
                if dot <= 0 or not trimmed[:dot].endswith(".jsonl"):
                    continue
                try:
                    if not entry.is_file():
                        continue
                    mtime = entry.stat().st_mtime
                except OSError:
                    continue
                primary = trimmed[:dot]
                if primary not in newest or mtime > newest[primary][0]:
                    newest[primary] = (mtime, entry.path)
    except OSError:
        return []
    promoted: list[Path] = []
    for primary, (_mtime, backup) in sorted(newest.items()):
        target = directory / primary
        if os.path.lexists(target):
            continue
        try:
            os.rename(backup, target)
        except OSError:
            continue
        promoted.append(target)
    return promoted
