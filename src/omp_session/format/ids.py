"""Session ids, entry ids and timestamps (reference semantics §1.3–§1.5).

Everything here is pure except the clock and the randomness this module owns:

* session ids are 16-hex Snowflakes (§1.4),
* entry ids are the last 8 hex chars of a random UUIDv4, with a Snowflake fallback (§1.5),
* timestamps are JS ``toISOString`` strings, parsed back with JS ``Date.parse`` rules (§4.2, §6.4).
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import threading
import time
from collections.abc import Callable, Container
from datetime import datetime, timezone

__all__ = [
    "SNOWFLAKE_EPOCH_MS",
    "SnowflakeGenerator",
    "decode_snowflake",
    "file_timestamp",
    "is_time_value",
    "iso_from_ms",
    "iso_to_ms",
    "new_entry_id",
    "new_session_id",
    "now_iso",
    "now_ms",
]

#: 2015-01-01T00:00:00.000Z in Unix milliseconds: the custom Snowflake epoch (§1.4).
SNOWFLAKE_EPOCH_MS = 1420070400000

_SEQ_BITS = 22
_SEQ_MASK = (1 << _SEQ_BITS) - 1
_TIME_BITS = 42
_MS_PER_DAY = 86_400_000
#: ECMAScript time values are limited to ±8.64e15 ms (100 million days around 1970).
_MAX_TIME_MS = 8_640_000_000_000_000
_ENTRY_ID_ATTEMPTS = 100
_HEX_RE = re.compile(r"[0-9a-fA-F]{1,16}", re.ASCII)


def now_ms() -> int:
    """Current Unix time in whole milliseconds (JS ``Date.now()``)."""
    return time.time_ns() // 1_000_000


class SnowflakeGenerator:
    """Thread-safe generator of 13.19.0 session ids (§1.4).

    Layout: bits 63..22 = milliseconds since :data:`SNOWFLAKE_EPOCH_MS`, bits 21..0 = a sequence that
    starts at a random 22-bit value and is incremented (mod 2^22) *before* every use. As upstream, there
    is no per-millisecond reset and no clock-regression guard.
    """

    def __init__(self, start_seq: int | None = None, clock: Callable[[], int] = now_ms) -> None:
        """Create a generator; ``start_seq`` (default random) and ``clock`` are injectable for tests."""
        self._seq = secrets.randbits(_SEQ_BITS) if start_seq is None else start_seq & _SEQ_MASK
        self._clock = clock
        self._lock = threading.Lock()

    def next_id(self, now_ms: int | None = None) -> str:
        """Return the next id as 16 lowercase, zero-padded hex chars.

        Raises ``ValueError`` if the time lies before the epoch or beyond the 42-bit range (year 2154):
        such an id would not be 16 hex chars.
        """
        now = self._clock() if now_ms is None else now_ms
        delta = now - SNOWFLAKE_EPOCH_MS
        if not 0 <= delta < (1 << _TIME_BITS):
            raise ValueError(f"time {now} ms is outside the Snowflake range")
        with self._lock:
            self._seq = (self._seq + 1) & _SEQ_MASK
            seq = self._seq
        return f"{(delta << _SEQ_BITS) | seq:016x}"


_DEFAULT_GENERATOR = SnowflakeGenerator()


def new_session_id() -> str:
    """A fresh session id from the process-wide generator (§1.4)."""
    return _DEFAULT_GENERATOR.next_id()


def new_uuid_v7(now: int | None = None) -> str:
    """A UUIDv7 (RFC 9562): 48 bits of Unix ms, version 7, 74 random bits; omp 18's session id
    (``Bun.randomUUIDv7()``, omp18-differences §7). Lowercase, with dashes.

    >>> uid = new_uuid_v7(0x0123456789AB)
    >>> uid[:13], uid[14], len(uid)
    ('01234567-89ab', '7', 36)
    """
    ms = (now_ms() if now is None else now) & ((1 << 48) - 1)
    rand = int.from_bytes(os.urandom(10), "big")
    rand_a, rand_b = rand >> 68, rand & ((1 << 62) - 1)
    value = (ms << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def decode_snowflake(hex_id: str) -> tuple[int, int]:
    """Decode a Snowflake id into ``(unix_ms, seq)`` (§1.4).

    Only 1–16 hex digits are accepted (``ValueError`` otherwise); remember that readers must accept any
    string as a session id, so callers should not treat a failure here as a corrupt session.
    """
    if not _HEX_RE.fullmatch(hex_id):
        raise ValueError(f"not a Snowflake id: {hex_id!r}")
    value = int(hex_id, 16)
    return (value >> _SEQ_BITS) + SNOWFLAKE_EPOCH_MS, value & _SEQ_MASK


#: Random 8-hex-digit suffixes drawn ahead, 512 per ``urandom`` call: one system call per entry
#: was a tenth of an append's cost. Emptied in a forked child, which must not repeat its parent's.
_suffix_pool: list[str] = []
_POOL_BYTES = 2048
os.register_at_fork(after_in_child=_suffix_pool.clear)


def random_entry_suffix() -> str:
    """32 random bits as 8 hex digits: what omp takes from the end of a v4 UUID, 6× cheaper."""
    try:
        return _suffix_pool.pop()
    except IndexError:
        digits = os.urandom(_POOL_BYTES).hex()
        _suffix_pool.extend(digits[start : start + 8] for start in range(0, len(digits), 8))
        return _suffix_pool.pop()


def new_entry_id(existing: Container[str], *, generator: SnowflakeGenerator | None = None) -> str:
    """Return a fresh entry id that is not in ``existing`` (§1.5).

    13.19.0 takes the *last* 8 hex chars of a random UUIDv4 (32 random bits; we draw the same bits
    directly) and retries up to 100 times
    against the id index; after 100 collisions it falls back to a full 16-hex Snowflake (unchecked).
    """
    candidate = random_entry_suffix()
    if candidate not in existing:
        return candidate  # the first draw, outside the retry loop: every append draws one
    for _ in range(_ENTRY_ID_ATTEMPTS - 1):
        candidate = random_entry_suffix()
        if candidate not in existing:
            return candidate
    return (generator or _DEFAULT_GENERATOR).next_id()


class StableEntryIds:
    """Entry ids derived from a seed and a counter: the same file gets the same ids on every load.

    omp gives a v1 file random ids each time it is loaded (until the migrated file is rewritten),
    so an id printed by one tool is gone at the next read. Ids from here have omp's shape (8 hex)
    and are checked against ``existing`` like :func:`new_entry_id`.
    """

    def __init__(self, seed: str) -> None:
        self._seed = seed
        self._counter = 0

    def __call__(self, existing: Container[str]) -> str:
        while True:
            self._counter += 1
            digest = hashlib.sha256(f"{self._seed}\0{self._counter}".encode("utf-8", "surrogatepass"))
            candidate = digest.hexdigest()[-8:]
            if candidate not in existing:
                return candidate


# --- timestamps -------------------------------------------------------------------------------------


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year, H. Hinnant's algorithm)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * ((month + 9) % 12) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """Inverse of :func:`_days_from_civil`."""
    days += 719468
    era = days // 146097
    doe = days - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def is_time_value(ms: float) -> bool:
    """Whether ``ms`` is a valid ECMAScript time value: finite and within ±8.64e15 ms (what JS's
    ``new Date(ms).toISOString()`` accepts; beyond it JS throws ``RangeError``)."""
    return -_MAX_TIME_MS <= ms <= _MAX_TIME_MS


def iso_from_ms(ms: int) -> str:
    """Render Unix milliseconds like JS ``Date.prototype.toISOString`` (UTC, always with ms and ``Z``).

    Years outside 0000–9999 use the expanded ``±YYYYYY`` form, as JS does. Raises ``ValueError`` outside
    the ECMAScript time range (JS throws ``RangeError``).
    """
    if abs(ms) > _MAX_TIME_MS:
        raise ValueError(f"time value {ms} out of range")
    days, rem = divmod(ms, _MS_PER_DAY)
    year, month, day = _civil_from_days(days)
    secs, millis = divmod(rem, 1000)
    hh, mm, ss = secs // 3600, secs // 60 % 60, secs % 60
    year_s = f"{year:04d}" if 0 <= year <= 9999 else f"{'+' if year > 0 else '-'}{abs(year):06d}"
    return f"{year_s}-{month:02d}-{day:02d}T{hh:02d}:{mm:02d}:{ss:02d}.{millis:03d}Z"


_second_cache: tuple[int, str] = (-1, "")
_last_stamp: tuple[int, str] = (-1, "")


def now_iso(ms: int | None = None) -> str:
    """Current time (or the given Unix ms) as ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (§1.3, 24 chars)."""
    global _second_cache, _last_stamp
    if ms is None:
        ms = time.time_ns() // 1_000_000  # now_ms() inlined: every append stamps its entry
    last_ms, stamp = _last_stamp
    if ms == last_ms:
        return stamp  # appends take microseconds: most share their millisecond with the one before
    second, millis = divmod(ms, 1000)
    cached_second, prefix = _second_cache
    if second != cached_second:
        # Every append stamps its entry: format the date part once per second, not per call.
        prefix = iso_from_ms(second * 1000)[:-4]
        _second_cache = (second, prefix)
    stamp = f"{prefix}{millis:03d}Z"
    _last_stamp = (ms, stamp)
    return stamp


def file_timestamp(iso: str) -> str:
    """The file-name form of an ISO timestamp: every ``:`` and ``.`` becomes ``-`` (§1.3)."""
    return iso.replace(":", "-").replace(".", "-")


# The ES date-time string format as accepted by JavaScriptCore's ``parseES5Date`` (Bun's engine):
# the year goes through strtol (leading C whitespace, a sign and any number of digits allowed),
# month/day/hour/minute/second are exactly two digits, seconds are optional, the fraction takes any
# number of digits, the separator may be "T", "t" or a space, the offset is Z, ±HH:MM, ±HHMM or ±HH.
_ISO_RE = re.compile(
    r"""
    [ \t\n\v\f\r]*(?P<year>[+-]?[0-9]+)
    (?:-(?P<month>[0-9]{2})(?:-(?P<day>[0-9]{2}))?)?
    (?:[Tt\ ](?P<hour>[0-9]{2}):(?P<minute>[0-9]{2})
        (?::(?P<second>[0-9]{2})(?:\.(?P<frac>[0-9]+))?)?
        (?P<tz>Z|[+-](?:[0-9]{2}:[0-9]{2}|[0-9]{4}|[0-9]{2}))?
    )?
    """,
    re.VERBOSE | re.ASCII,
)
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MAX = 2**63 - 1
_DAYS_IN_MONTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _tz_offset_seconds(tz: str) -> int | None:
    """Seconds east of UTC for ``Z``/``±HH:MM``/``±HHMM``/``±HH``; None if out of range (JSC rules)."""
    if tz == "Z":
        return 0
    digits = tz[1:]
    if len(digits) == 5:
        hours, minutes = int(digits[:2]), int(digits[3:])
    elif len(digits) == 4:
        hours, minutes = divmod(int(digits), 100)
    else:
        hours, minutes = int(digits), 0
    if hours > 24 or minutes > 59:
        return None
    seconds = (hours * 60 + minutes) * 60
    return -seconds if tz[0] == "-" else seconds


def _local_offset_ms(local_ms: int) -> int:
    """UTC offset (ms) of the process time zone at a wall-clock time (offset-less date-times are local)."""
    secs = local_ms // 1000
    try:
        guess = time.localtime(secs).tm_gmtoff
        return time.localtime(secs - guess).tm_gmtoff * 1000
    except (OverflowError, OSError, ValueError):
        return time.localtime().tm_gmtoff * 1000


def _fraction_ms(frac: str | None) -> int | None:
    """Whole milliseconds of a fraction of any length (extra digits truncated).

    None where JSC's strtol would overflow (a fraction whose value reaches 2^63-1 makes JSC return NaN).
    """
    if frac is None:
        return 0
    significant = frac.lstrip("0")
    # length test first: int() of a huge digit string is slow (and refused above 4300 digits)
    if len(significant) > 19 or (significant and int(significant) >= _LONG_MAX):
        return None
    return int(frac[:3].ljust(3, "0"))


def _valid_fields(y: int, mo: int, d: int, h: int, mi: int, s: int) -> bool:
    """JSC's range checks (hour 24 only as 24:00:00, second 60 tolerated as a leap second)."""
    if not (1 <= mo <= 12 and 1 <= d <= _DAYS_IN_MONTH[mo - 1]):
        return False
    if mo == 2 and d > 28 and not _is_leap(y):
        return False
    if h > 24 or (h == 24 and (mi or s)):
        return False
    return mi <= 59 and s <= 60


