"""Pausing the cyclic garbage collector while building many objects at once.

Parsed JSON is acyclic, so the collector has nothing to free while a session is decoded; left on,
it walks every container built so far again and again (about half the cost of a large load).
The collection the new objects are due for then happens at the caller's next allocation, as
after any bulk load done with the collector paused.

Internal module (used by the store while it builds many entries); not part of the public API.
"""

from __future__ import annotations

import gc
from types import TracebackType

__all__ = ["gc_paused"]


class gc_paused:  # named like a function: it is used as ``with gc_paused():``
    """Disable the cyclic collector for the block (nesting is fine; the outermost re-enables).

    A class rather than ``@contextmanager``: leaving a generator allocates, which would start the
    pending collection inside the block's caller instead of after it returns.
    """

    __slots__ = ("_was_enabled",)

    def __enter__(self) -> None:
        self._was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._was_enabled:
            gc.enable()
