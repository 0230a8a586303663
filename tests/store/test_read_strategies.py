"""Every read strategy (``Tuning.read_strategy``, store/_indexed/strategies.py) reads a session
file exactly as the reference, the full parse, does: the same header, entries (key order too),
leaf, context, tree, labels, usage and load issues, on generated files of every shape; and a
strategy is taken where it can serve the file, refused where this installation cannot run it,
and hands the file to the full parse where no fast path models it."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from omp_session import ReadStrategy, ReadStrategyError, Runtime, SessionManager, Tuning
from omp_session.format.title_slot import TitleSlot, encode_slot
from omp_session.store import scanner
from omp_session.store._indexed.offsets import index_path
from tests.perf.sessions import jump_back_lines, opened_cold, ordered, session_lines, snapshot
from tests.perf.tuned import EVERY_FILE, open_session

from .read_paths import FAST_READS, READS, read_by, tuning_for

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
_STAMP = "2025-06-02T14:00:00.000Z"
_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(alphabet='ab é"\\\n\u2028😀', max_size=5),
    st.lists(st.integers(0, 3), max_size=3),
    st.dictionaries(st.sampled_from(["k", "type", "id"]), st.integers(0, 3), max_size=2),
)


@st.composite
def session_files(draw: st.DrawFn) -> tuple[bytes, bool]:
    """The bytes of a session file and whether it is *plain* (every fast path models it).

    A tree of every entry type (branches, compactions, labels, unknown types) from
    tests/perf/sessions.py; in a file that is not plain also orphans, duplicate and forward ids,
    blank, malformed and non-object lines; in any file unknown fields (anywhere in an entry's
    keys, of any JSON value), an omp 18 title slot ahead of the header and a torn last line, in
    omp's compact JSON or with spaces."""
    plain = draw(st.booleans())
    lines = draw(jump_back_lines() if draw(st.integers(0, 3)) == 0 else session_lines(weird=not plain))
    # omp writes compact JSON (which the skim's compaction mark matches); another writer may not.
    separators = draw(st.sampled_from([(",", ":"), (", ", ": ")]))
    extra = set(draw(st.lists(st.integers(1, max(1, len(lines) - 1)), max_size=4)))
    for at, line in enumerate(lines):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        if at in extra and entry.get("type") != "session":
            keys = list(entry.items())
            field = (draw(st.sampled_from(["futureField", "x"])), draw(_VALUES))
            keys.insert(draw(st.integers(0, len(keys))), field)
            entry = dict(keys)
        end = b"\n" if line.endswith(b"\n") else b""
        lines[at] = json.dumps(entry, ensure_ascii=False, separators=separators).encode() + end
    if lines[-1].endswith(b"\n") and draw(st.integers(0, 3)) == 0:
        lines.append(draw(st.sampled_from([b'{"type":"message","id":"tor', b"{", b'{"type":"label"}'])))
    if draw(st.integers(0, 3)) == 0:
        title = draw(st.text(alphabet="Tité 😀", max_size=12))
        lines.insert(0, encode_slot(TitleSlot(title, _STAMP, draw(st.sampled_from([None, "auto", "user"])))))
    return b"".join(lines), plain


def _reads(path: Path, read: ReadStrategy) -> tuple[dict[str, Any], ReadStrategy]:
    """What an open of ``path`` by ``read`` gives (a fresh one: no index left by another strategy
    is there), and the strategy that served it."""
    index_path(path).unlink(missing_ok=True)
    with open_session(path, read_only=True, tuning=tuning_for(read, EVERY_FILE)) as manager:
        found = snapshot(manager)
        found["entries_order"] = ordered(list(found["entries"]))  # (a lazy open's are a view)
        return found, read_by(manager)


@SETTINGS
@given(file=session_files())
def test_every_strategy_reads_a_session_as_the_full_parse_does(file: tuple[bytes, bool]) -> None:
    data, plain = file
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "session.jsonl"
        path.write_bytes(data)
        expected, served = _reads(path, ReadStrategy.FULL)
        assert served is ReadStrategy.FULL
        for read in FAST_READS:
            found, served = _reads(path, read)
            assert found == expected, read
            assert found["context_order"] == expected["context_order"], read
            assert found["entries_order"] == expected["entries_order"], read
            if plain:  # (else it may be handed to the full parse: exact or nothing)
                assert served is read
            event(f"{read} served by {served}")
        with open_session(path, read_only=True) as manager:  # auto: the one the strategies name
            assert snapshot(manager) == {k: v for k, v in expected.items() if k != "entries_order"}


