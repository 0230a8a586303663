"""Growable columns of numbers for ``check``'s collector, in memory or spilled to disk (issue 11
item 14).

Everything :class:`~omp_session.tools.check_stream.EntryCollector` and its tool walk keep per entry,
per id and per level of a path lives in :class:`Column` objects made by one :class:`ColumnStore`.
A column is a buffer seen through ``memoryview.cast``: ``cells[i]`` reads and writes a number at C
speed, whatever holds the buffer. The store decides what holds it, and that is the only
difference between the two modes, so a small and a large file go through one algorithm:

* in memory (``ColumnStore(spill=False)``), a ``bytearray``;
* spilled (``ColumnStore(spill=True)``), a shared ``mmap`` of a temporary file of its own, made by
  :func:`tempfile.TemporaryFile` in the default temporary directory (``TMPDIR``): the file has no
  name from the start (``O_TMPFILE``, or unlinked at once), so nothing is left behind whatever
  happens to the process, not even after ``kill -9``, and nothing is ever written next to the
  session. :meth:`ColumnStore.close` (the store is a context manager) unmaps and closes them.
  Their blocks are reserved before use (``posix_fallocate``): a full disk raises
  :class:`~omp_session.errors.PersistenceError` naming the temporary directory, never ``SIGBUS``.

A mapped page that was touched stays in the process's resident set (``RssFile``) until it is
unmapped, so the spilled store drops them all from the process with ``madvise(MADV_DONTNEED)``
when they grow past :data:`RESIDENT_BUDGET_BYTES`: every :data:`LOOK_EVERY` steps the collector
reports (:meth:`ColumnStore.step`) it reads the process's file-backed resident pages
(``/proc/self/statm``, a few microseconds) and trims when they exceed what they were after the
last trim by the budget. The data stays in the file (and in the kernel's page cache, which the
kernel can write back and reuse); the resident set is bounded by the budget plus the pages touched
in :data:`LOOK_EVERY` steps, whatever the size of the file. Without ``/proc`` it trims every
:data:`LOOK_EVERY` × 16 steps.

Internal module (``tools/check_stream.py``); not part of the public API.
"""

from __future__ import annotations

import mmap
import os
import tempfile
from array import array
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Literal, Protocol

from omp_session.errors import PersistenceError

__all__ = ["LOOK_EVERY", "RESIDENT_BUDGET_BYTES", "Column", "ColumnStore", "TypeCode"]

#: The ``array`` type codes of the columns: 32-bit signed and unsigned, 64-bit, bytes.
TypeCode = Literal["i", "I", "q", "B"]

#: Mapped pages allowed to stay resident before a trim. Each trim makes every page touched after
#: it fault in again (a minor fault: the page is still in the page cache), so a larger budget
#: costs memory and a smaller one CPU (docs/durability.md, item 14).
RESIDENT_BUDGET_BYTES = 16 * 1024 * 1024
#: Steps (entries added, nodes walked) between two looks at the resident set: a step touches a
#: handful of pages (an id's slot, hash, end and bytes, the entry's columns), and a fault maps the
#: page cache's whole folio (64 KB here, measured), so 16 steps add a few MB at most past the
#: budget; a look costs a few microseconds.
LOOK_EVERY = 16
_STATM = "/proc/self/statm"
_FILL_BLOCK = 1 << 20  # bytes filled (and trimmed) at a time when a spilled column starts filled


class _Buffer(Protocol):
    data: bytearray | mmap.mmap

    def resize(self, size: int) -> None: ...
    def trim(self) -> None: ...
    def close(self) -> None: ...


class _MemoryBuffer:
    def __init__(self, size: int) -> None:
        self.data: bytearray | mmap.mmap = bytearray(size)

    def resize(self, size: int) -> None:
        assert isinstance(self.data, bytearray)
        self.data.extend(bytes(size - len(self.data)))

    def trim(self) -> None:
        pass

    def close(self) -> None:
        self.data = bytearray()


def _spill_failed(exc: OSError) -> PersistenceError:
    return PersistenceError(Path(tempfile.gettempdir()), exc)


class _FileBuffer:
    """A shared mapping of a nameless temporary file."""

    def __init__(self, size: int) -> None:
        try:
            # Closed by close() (the store is the context manager), or at once if mapping fails.
            self._file = tempfile.TemporaryFile(prefix="omp-session-check-")  # noqa: SIM115
        except OSError as exc:
            raise _spill_failed(exc) from exc
        try:
            size = max(size, mmap.PAGESIZE)  # a mapping cannot be empty
            self._allocate(size)
            self.data: bytearray | mmap.mmap = mmap.mmap(self._file.fileno(), size)
            self._random()
        except BaseException:
            self._file.close()
            raise

    def _allocate(self, size: int) -> None:
        # The disk blocks are reserved before the mapping reaches them: a full disk (or a file
        # size limit) is then an error here, where a write through the mapping would be SIGBUS.
        try:
            os.posix_fallocate(self._file.fileno(), 0, size)
        except OSError as exc:
            raise _spill_failed(exc) from exc

    def resize(self, size: int) -> None:
        assert isinstance(self.data, mmap.mmap)
        self._allocate(size)
        self.data.resize(size)  # (the file has that size already)
        self._random()

    def _random(self) -> None:
        # Without it a read fault maps the whole neighbourhood the page cache holds (fault-around
        # and large folios: 36 MB resident for 64 pages read, measured), which no budget can bound.
        assert isinstance(self.data, mmap.mmap)
        self.data.madvise(mmap.MADV_RANDOM)

    def trim(self) -> None:
        assert isinstance(self.data, mmap.mmap)
        self.data.madvise(mmap.MADV_DONTNEED)

    def close(self) -> None:
        try:
            if isinstance(self.data, mmap.mmap):
                self.data.close()
        except BufferError:  # a view of it is still alive (a frame of a traceback): unmapped when freed
            pass
        finally:
            self._file.close()


