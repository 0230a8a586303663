"""Bytes to entries and back: the line codec, ids, entry shapes, migration and the persistence
transform. Pure: no I/O, no clock (callers pass both in)."""

__all__: list[str] = []
