"""Writing an exported file atomically: a reader sees the old file or the whole new one, never half."""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from omp_session.errors import PersistenceError, TargetExistsError  # re-exported: the old import path
from omp_session.format.ids import new_session_id
from omp_session.store.atomic_files import fsync_directory

__all__ = ["TargetExistsError", "write_atomically"]


def _publish(temp: Path, target: Path, overwrite: bool) -> None:
    if overwrite:
        os.replace(temp, target)
        return
    try:
        os.link(temp, target)  # fails if target exists: no window in which it could be replaced
    except FileExistsError:
        raise TargetExistsError(target) from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV, errno.EMLINK):
            raise
        if target.exists():  # a filesystem without hard links: check, then rename
            raise TargetExistsError(target) from None
        os.replace(temp, target)
        return
    temp.unlink()


def write_atomically(target: Path | str, data: bytes, *, overwrite: bool = True) -> Path:
    """Write ``data`` to ``target`` through a fsynced temp file in the same directory.

    With ``overwrite=False`` an existing ``target`` raises :class:`TargetExistsError` and is left
    alone. Missing parent directories are created. Returns ``target``.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.with_name(f".{target.name}.{new_session_id()}.tmp")
    try:
        with open(temp, "xb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        _publish(temp, target, overwrite)
    except OSError as exc:
        raise PersistenceError(target, exc) from exc
    finally:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
    fsync_directory(target.parent)
    return target
