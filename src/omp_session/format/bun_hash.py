"""``Bun.hash``: Zig's ``std.hash.Wyhash`` with seed 0 over a string's UTF-8 bytes.

One owner for a JavaScript-runtime fact two omp rules depend on: pi-ai derives replacement OpenAI
item ids from it (``fc_`` + the hash in base 36), and omp 18.3's secret obfuscator seeds its
deterministic replacements with it. Either output is byte-equal with omp only with the same 64-bit
hash.
"""

from __future__ import annotations

__all__ = ["bun_hash", "bun_hash_base36"]

_MASK = (1 << 64) - 1
_SECRET = (0xA0761D6478BD642F, 0xE7037ED1A0B428DB, 0x8EBC6AF09C88C6E3, 0x589965CC75374CC3)
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def _mum(a: int, b: int) -> tuple[int, int]:
    product = a * b
    return product & _MASK, (product >> 64) & _MASK


def _mix(a: int, b: int) -> int:
    low, high = _mum(a, b)
    return low ^ high


def _read(data: bytes, offset: int, size: int) -> int:
    return int.from_bytes(data[offset : offset + size], "little")


def bun_hash(text: str | bytes, seed: int = 0) -> int:
    """The unsigned 64-bit ``Bun.hash(text)`` (a ``str`` is hashed as its UTF-8 bytes)."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    length = len(data)
    state0 = seed ^ _mix(seed ^ _SECRET[0], _SECRET[1])
    state = [state0, state0, state0]
    if length <= 16:
        if length >= 4:
            end = length - 4
            quarter = (length >> 3) << 2
            a = (_read(data, 0, 4) << 32) | _read(data, quarter, 4)
            b = (_read(data, end, 4) << 32) | _read(data, end - quarter, 4)
        elif length > 0:
            a = (data[0] << 16) | (data[length >> 1] << 8) | data[length - 1]
            b = 0
        else:
            a = b = 0
    else:
        start = 0
        if length >= 48:
            while start + 48 < length:
                for lane in range(3):
                    x = _read(data, start + 16 * lane, 8)
                    y = _read(data, start + 16 * lane + 8, 8)
                    state[lane] = _mix(x ^ _SECRET[lane + 1], y ^ state[lane])
                start += 48
            state[0] ^= state[1] ^ state[2]
        position = start
        while position + 16 < length:
            state[0] = _mix(_read(data, position, 8) ^ _SECRET[1], _read(data, position + 8, 8) ^ state[0])
            position += 16
        a = _read(data, length - 16, 8)
        b = _read(data, length - 8, 8)
    a ^= _SECRET[1]
    b ^= state[0]
    a, b = _mum(a, b)
    return _mix(a ^ _SECRET[0] ^ length, b ^ _SECRET[1])


def bun_hash_base36(text: str) -> str:
    """``Bun.hash(text).toString(36)``."""
    value = bun_hash(text)
    if value == 0:
        return "0"
    digits = []
    while value:
        value, digit = divmod(value, 36)
        digits.append(_DIGITS[digit])
    return "".join(reversed(digits))
