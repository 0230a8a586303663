"""Pausing the cyclic garbage collector while building many objects at once.

Parsed JSON is acyclic, so the collector has nothing to free while a session is decoded; left on,
it walks every container built so far again and again (about half the cost of a large load).

Re-enabling it is not the end of the cost: the new objects are all in the young generation, whose
allocation count is far past its threshold, so the caller's next allocation starts a collection
that walks every one of them (0.2–0.5 s after a load of 100,000 entries), and they are walked
again when they move on to the middle generation. :class:`gc_paused` therefore *promotes* the
objects built inside the block to the oldest generation on the way out (``gc.freeze()`` followed
at once by ``gc.unfreeze()``: two constant-time list moves that also reset the young count).
They are then examined only by full collections, which CPython spaces out in proportion to the
number of long-lived objects; reference counting frees them as usual when they are dropped.

The promotion also moves whatever young objects the caller had to the oldest generation (a
garbage cycle among them is freed by the next full collection instead of the next young one). It
is skipped when the process uses ``gc.freeze()`` itself (``gc.get_freeze_count() > 0``), since
``gc.unfreeze()`` would undo that; then the young collection simply runs as before.

Internal module (used by the store while it builds many entries); not part of the public API.
"""

from __future__ import annotations

import gc
from types import TracebackType

__all__ = ["gc_paused"]


class gc_paused:  # named like a function: it is used as ``with gc_paused():``
    """Disable the cyclic collector for the block (nesting is fine; the outermost re-enables and
    promotes what was built to the oldest generation, see the module docstring).

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
            promote_young()
            gc.enable()


def promote_young() -> None:
    """Move every object the collector tracks to its oldest generation without walking them
    (see the module docstring); a no-op while the process has frozen objects of its own."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()
