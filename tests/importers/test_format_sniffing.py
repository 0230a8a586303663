"""Which format a file looks like, on damaged records (found by fuzzing the viewer's import route:
a record whose ``type`` is a list or an object made the check raise, an HTTP 500)."""

from __future__ import annotations

from pathlib import Path

from omp_session.importers.formats import looks_like


def test_a_type_that_is_not_a_string_is_no_format(tmp_path: Path) -> None:
    path = tmp_path / "odd.jsonl"
    path.write_bytes(
        b'{"type":["session_meta"],"payload":{}}\n{"type":{"a":1},"payload":{}}\n'
        b'{"type":"response_item","payload":{}}\n'
    )
    assert dict(looks_like(path)) == {"codex": 1}
