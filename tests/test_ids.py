"""Tests of omp_session.format.ids: Snowflake session ids, entry ids, JS-compatible timestamps (§1.3–§1.5)."""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Iterator

import pytest

from omp_session.format import ids
from omp_session.format.ids import (
    SNOWFLAKE_EPOCH_MS,
    SnowflakeGenerator,
    decode_snowflake,
    file_timestamp,
    iso_from_ms,
    iso_to_ms,
    new_entry_id,
    new_session_id,
    now_iso,
)

# §1.4 [verified]: this id was generated in the same millisecond as 2026-11-30T08:25:49.226Z.
VERIFIED_ID = "15e2312eeaab092c"
VERIFIED_MS = 1796027149226
HEX16 = re.compile(r"[0-9a-f]{16}")


# --- Snowflake ---------------------------------------------------------------------------------------


def test_epoch_is_2015() -> None:
    assert SNOWFLAKE_EPOCH_MS == 1420070400000
    assert iso_from_ms(SNOWFLAKE_EPOCH_MS) == "2015-01-01T00:00:00.000Z"


def test_decode_verified_id() -> None:
    unix_ms, seq = decode_snowflake(VERIFIED_ID)
    assert unix_ms == VERIFIED_MS
    assert iso_from_ms(unix_ms) == "2026-11-30T08:25:49.226Z"
    assert seq == int(VERIFIED_ID, 16) & 0x3FFFFF


def test_layout_time_in_high_bits_sequence_in_low_22_bits() -> None:
    gen = SnowflakeGenerator(start_seq=41)
    sid = gen.next_id(VERIFIED_MS)
    assert HEX16.fullmatch(sid)
    assert int(sid, 16) == ((VERIFIED_MS - SNOWFLAKE_EPOCH_MS) << 22) | 42  # incremented before use
    assert decode_snowflake(sid) == (VERIFIED_MS, 42)


def test_zero_padded_to_16_chars() -> None:
    gen = SnowflakeGenerator(start_seq=0)
    assert gen.next_id(SNOWFLAKE_EPOCH_MS) == "0000000000000001"
    assert gen.next_id(SNOWFLAKE_EPOCH_MS + 1) == "0000000000400002"


def test_sequence_increments_without_per_ms_reset() -> None:
    gen = SnowflakeGenerator(start_seq=10)
    seqs = [decode_snowflake(gen.next_id(VERIFIED_MS + i))[1] for i in range(3)]
    assert seqs == [11, 12, 13]


def test_sequence_wraps_mod_2_pow_22() -> None:
    gen = SnowflakeGenerator(start_seq=0x3FFFFE)
    seqs = [decode_snowflake(gen.next_id(VERIFIED_MS))[1] for _ in range(3)]
    assert seqs == [0x3FFFFF, 0, 1]


def test_start_sequence_is_random_22_bit() -> None:
    starts = {decode_snowflake(SnowflakeGenerator().next_id(VERIFIED_MS))[1] for _ in range(20)}
    assert all(0 <= s <= 0x3FFFFF for s in starts)
    assert len(starts) > 1


def test_injected_clock_is_used() -> None:
    gen = SnowflakeGenerator(start_seq=0, clock=lambda: VERIFIED_MS)
    assert decode_snowflake(gen.next_id()) == (VERIFIED_MS, 1)


def test_times_outside_the_42_bit_range_are_refused() -> None:
    gen = SnowflakeGenerator(start_seq=0)
    with pytest.raises(ValueError):
        gen.next_id(SNOWFLAKE_EPOCH_MS - 1)
    with pytest.raises(ValueError):
        gen.next_id(SNOWFLAKE_EPOCH_MS + (1 << 42))
    assert gen.next_id(SNOWFLAKE_EPOCH_MS + (1 << 42) - 1).startswith("ffffffffff")


def test_thread_safe_unique_ids() -> None:
    gen = SnowflakeGenerator(start_seq=0)
    out: list[str] = []
    lock = threading.Lock()

    def work() -> None:
        local = [gen.next_id(VERIFIED_MS) for _ in range(500)]
        with lock:
            out.extend(local)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(out)) == 4000
    assert {decode_snowflake(i)[1] for i in out} == set(range(1, 4001))


def test_new_session_id_is_current() -> None:
    before = int(time.time() * 1000)
    sid = new_session_id()
    after = int(time.time() * 1000)
    assert HEX16.fullmatch(sid)
    assert before - 1 <= decode_snowflake(sid)[0] <= after + 1
    assert new_session_id() != sid


