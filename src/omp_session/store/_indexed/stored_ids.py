"""The id lookups of an offset index being extended over appended lines.

Internal module (part of ``SessionManager.open``); not part of the public API.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from omp_session.store._indexed.offsets import OffsetIndex

__all__ = ["StoredIdPositions"]


class StoredIdPositions(MutableMapping[str, int]):
    """``IndexBuilder.id_positions`` for an extension of ``stored``: the new ids in a dict, the
    stored ones found in the stored id column (by hash, then a search: a fresh id costs a few
    comparisons) instead of a dict of every id built for the few lines appended."""

    #: Stored ids looked up by a search of the id column before a dict of them all is cheaper (each
    #: search scans the column; appends name a stored id only where they branch off it).
    SEARCHES = 64

    def __init__(self, stored: OffsetIndex) -> None:
        self._stored = stored
        self._new: dict[str, int] = {}
        self._searches = 0
        self._all: dict[str, int] | None = None

    def _find(self, key: object) -> int | None:
        if not isinstance(key, str):
            return None
        found = self._new.get(key)
        if found is not None:
            return found
        if self._all is not None:
            return self._all.get(key)
        found = self._stored.find_id(key)  # a fresh id: a hash and a bisection, no search
        if found is not None:
            self._searches += 1
            if self._searches >= self.SEARCHES:
                ids = self._stored.all_ids()
                self._all = {entry_id: at for at, entry_id in enumerate(ids) if entry_id is not None}
        return found

    def __getitem__(self, key: str) -> int:
        found = self._find(key)
        if found is None:
            raise KeyError(key)
        return found

    def get(self, key: str, default: Any = None) -> Any:
        found = self._find(key)
        return default if found is None else found

    def __contains__(self, key: object) -> bool:
        return self._find(key) is not None

    def __setitem__(self, key: str, value: int) -> None:
        self._new[key] = value

    def __delitem__(self, key: str) -> None:
        del self._new[key]

    def __iter__(self) -> Iterator[str]:
        yield from (entry_id for entry_id in self._stored.all_ids() if entry_id is not None)
        yield from self._new

    def __len__(self) -> int:
        return sum(1 for _ in self)