def test_the_strategies_are_named_and_auto_is_the_default(tmp_path: Path) -> None:
    assert Tuning().read_strategy is ReadStrategy.AUTO
    assert Tuning(read_strategy="cold-pure").read_strategy is ReadStrategy.COLD_PURE  # type: ignore[arg-type]
    assert str(ReadStrategy.WARM) == "warm" and ReadStrategy("cold-skim") is ReadStrategy.COLD_SKIM
    assert ReadStrategy.available()[0] is ReadStrategy.AUTO
    assert (ReadStrategy.COLD_COMPILED in ReadStrategy.available()) == (scanner.c_scan is not None)
    assert set(READS) == set(ReadStrategy.available()) - {ReadStrategy.AUTO}
    with pytest.raises(ReadStrategyError, match="read_strategy 'fast' is none of 'auto', 'full'"):
        Tuning(read_strategy="fast")  # type: ignore[arg-type]


def test_a_strategy_this_installation_cannot_run_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # As on a machine where the compiled scanner was not built: never another scanner in silence.
    monkeypatch.setattr(scanner, "c_scan", None)
    assert ReadStrategy.COLD_COMPILED not in ReadStrategy.available()
    refused = r"'cold-compiled' cannot run here \(.*\); runnable: 'auto', 'full'"
    with pytest.raises(ReadStrategyError, match=refused):
        Tuning(read_strategy=ReadStrategy.COLD_COMPILED)
    assert Tuning(read_strategy=ReadStrategy.COLD_PURE).read_strategy is ReadStrategy.COLD_PURE


def _session(path: Path, version: int = 3, entries: int = 3) -> Path:
    header = {"type": "session", "version": version, "id": "s1", "timestamp": _STAMP, "cwd": "/w"}
    lines = [header]
    for number in range(entries):
        parent = f"e{number - 1}" if number else None
        message = {"role": "user", "content": f"m{number}", "timestamp": 1}
        lines.append(
            {
                "type": "message",
                "id": f"e{number}",
                "parentId": parent,
                "timestamp": _STAMP,
                "message": message,
            }
        )
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.mark.parametrize("read", FAST_READS)
def test_a_strategy_needs_the_offset_index(read: ReadStrategy, tmp_path: Path) -> None:
    # A runtime that switched the index off and a strategy that reads through one contradict
    # each other: said before anything is opened (no lock left behind).
    path = _session(tmp_path / "s.jsonl")
    runtime = Runtime(agent_dir=tmp_path / "agent", offset_index=False, tuning=tuning_for(read, EVERY_FILE))
    with pytest.raises(ReadStrategyError, match=f"read_strategy '{read}' reads through the offset index"):
        SessionManager.open(path, runtime=runtime)
    for fine in (ReadStrategy.AUTO, ReadStrategy.FULL):
        runtime = Runtime(
            agent_dir=tmp_path / "agent", offset_index=False, tuning=tuning_for(fine, EVERY_FILE)
        )
        with SessionManager.open(path, runtime=runtime) as manager:  # writable: nobody holds the lock
            assert read_by(manager) is ReadStrategy.FULL
    assert not index_path(path).exists()


@pytest.mark.parametrize("read", FAST_READS)
def test_a_file_no_fast_path_models_goes_to_the_full_parse(read: ReadStrategy, tmp_path: Path) -> None:
    # A version 1 file needs migration (its ids are made up at each load): exact or nothing.
    path = _session(tmp_path / "v1.jsonl", version=1)
    with open_session(path, read_only=True, tuning=tuning_for(ReadStrategy.FULL, EVERY_FILE)) as manager:
        expected = snapshot(manager)["context"]
    with open_session(path, read_only=True, tuning=tuning_for(read, EVERY_FILE)) as manager:
        assert read_by(manager) is ReadStrategy.FULL
        assert manager.build_session_context().to_dict() == expected
    # And a file under the size threshold is parsed in full whatever the strategy, as by auto.
    small = _session(tmp_path / "small.jsonl")
    with open_session(small, read_only=True, tuning=tuning_for(read)) as manager:
        assert read_by(manager) is ReadStrategy.FULL


def test_the_warm_strategy_builds_the_index_it_reads_through(tmp_path: Path) -> None:
    path = _session(tmp_path / "s.jsonl", entries=40)
    warm = tuning_for(ReadStrategy.WARM, EVERY_FILE)
    for _ in range(2):  # built by the first open, read by the second
        with open_session(path, tuning=warm) as manager:  # writable: under the lock
            assert read_by(manager) is ReadStrategy.WARM and not opened_cold(manager)
            assert manager.get_leaf_id() == "e39"
        assert index_path(path).exists()
    # A cold strategy never reads a stored index: it indexes the file again.
    for read in FAST_READS:
        if read is not ReadStrategy.WARM:
            with open_session(path, read_only=True, tuning=tuning_for(read, EVERY_FILE)) as manager:
                assert read_by(manager) is read and opened_cold(manager)
