"""JavaScript's number and template-literal formatting, the one owner of both in the package.

omp writes numbers with ``JSON.stringify`` and builds prompt text with template literals
(``String(n)``). Both use ``Number.prototype.toString``: the shortest round-trip digits, fixed
notation for decimal exponents in (-6, 21], exponent form (``1.5e-7``, ``1e+21``) outside it.
Python's ``repr`` has the same digits but another layout (``1.5e-07``, ``1e+16``), so every place
that shows a number the way omp does goes through here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any


class _Undefined:
    def __repr__(self) -> str:
        return "UNDEFINED"


#: A key that is absent (JavaScript ``undefined``), as opposed to an explicit JSON ``null``:
#: pass it as the default of ``dict.get`` to keep the two apart.
UNDEFINED: Any = _Undefined()


def js_number(value: float) -> str:
    """Format a number exactly as JavaScript's ``JSON.stringify`` does (non-finite: ``null``).

    >>> [js_number(x) for x in (1.0, -0.0, 3e-05, 1.5e-07, 1e16, 1e21, 0.1)]
    ['1', '0', '0.00003', '1.5e-7', '10000000000000000', '1e+21', '0.1']
    """
    if math.isnan(value) or math.isinf(value):
        return "null"
    return number_to_string(value)


def number_to_string(value: float) -> str:
    """JavaScript's ``String(n)`` (``Number.prototype.toString``), as template literals use it.

    >>> [number_to_string(x) for x in (2.0, 1.5e-07, float("nan"), float("-inf"), 123456789012.5)]
    ['2', '1.5e-7', 'NaN', '-Infinity', '123456789012.5']
    """
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    # Number::toString: the shortest round-trip digits (Python's repr has the same ones) and the
    # decimal exponent n, then fixed notation for -6 < n <= 21, exponent form otherwise.
    mantissa, _, exponent_text = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    n = len(whole) + int(exponent_text or 0) - (len(whole + fraction) - len(digits))
    digits = digits.rstrip("0")
    sign, k = ("-" if value < 0 else ""), len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return f"{sign}{digits[:n]}.{digits[n:]}"
    if -6 < n <= 0:
        return f"{sign}0.{'0' * -n}{digits}"
    fraction = f".{digits[1:]}" if k > 1 else ""
    return f"{sign}{digits[0]}{fraction}e{'+' if n > 1 else '-'}{abs(n - 1)}"


def holds_float(value: Any) -> bool:
    """Whether a JSON-shaped value holds a float anywhere: only a float can be written
    differently by a generic JSON encoder (orjson writes ``1.0``, ``1e+16``) than by
    ``JSON.stringify``, so a value without one needs no number formatting pass at all (an encoder
    checks this before scanning any output). Anything that is not a dict, a list or a float (an
    ``orjson.Fragment`` of raw JSON included) counts as float-free. Raises ``RecursionError`` for
    a value nested deeper than Python recurses.

    >>> [holds_float(v) for v in ({"a": [1, "2.5"]}, {"a": [{"b": 2.5}]}, 3.0)]
    [False, True, True]
    """
    # Recursion only into containers and type identity checks first: this runs once per entry
    # written by an import, over values that are almost all strings and integers.
    kind = type(value)
    if kind is dict:
        items: Any = value.values()
    elif kind is list:
        items = value
    elif kind is str or kind is int or value is None or kind is bool:
        return False
    elif isinstance(value, Mapping):
        items = value.values()
    elif isinstance(value, list | tuple):
        items = value
    else:
        return isinstance(value, float)
    for item in items:
        kind = type(item)
        if kind is str or kind is int or item is None or kind is bool:
            continue
        if kind is float or holds_float(item):
            return True
    return False


def template_string(value: Any) -> str:
    """What a JavaScript template literal ``${value}`` produces for a JSON value (``UNDEFINED``
    for an absent key).

    >>> [template_string(v) for v in (UNDEFINED, None, True, 1.5e-07, "x", {"a": 1}, [1, None, "b"])]
    ['undefined', 'null', 'true', '1.5e-7', 'x', '[object Object]', '1,,b']
    """
    if value is UNDEFINED:
        return "undefined"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return number_to_string(value)
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return "[object Object]"
    if isinstance(value, Sequence):
        return ",".join("" if item is None else template_string(item) for item in value)
    return str(value)


__all__ = ["UNDEFINED", "holds_float", "js_number", "number_to_string", "template_string"]
