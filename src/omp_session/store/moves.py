"""A journal that makes ``move_to`` recoverable (issue 11 item 11).

``move_to`` renames the session file, then its artifact directory: two renames, and a process
killed between them would leave the file in the new project and its artifacts in the old one.
Before the first rename a journal ``.<name>.moving`` is written beside the file's *new* place,
naming the artifact directory's old place; it is removed once both renames are done. The next
writable open of the file finds a journal left behind and completes the move.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from pathlib import Path

from omp_session.errors import CorruptSessionError
from omp_session.store.atomic_files import fsync_directory, replace_file
from omp_session.store.regular import read_regular

__all__ = ["begin_move", "finish_move", "journal_for", "move_directory", "recover_move"]


def journal_for(target: Path) -> Path:
    """The journal of a move whose session file goes to ``target``."""
    return target.parent / f".{target.name}.moving"


def begin_move(artifacts: Path, target: Path) -> Path:
    """Record, durably, that ``artifacts`` must follow the session file to ``target``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    journal = journal_for(target)
    replace_file(journal, os.fsencode(os.path.abspath(artifacts)))
    return journal


def finish_move(journal: Path) -> None:
    """The move is complete (or undone): forget it."""
    with contextlib.suppress(FileNotFoundError):
        journal.unlink()
    fsync_directory(journal.parent)


def recover_move(path: Path) -> bool:
    """Complete a move of ``path`` that a killed process left half done; ``True`` if it did.

    Only when the session file is at ``path`` (the first rename happened), its artifact directory
    is still at the old place and nothing is at the new one; a journal left otherwise is stale.
    """
    journal = journal_for(path)
    try:
        old_artifacts = Path(os.fsdecode(read_regular(journal)))
    except (OSError, CorruptSessionError):
        return False
    new_artifacts = path.with_suffix("")
    moved = False
    if path.is_file() and old_artifacts.is_dir() and not os.path.lexists(new_artifacts):
        with contextlib.suppress(OSError):
            move_directory(old_artifacts, new_artifacts)
            fsync_directory(new_artifacts.parent)
            fsync_directory(old_artifacts.parent)
            moved = True
    finish_move(journal)
    return moved


def move_directory(source: Path, target: Path) -> None:
    """Rename the directory ``source`` to ``target`` (which must not exist); onto another
    filesystem (``EXDEV``) copy it instead: every file copied and fsynced, the copy built under a
    staging name beside ``target`` and renamed into place (so ``target`` never holds a partial
    tree), then ``source`` removed. A failure before that rename leaves ``source`` untouched."""
    try:
        os.rename(source, target)
        return
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
    if os.path.lexists(target):
        raise FileExistsError(errno.EEXIST, "target exists", os.fspath(target))
    staging = target.parent / f".{target.name}.{os.getpid()}.move"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        shutil.copytree(source, staging, symlinks=True, copy_function=_copy_synced)
        _fsync_tree(staging)
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    fsync_directory(target.parent)
    shutil.rmtree(source)
    fsync_directory(source.parent)


def _copy_synced(source: str, target: str) -> str:
    shutil.copy2(source, target)
    fd = os.open(target, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return target


def _fsync_tree(root: Path) -> None:
    for directory, _dirs, _files in os.walk(root):
        fsync_directory(Path(directory))