def iso_to_ms(value: object) -> int | None:
    """Parse an ISO-8601 timestamp with JS ``Date.parse`` semantics; ``None`` stands for JS ``NaN``.

    Follows JavaScriptCore's ISO ("ES5") parser, which Bun uses: ``Z`` or numeric offsets; date-only
    forms (``YYYY``, ``YYYY-MM``, ``YYYY-MM-DD``) are UTC; date-time forms *without* an offset are local
    time (ES2016); seconds and the fraction are optional; any number of fraction digits is accepted,
    digits after the third are dropped (whole milliseconds). Non-strings, strings outside this grammar,
    invalid field values and times beyond ±8.64e15 ms give ``None``. JSC's fallback parser for legacy
    formats (``"Tue, 01 Jan 2030 …"``, ``"1/2/2030"``) is deliberately not reproduced: such strings are
    never written by omp, and they also give ``None`` here.
    """
    if not isinstance(value, str):
        return None
    m = _ISO_RE.fullmatch(value)
    if m is None:
        return None
    if len(m["year"].lstrip("+-0")) > 10:  # certainly outside the C int range; avoid a huge int()
        return None
    year = int(m["year"])
    if not _INT_MIN < year < _INT_MAX or (year == 0 and value.startswith("-")):
        return None
    mo, d = int(m["month"] or 1), int(m["day"] or 1)
    h, mi, s = int(m["hour"] or 0), int(m["minute"] or 0), int(m["second"] or 0)
    frac_ms = _fraction_ms(m["frac"])
    tz = _tz_offset_seconds(m["tz"]) if m["tz"] else 0
    if frac_ms is None or tz is None or not _valid_fields(year, mo, d, h, mi, s):
        return None
    if s == 60:
        frac_ms = 0  # JSC discards the fraction of a leap second
    total = _days_from_civil(year, mo, d) * _MS_PER_DAY + ((h * 60 + mi) * 60 + s) * 1000 + frac_ms
    total -= tz * 1000
    if m["hour"] is not None and m["tz"] is None:
        total -= _local_offset_ms(total)
    return total if abs(total) <= _MAX_TIME_MS else None


def ms_to_datetime(ms: float | None) -> datetime | None:
    """A JavaScript time value as an aware UTC datetime; ``None`` for ``None`` and for the years
    JavaScript has but Python's datetime does not (beyond 9999, from a damaged file)."""
    if ms is None:
        return None
    try:
        return datetime.fromtimestamp(ms / 1000, timezone.utc)
    except (ValueError, OverflowError, OSError):
        return None
