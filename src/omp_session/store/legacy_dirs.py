"""The legacy session-directory migration of reference semantics §1.2, improved per §9 item 8.

omp renames the directories older versions named ``--<path>--`` to the current encoding when it
opens a session directory. Upstream deletes what stands in the way; here nothing is ever deleted:
clashing entries are kept side by side under a ``.legacy-N`` / ``.conflict-N`` name. Failures are
logged and swallowed, as upstream (the migration is a courtesy, never a reason an open fails).

Internal module (used by :func:`omp_session.store.paths.default_session_dir`).
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
from pathlib import Path

__all__ = ["migrate_home_dirs_once", "move_legacy_dir"]

logger = logging.getLogger(__name__)

_migrated_roots: set[str] = set()
_migrated_lock = threading.Lock()


def _free_name(directory: Path, name: str, tag: str, split_suffix: bool) -> Path:
    """First ``<stem>.<tag>-N<suffix>`` (N = 1, 2, …) that does not exist in ``directory``."""
    stem, suffix = (Path(name).stem, Path(name).suffix) if split_suffix else (name, "")
    for n in itertools.count(1):
        candidate = directory / f"{stem}.{tag}-{n}{suffix}"
        if not os.path.lexists(candidate):
            return candidate
    raise AssertionError("unreachable")  # pragma: no cover


def _rename_noreplace(src: Path, dst: Path) -> None:
    """Rename ``src`` to ``dst`` but never replace an existing ``dst`` (raises ``FileExistsError``).

    Non-directories go through ``link`` + ``unlink`` (``link`` fails atomically if ``dst`` exists);
    ``rename(2)`` of a directory can at worst replace an *empty* directory, which loses nothing.
    """
    if os.path.lexists(dst):
        raise FileExistsError(17, "target exists", os.fspath(dst))
    if src.is_dir() and not src.is_symlink():
        os.rename(src, dst)
        return
    try:
        os.link(src, dst, follow_symlinks=False)
    except FileExistsError:
        raise
    except (OSError, NotImplementedError):  # no hard links here: fall back to check-then-rename
        os.rename(src, dst)
        return
    os.unlink(src)


def _move_entry(path: Path, dst_dir: Path) -> None:
    """Move one entry of an old directory into ``dst_dir``; a same-named target is kept, ours renamed."""
    target = dst_dir / path.name
    for _ in range(10):  # bounded retries in case another process grabs the free name first
        try:
            _rename_noreplace(path, target)
            return
        except FileExistsError:
            target = _free_name(dst_dir, path.name, "legacy", split_suffix=True)
    logger.warning("legacy session migration: could not move %s into %s", path, dst_dir)


def _merge_into(src: Path, dst: Path) -> None:
    """Move every entry of ``src`` into the directory ``dst``, then remove ``src`` only if empty."""
    for name in sorted(os.listdir(src)):
        try:
            _move_entry(src / name, dst)
        except OSError as exc:
            logger.warning("legacy session migration: cannot move %s: %s", src / name, exc)
    try:
        os.rmdir(src)  # never recursive: whatever could not be moved stays where it was
    except OSError as exc:
        logger.warning("legacy session migration: left %s in place: %s", src, exc)


def move_legacy_dir(src: Path, dst: Path) -> None:
    """Move a legacy session directory to its new name without ever deleting a file (§1.2).

    * ``dst`` missing: plain rename.
    * ``dst`` is a directory: every entry of ``src`` is moved in; when a same-named entry already exists
      in ``dst`` BOTH are kept — the old one arrives as ``<stem>.legacy-N<suffix>``
      (e.g. ``…_id.legacy-1.jsonl``). ``src`` is then removed only if it ended up empty.
    * ``dst`` exists but is not a directory: it is renamed aside to ``<name>.conflict-N`` (not deleted
      as upstream does) and ``src`` takes its place.

    Failures are logged and swallowed, as upstream.
    """
    try:
        if not src.is_dir():
            return
        if not os.path.lexists(dst):
            os.rename(src, dst)
        elif dst.is_dir() and not src.is_symlink():
            _merge_into(src, dst)
        elif not dst.is_dir():
            aside = _free_name(dst.parent, dst.name, "conflict", split_suffix=False)
            _rename_noreplace(dst, aside)
            logger.warning("legacy session migration: moved non-directory %s aside to %s", dst, aside)
            os.rename(src, dst)
        else:
            logger.warning("legacy session migration: not merging symlinked directory %s", src)
    except OSError as exc:
        logger.warning("legacy session migration %s -> %s failed: %s", src, dst, exc)


def _home_legacy_target(name: str, encoded_home: str) -> str | None:
    """New name for ``--<H>--`` (``-``) and ``--<H>-<rest>--`` (``-<rest>``); None for other names."""
    if name == f"--{encoded_home}--":
        return "-"
    prefix = f"--{encoded_home}-"
    if name.startswith(prefix) and name.endswith("--") and len(name) > len(prefix) + 2:
        return "-" + name[len(prefix) : -2]
    return None


def migrate_home_dirs_once(root: Path, encoded_home: str) -> None:
    """Once per sessions root per process: rename legacy dirs of paths under home (§1.2).

    ``encoded_home`` is ``<H>``: the *raw* (not realpath'd) home encoded with the legacy rule.
    """
    key = os.path.abspath(root)
    with _migrated_lock:
        if key in _migrated_roots:
            return
        _migrated_roots.add(key)
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return  # no sessions root yet: nothing to migrate
    for name in names:
        new_name = _home_legacy_target(name, encoded_home)
        if new_name is not None:
            move_legacy_dir(root / name, root / new_name)