class Column:
    """A growable column of numbers of one ``array`` type code (``"i"``, ``"I"``, ``"q"``, ``"B"``).

    ``cells`` is the whole buffer as a ``memoryview`` (its capacity, not its length): hot loops
    index it directly. It changes when the column grows, so take it again after an append, and
    hold no slice of it (``view()``) across an append: growing would then raise ``BufferError``."""

    __slots__ = ("_buffer", "_length", "cells", "typecode")

    def __init__(self, buffer: _Buffer, typecode: TypeCode, length: int) -> None:
        self._buffer = buffer
        self.typecode = typecode
        self._length = length
        self.cells = memoryview(buffer.data).cast(typecode)

    def __len__(self) -> int:
        return self._length

    def _grow(self, needed: int) -> None:
        capacity = max(len(self.cells), 8)
        while capacity < needed:
            capacity *= 2
        itemsize = self.cells.itemsize
        self.cells.release()
        self._buffer.resize(capacity * itemsize)
        self.cells = memoryview(self._buffer.data).cast(self.typecode)

    def append(self, value: int) -> None:
        length = self._length
        if length == len(self.cells):
            self._grow(length + 1)
        self.cells[length] = value
        self._length = length + 1

    def extend(self, values: Iterable[int]) -> None:
        for value in values:
            self.append(value)

    def extend_from(self, values: memoryview | bytes) -> None:
        """Append a buffer of the same type code (``bytes`` for ``"B"``) in one copy."""
        length = self._length
        end = length + len(values)
        if end > len(self.cells):
            self._grow(end)
        self.cells[length:end] = values
        self._length = end

    def pop(self) -> int:
        self._length -= 1
        return int(self.cells[self._length])

    def view(self) -> memoryview:
        """The numbers themselves (``cells`` up to the length), to iterate or bisect."""
        return self.cells[: self._length]

    def close(self) -> None:
        try:
            self.cells.release()
        finally:
            self._buffer.close()


class ColumnStore:
    """Makes the columns of one ``check``, in memory or spilled to temporary files (see above)."""

    def __init__(self, *, spill: bool = False) -> None:
        self.spill = spill
        self._columns: list[Column] = []
        self._steps = 0
        self._statm = -1  # a descriptor of /proc/self/statm, while spilled
        self._budget = RESIDENT_BUDGET_BYTES // mmap.PAGESIZE
        self._baseline = 0  # file-backed resident pages after the last trim
        if spill:
            try:
                self._statm = os.open(_STATM, os.O_RDONLY)
                self._baseline = self._file_pages()
            except OSError:
                self._statm = -1

    def column(self, typecode: TypeCode, length: int = 0, fill: int = 0) -> Column:
        """A new column of ``length`` numbers, each ``fill``."""
        itemsize = memoryview(b"").cast(typecode).itemsize
        buffer: _Buffer = _FileBuffer(length * itemsize) if self.spill else _MemoryBuffer(length * itemsize)
        column = Column(buffer, typecode, length)
        self._columns.append(column)
        if fill:
            self._fill(column, fill)
        return column

    def _fill(self, column: Column, value: int) -> None:
        cells = column.cells
        block = max(min(_FILL_BLOCK // cells.itemsize, len(column)), 1)
        pattern = memoryview(array(column.typecode, [value]).tobytes() * block).cast(column.typecode)
        for start in range(0, len(column), block):
            stop = min(start + block, len(column))
            cells[start:stop] = pattern[: stop - start]
            column._buffer.trim()

    def copy(self, column: Column) -> Column:
        """A new column holding the same numbers (copied a block at a time, like a fill)."""
        copied = self.column(column.typecode, len(column))
        block = max(_FILL_BLOCK // column.cells.itemsize, 1)
        for start in range(0, len(column), block):
            stop = min(start + block, len(column))
            copied.cells[start:stop] = column.cells[start:stop]
            copied._buffer.trim()
            column._buffer.trim()
        return copied

    def free(self, column: Column) -> None:
        """Give a column's memory (or file) back before the end of the check."""
        column.close()
        self._columns = [kept for kept in self._columns if kept is not column]

    def _file_pages(self) -> int:
        """The process's resident file-backed (and shared) pages: the third number of statm."""
        return int(os.pread(self._statm, 128, 0).split()[2])

    def step(self) -> None:
        """Count one step of the work; a spilled store looks at its resident pages every
        :data:`LOOK_EVERY` steps and drops them past the budget (see the module's docstring)."""
        self._steps += 1
        if self._steps < LOOK_EVERY or not self.spill:
            return
        if self._statm < 0:
            if self._steps >= 16 * LOOK_EVERY:
                self.trim()
            return
        self._steps = 0
        if self._file_pages() - self._baseline > self._budget:
            self.trim()
            # What stays is not ours (libraries, a lazily imported module): the next budget
            # counts from here, so pages the store cannot drop never make it trim at every look.
            self._baseline = self._file_pages()

    def trim(self) -> None:
        """Drop every mapped page of a spilled store from the process (the data stays in the files)."""
        self._steps = 0
        if self.spill:
            for column in self._columns:
                column._buffer.trim()

    def close(self) -> None:
        """Unmap and close every column (their files have no name: closing frees their space)."""
        columns, self._columns = self._columns, []
        try:
            for column in columns:
                column.close()
        finally:
            if self._statm >= 0:
                os.close(self._statm)
                self._statm = -1

    def __enter__(self) -> ColumnStore:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()
