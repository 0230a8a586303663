"""Byte-level fuzzing of valid sessions: loading raises only SessionError subclasses within a time
bound, ``check`` sees the damage it can see, and ``repair`` output always loads."""

from __future__ import annotations

import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omp_session import SessionError, SessionManager
from omp_session.format.codec import decode_lines
from omp_session.format.header import is_session_header
from omp_session.format.migrate import header_version
from omp_session.tools.repair import NotASessionError, check, repair

CORPUS = Path(__file__).resolve().parents[1] / "conformance" / "load"
SEEDS = [
    (CORPUS / name).read_bytes()
    for name in (
        "v3-all-entry-types.jsonl",
        "v3-branch-summaries.jsonl",
        "v1-linear-compaction-index.jsonl",
        "v3-multi-compaction.jsonl",
        "v3-labels.jsonl",
    )
]


@st.composite
def damaged_sessions(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 6))):
        action = draw(st.sampled_from(["flip", "delete", "insert", "truncate", "dup-line", "swap-lines"]))
        if not data:
            break
        position = draw(st.integers(0, len(data) - 1))
        if action == "flip":
            data[position] = draw(st.integers(0, 255))
        elif action == "delete":
            del data[position : position + draw(st.integers(1, 40))]
        elif action == "insert":
            data[position:position] = draw(
                st.binary(min_size=1, max_size=20)
                | st.sampled_from([b"\n", b"null\n", b'"parentId":"', b"{", b"\xef\xbb\xbf", b"\r\n", b"NaN"])
            )
        elif action == "truncate":
            del data[position:]
        else:
            lines = bytes(data).split(b"\n")
            i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            if action == "dup-line":
                lines.insert(j, lines[i])
            else:
                lines[i], lines[j] = lines[j], lines[i]
            data = bytearray(b"\n".join(lines))
    return bytes(data)


FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@FUZZ
@given(data=damaged_sessions())
def test_damaged_files_load_or_raise_session_errors_quickly(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(data)
    started = time.monotonic()
    try:
        session = SessionManager.open(path, read_only=True)
        session.build_session_context()
        for root in session.get_tree():
            for _node in root.walk():
                pass
        for entry in session.get_entries()[-5:]:
            if isinstance(entry.get("id"), str):
                session.get_branch(entry["id"])
    except SessionError:
        pass
    assert time.monotonic() - started < 5
    assert path.read_bytes() == data


@FUZZ
@given(data=damaged_sessions())
def test_check_reports_damage_and_repair_output_loads(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(data)
    problems = check(path)
    decoded = decode_lines(data)
    if decoded.skipped or decoded.has_bom:
        assert problems, "skipped lines or a BOM must be reported"
    sidecar = path.with_name(path.name + ".rejected")
    sidecar_before = sidecar.read_bytes() if sidecar.exists() else None  # tmp_path is per test
    try:
        report = repair(path)
    except NotASessionError:  # no line is a session header or entry: refused, nothing written
        assert path.read_bytes() == data
        assert (sidecar.read_bytes() if sidecar.exists() else None) == sidecar_before
        report = repair(path, force=True)
    repaired = SessionManager.open(path, read_only=True)  # always a loadable session now
    assert not decode_lines(path.read_bytes()).skipped
    if report.changes:  # a repair also upgrades; an old version alone is information (item 13)
        # Version 3 and newer ones are kept as written (never downgraded); an older one becomes 3.
        first = decoded.records[0] if decoded.records else None
        kept = first is not None and is_session_header(first) and header_version(first) >= 3
        assert repaired.get_header()["version"] == (first["version"] if kept else 3)  # type: ignore[index]
        assert report.backup is not None and report.backup.read_bytes() == data
    assert repair(path).changes == []  # idempotent
    kinds = {p.kind for p in check(path) if p.is_problem}
    fixed = {
        "malformed-line",
        "torn-tail",
        "not-object",
        "bom",
        "duplicate-id",
        "cycle",
        "self-parent",
    }
    assert not kinds & fixed
