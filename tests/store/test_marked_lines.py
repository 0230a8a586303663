"""``marked_lines`` (the lines a load transform may change, recorded in the offset index) finds
exactly the lines that hold a marker or a ``\\u`` escape, however the markers are spread."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from omp_session.store._indexed.markers import Markers, marked_lines

_BLOB, _OPENAI, _ESCAPE = b"blob:sha256:", b"openaiResponsesHistory", b"\\u"
_PIECES = st.sampled_from(
    [b"a", b"u", b"\\", b"\\\\", b"\\u", b"\\\\u", b"\\n", _BLOB, _OPENAI, b"blob:", b"\xc3\xa9"]
)
_LINES = st.lists(st.lists(_PIECES, max_size=8).map(b"".join), min_size=1, max_size=30)


def _expected(lines: list[bytes], markers: Markers) -> list[int]:
    wanted = [_ESCAPE] + [m for m, present in ((_BLOB, markers.blob), (_OPENAI, markers.openai)) if present]
    return [at for at, line in enumerate(lines) if any(marker in line for marker in wanted)]


@given(lines=_LINES, prefix=st.integers(0, 3))
def test_the_marked_lines_are_those_with_a_marker_or_an_escape(lines: list[bytes], prefix: int) -> None:
    # ``prefix`` bytes before the range (as an extension of the index scans ``b"\\n" + chunk``),
    # and positions shifted as the index counts them.
    data = b"\n" * prefix + b"\n".join(lines) + b"\n"
    offsets, at = [], prefix
    for line in lines:
        offsets.append(at + 1000)
        at += len(line) + 1
    lengths = [len(line) for line in lines]
    # The lines holding the escape as a scan lists them (Scanned.escape_lines) serve as well.
    escape_lines = [at for at, line in enumerate(lines) if _ESCAPE in line]
    for markers in (None, Markers.of(data)):
        for listed in (None, escape_lines):
            found = marked_lines(data, prefix, len(data), offsets, lengths, 1000, markers, listed)
            assert found == _expected(lines, markers or Markers(True, True, True))


def test_an_escape_in_the_last_byte_of_the_range_is_found() -> None:
    data = b'{"a":"\\u0001"}\n{"b":1}\n{"c":"x\\u"}'
    offsets, lengths = [0, 15, 23], [14, 7, 11]
    assert marked_lines(data, 0, len(data), offsets, lengths, 0, Markers(False, False, False)) == [0, 2]
    assert marked_lines(data, 0, 22, offsets, lengths, 0, Markers(False, False, False)) == [0]
