from collections.abc import Collection
from typing import Any

COMPILED: bool

def scan(data: bytes, start: int, end: int, hooks: Any, stateful: Collection[str]) -> tuple[Any, ...]: ...
def line_readable(line: bytes, stateful: Collection[str] = ()) -> bool: ...
