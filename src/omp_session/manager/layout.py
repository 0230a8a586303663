"""Which dialect a session follows and whether its file carries omp 18's title slot: the layout
rule "never strand an older omp" (docs/compatibility.md).

Internal module (part of :class:`~omp_session.SessionManager`, which is the API); not part of the public API.
"""

from __future__ import annotations

from pathlib import Path

from omp_session.dialects import Dialect, DialectChoice, auto_dialect, explicit_dialect
from omp_session.store import SessionStorage
from omp_session.store.slot_files import directory_has_slot_files

__all__ = ["dialect_for_file", "dialect_for_new"]


def dialect_for_new(
    choice: DialectChoice, directory: Path | None, storage: SessionStorage | None = None
) -> tuple[Dialect, bool]:
    """``(dialect, layout_locked)`` for a new session file in ``directory``.

    Explicit (argument or ``OMP_SESSION_DIALECT``): that dialect, writing as its omp does. Auto:
    omp 18's rules and slot only when the store already holds omp 18 slot files, so an omp 13.19
    sharing the store is never handed a file it would overwrite (docs/compatibility.md).
    ``storage``: a database store whose rows in ``directory`` are looked at instead of files.
    """
    explicit = explicit_dialect(choice)
    if explicit is not None:
        return explicit, False
    return auto_dialect(directory is not None and directory_has_slot_files(directory, storage)), True


def dialect_for_file(choice: DialectChoice, has_slot: bool) -> tuple[Dialect, bool]:
    """``(dialect, layout_locked)`` for an existing file; auto keeps its layout, slot or not."""
    explicit = explicit_dialect(choice)
    if explicit is not None:
        return explicit, False
    return auto_dialect(has_slot), True