@pytest.mark.parametrize("bad", ["", "xyz", "15e2312eeaab092c0", " 1", "1_0", "+1", "0x1f"])
def test_decode_rejects_non_hex(bad: str) -> None:
    with pytest.raises(ValueError):
        decode_snowflake(bad)


# --- entry ids ---------------------------------------------------------------------------------------


class _Everything:
    """A container that claims to hold every id, forcing 100 collisions."""

    def __init__(self) -> None:
        self.queries = 0

    def __contains__(self, item: object) -> bool:
        self.queries += 1
        return True


def test_entry_id_is_32_random_bits_as_8_hex(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "urandom", lambda n: bytes.fromhex("89abcdef")[:n])  # what ids draws from
    ids._suffix_pool.clear()  # drawn ahead: the next id comes from the next urandom call
    assert new_entry_id(set()) == "89abcdef"
    ids._suffix_pool.clear()


def test_a_forked_child_draws_other_entry_ids_than_its_parent() -> None:
    new_entry_id(set())  # the parent's pool is filled
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read_end)
        os.write(write_end, "".join(new_entry_id(set()) for _ in range(20)).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        child = pipe.read().decode()
    os.waitpid(pid, 0)
    parent = "".join(new_entry_id(set()) for _ in range(20))
    assert len(child) == len(parent) == 160
    assert child != parent


def test_entry_id_format_and_uniqueness() -> None:
    seen: set[str] = set()
    for _ in range(2000):
        eid = new_entry_id(seen)
        assert re.fullmatch(r"[0-9a-f]{8}", eid)
        assert eid not in seen
        seen.add(eid)


def test_entry_id_retries_past_collisions(monkeypatch: pytest.MonkeyPatch) -> None:
    values = iter(["aaaaaaaa"] * 5 + ["bbbbbbbb"])
    monkeypatch.setattr(ids, "random_entry_suffix", lambda: next(values))
    assert new_entry_id({"aaaaaaaa"}) == "bbbbbbbb"


def test_entry_id_falls_back_to_snowflake_after_100_collisions() -> None:
    everything = _Everything()
    gen = SnowflakeGenerator(start_seq=0, clock=lambda: VERIFIED_MS)
    eid = new_entry_id(everything, generator=gen)
    assert everything.queries == 100
    assert eid == f"{((VERIFIED_MS - SNOWFLAKE_EPOCH_MS) << 22) | 1:016x}"


def test_entry_id_fallback_uses_default_generator() -> None:
    eid = new_entry_id(_Everything())
    assert HEX16.fullmatch(eid)


# --- timestamps --------------------------------------------------------------------------------------


def test_now_iso_format() -> None:
    stamp = now_iso()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z", stamp)
    assert len(stamp) == 24
    assert abs(iso_to_ms(stamp) - time.time() * 1000) < 5000  # type: ignore[operator]


def test_now_iso_with_explicit_ms() -> None:
    assert now_iso(VERIFIED_MS) == "2026-11-30T08:25:49.226Z"
    assert now_iso(0) == "1970-01-01T00:00:00.000Z"
    assert now_iso(5) == "1970-01-01T00:00:00.005Z"


@pytest.mark.parametrize(
    ("ms", "iso"),
    [
        (-1, "1969-12-31T23:59:59.999Z"),
        (951782400000, "2000-02-29T00:00:00.000Z"),
        (-62198755200000, "-000001-01-01T00:00:00.000Z"),
        (-62167219200000, "0000-01-01T00:00:00.000Z"),
        (253402300799999, "9999-12-31T23:59:59.999Z"),
        (253402300800000, "+010000-01-01T00:00:00.000Z"),
        (8_640_000_000_000_000, "+275760-09-13T00:00:00.000Z"),
    ],
)
def test_iso_from_ms_matches_to_iso_string(ms: int, iso: str) -> None:
    assert iso_from_ms(ms) == iso
    assert iso_to_ms(iso) == ms


def test_iso_from_ms_out_of_range() -> None:
    with pytest.raises(ValueError):
        iso_from_ms(8_640_000_000_000_001)


def test_file_timestamp_replaces_colons_and_dots() -> None:
    assert file_timestamp("2026-11-30T08:25:49.226Z") == "2026-11-30T08-25-49-226Z"
    assert file_timestamp("a:b.c/d") == "a-b-c/d"  # only ':' and '.' (the seed's '/' is a typo)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-30T08:25:49.226Z", VERIFIED_MS),
        ("2020-01-01T00:00:00.000Z", 1577836800000),
        ("2020-01-01T00:00:00Z", 1577836800000),  # missing ms
        ("2020-01-01T00:00Z", 1577836800000),  # missing seconds
        ("2020-01-01", 1577836800000),  # date-only is UTC
        ("2020-06", 1590969600000),
        ("2020", 1577836800000),
        ("2020-01-01T10:00+02:00", 1577865600000),
        ("2020-01-01T10:00:00-05:30", 1577892600000),
        ("2020-01-01T10:00:00+0530", 1577853000000),
        ("2020-01-01T10:00:00-05", 1577890800000),  # JSC accepts ±HH
        ("2020-01-01T10:00:00.5Z", 1577872800500),  # one fraction digit = 500 ms
        ("2020-01-01T10:00:00.12Z", 1577872800120),
        ("2020-01-01T10:00:00.1239Z", 1577872800123),  # extra digits truncated, not rounded
        ("2020-01-01T10:00:00.999999999Z", 1577872800999),
        ("2020-01-01t10:00:00Z", 1577872800000),  # JSC accepts 't' and ' '
        ("2020-01-01 10:00:00Z", 1577872800000),
        ("2020-01-01T24:00:00Z", 1577923200000),  # end of day
        ("2016-12-31T23:59:60Z", 1483228800000),  # leap second clamps to the next minute
        ("2020-02-29T00:00:00Z", 1582934400000),
        ("+002020-01-01T00:00:00Z", 1577836800000),
        ("-000001-01-01T00:00:00Z", -62198755200000),
        ("1969-12-31T23:59:59.999Z", -1),
    ],
)
def test_iso_to_ms_valid(text: str, expected: int) -> None:
    assert iso_to_ms(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "garbage",
        "2020-13-01",
        "2020-00-01",
        "2021-02-29",  # not a leap year
        "2020-04-31",
        "2020-01-01T25:00:00Z",
        "2020-01-01T24:00:01Z",
        "2020-01-01T10:60:00Z",
        "2020-01-01T10:00:61Z",
        "2020-01-01T10:00:00.Z",  # '.' without digits
        "2020-01-01T10Z",  # minutes required
        "2020-01-01T1:00:00Z",  # two-digit fields
        "2020-1-01",
        "2020-01-01T10:00:00z",  # only an uppercase Z
        "2020-01-01T10:00:00+25:00",
        "2020-01-01T10:00:00+02:60",
        "2020-01-01T10:00:00+123",
        "2020-01-01T10:00:00Z ",  # trailing junk
        "2020-01-01X10:00:00Z",
        "-000000-01-01T00:00:00Z",  # negative zero year
        "+275760-09-13T00:00:00.001Z",  # beyond ±8.64e15 ms
        "2020-01-01T10:00:00.99999999999999999999Z",  # fraction overflows JSC's strtol
        "9" * 5000,  # huge year: no slow/refused int()
        "Tue, 01 Jan 2030 00:00:00 GMT",  # legacy formats are not supported
        "2020-01-01T10:00:00.000Z\u0660",
        "٢٠٢٠-01-01",  # non-ASCII digits
    ],
)
def test_iso_to_ms_invalid(text: str) -> None:
    assert iso_to_ms(text) is None


