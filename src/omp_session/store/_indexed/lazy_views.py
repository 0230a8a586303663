"""The views a lazy index hands out: ``get_entries()``'s :class:`LazyEntries` and ``by_id``'s
:class:`LazyIds`, which decode entries on access instead of loading them all (issue 12 item 5),
and the search of an index column the lazy index uses for children.

Internal module (part of ``SessionManager.open``); not part of the public API.
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    from omp_session.store._indexed.lazy_index import LazySessionIndex

__all__ = ["LazyEntries", "LazyIds", "positions_of"]

Entry = dict[str, Any]


def positions_of(column: Sequence[int], value: int, start: int) -> list[int]:
    """The positions from ``start`` on where the integer ``column`` (an array or a memoryview of
    one) holds ``value``, searched in its bytes (in C: a scan of 4 bytes per entry)."""
    view = memoryview(column)  # type: ignore[arg-type]
    data, size = view.cast("B").tobytes(), view.itemsize
    wanted = struct.pack(view.format, value)
    found: list[int] = []
    at = data.find(wanted, start * size)
    while at >= 0:
        if at % size == 0:  # not the bytes of two neighbours run together
            found.append(at // size)
        at = data.find(wanted, at + 1)
    return found


class LazyIds(Mapping[str, Entry]):
    """``by_id`` of a lazy index: membership and lookups without loading every entry."""

    def __init__(self, owner: LazySessionIndex) -> None:
        self._owner = owner

    def __contains__(self, key: object) -> bool:
        return self._owner.has_id(key)

    def __getitem__(self, key: str) -> Entry:
        owner = self._owner
        if owner.materialized or not isinstance(key, str):
            return owner._materialize().by_id[key]
        found = owner.get(key)  # falls back to a full read if the file changed in place
        if found is None:
            raise KeyError(key)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._owner._materialize().by_id)

    def __len__(self) -> int:
        return len(self._owner._materialize().by_id)


class LazyEntries(Sequence[Entry]):
    """What ``get_entries()`` returns for a lazily opened file: the entries there were when it was
    made, decoded from the file on access (issue 12 item 5). Iterating decodes a chunk of lines at
    a time; indexing reads one line (and the lines after it when the previous index was the one
    before). A slice is a list. It equals any sequence of equal entries (a list, as a full load
    gives). It stays usable after the session is closed (it holds the file's descriptor)."""

    def __init__(self, index: LazySessionIndex, stop: int | None = None) -> None:
        self.lazy_index = index
        self._stop = index._length() if stop is None else stop
        self._last = -2  # the position indexed last: the next one reads ahead

    def __len__(self) -> int:
        return self._stop

    @overload
    def __getitem__(self, item: int) -> Entry: ...

    @overload
    def __getitem__(self, item: slice) -> list[Entry]: ...

    def __getitem__(self, item: int | slice) -> Entry | list[Entry]:
        if isinstance(item, slice):
            start, stop, step = item.indices(self._stop)
            if step == 1:
                return list(self.lazy_index._iterate(start, stop)) if start < stop else []
            return [self[position] for position in range(start, stop, step)]
        position = operator.index(item)
        if position < 0:
            position += self._stop
        if not 0 <= position < self._stop:
            raise IndexError(item)
        ahead, self._last = position == self._last + 1, position
        return self.lazy_index._entry_at(position, ahead)

    def __iter__(self) -> Iterator[Entry]:
        return self.lazy_index._iterate(0, self._stop)

    def __reversed__(self) -> Iterator[Entry]:
        return self.lazy_index._iterate_backwards(0, self._stop)

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        if not isinstance(other, Sequence) or isinstance(other, str | bytes | bytearray | memoryview):
            return NotImplemented
        return len(other) == self._stop and all(map(operator.eq, self, other))

    __hash__ = None  # type: ignore[assignment]  # equal to a list, which is unhashable too

    def index(self, value: Any, start: int = 0, stop: int | None = None) -> int:
        begin, end, _ = slice(start, stop).indices(self._stop)
        for position, entry in enumerate(self.lazy_index._iterate(begin, end), start=begin):
            if entry is value or entry == value:
                return position
        raise ValueError("entry not in the session's entries")

    def count(self, value: Any) -> int:
        return sum(1 for entry in self if entry is value or entry == value)

    def __repr__(self) -> str:
        return f"<LazyEntries of {self._stop} entries>"