@pytest.mark.parametrize("value", [None, 0, 1577836800000, 1.5, b"2020-01-01", ["2020"], {"a": 1}])
def test_iso_to_ms_non_strings_are_nan(value: object) -> None:
    assert iso_to_ms(value) is None


def test_iso_to_ms_long_fraction_with_leading_zeros() -> None:
    assert iso_to_ms("2020-01-01T00:00:00." + "0" * 5000 + "Z") == 1577836800000


@pytest.fixture
def posix_tz() -> Iterator[None]:
    """Switch the process time zone to a fixed UTC+2 (POSIX TZ string, no tzdata needed)."""
    if not hasattr(time, "tzset"):
        pytest.skip("time.tzset is POSIX-only")
    old = os.environ.get("TZ")
    os.environ["TZ"] = "TST-2"
    time.tzset()
    try:
        yield
    finally:
        if old is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = old
        time.tzset()


@pytest.mark.usefixtures("posix_tz")
def test_date_time_without_offset_is_local_time() -> None:
    # ES2016: date-time forms without an offset are local time, date-only forms are UTC.
    assert iso_to_ms("2020-01-01T10:00:00") == 1577872800000 - 2 * 3600_000
    assert iso_to_ms("2020-01-01T10:00") == 1577872800000 - 2 * 3600_000
    assert iso_to_ms("2020-01-01") == 1577836800000
    assert iso_to_ms("2020-01-01T10:00:00Z") == 1577872800000


def test_round_trip_now() -> None:
    stamp = now_iso()
    assert iso_from_ms(iso_to_ms(stamp)) == stamp  # type: ignore[arg-type]
