"""Property tests (hypothesis): a file written under any dialect (13, 18.2, 18.3) reads back
identically under the others (header, title, entries, tree), and the title slot always keeps its 256 bytes."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omp_session import SessionManager
from omp_session.format.title_slot import SLOT_BYTES, TitleSlot, encode_slot, parse_slot_line
from tests.helpers import assistant, usage, user

TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)
TITLES = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=300)
PICK = st.integers(min_value=0, max_value=1000)

OPS = st.one_of(
    st.tuples(st.just("user"), TEXT),
    st.tuples(st.just("assistant"), TEXT),
    st.tuples(st.just("branch"), PICK),
    st.tuples(st.just("rename"), TITLES, st.sampled_from(["auto", "user"])),
    st.tuples(st.just("thinking"), st.sampled_from(["low", "high", None])),
    st.tuples(st.just("model"), st.sampled_from(["a/b", "c/d"])),
    st.tuples(st.just("label"), PICK, st.one_of(st.none(), TEXT)),
    st.tuples(st.just("custom"), TEXT),
    st.tuples(st.just("compaction"), PICK, TEXT),
    st.tuples(st.just("reset")),
    st.tuples(st.just("model_usage"), PICK),
    st.tuples(st.just("pin"), st.sampled_from(["anthropic", "openai"])),
)


def _apply(session: SessionManager, op: tuple[Any, ...]) -> None:
    ids = [e["id"] for e in session.get_entries()]
    kind = op[0]
    if kind == "user":
        session.append_message(user(op[1]))
    elif kind == "assistant":
        session.append_message(assistant(op[1], usage=usage(3, 2, 0.001)))
    elif kind == "branch" and ids:
        session.branch(ids[op[1] % len(ids)])
    elif kind == "rename":
        session.set_session_name(op[1], op[2])
    elif kind == "thinking":
        session.append_thinking_level_change(op[1])
    elif kind == "model":
        session.append_model_change(op[1])
    elif kind == "label" and ids:
        session.append_label_change(ids[op[1] % len(ids)], op[2])
    elif kind == "custom":
        session.append_custom_entry("note", {"text": op[1]})
    elif kind == "compaction" and ids:
        session.append_compaction(op[2] or "summary", None, ids[op[1] % len(ids)], 100)
    elif kind == "reset":
        session.append_reset_boundary()
    elif kind == "model_usage" and ids:
        session.append_model_usage(
            "title", "x", "p", "m", usage(1, 1, 0.001), "stop", parent_id=ids[op[1] % len(ids)]
        )
    elif kind == "pin":
        session.append_credential_pin(op[1], "hash")


def _read(path: Path, dialect: str) -> dict[str, Any]:
    with SessionManager.open(path, dialect=dialect, read_only=True) as session:
        return {
            "header": session.get_header(),
            "name": session.get_session_name(),
            "entries": session.get_entries(),
            "leaf": session.get_leaf_id(),
            "tree": [(n.entry.get("id"), n.label) for root in session.get_tree() for n, _ in root.walk()],
        }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writer=st.sampled_from(["13", "18.2", "18.3"]), ops=st.lists(OPS, min_size=1, max_size=25))
def test_a_file_written_under_one_dialect_reads_back_identically_under_the_others(
    writer: str, ops: list[tuple[Any, ...]]
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        session = SessionManager.create("/work/app", directory, dialect=writer)
        session.append_message(user("start"))
        session.append_message(assistant("go"))
        for op in ops:
            _apply(session, op)
        path = Path(str(session.get_session_file()))
        written_entries = session.get_entries()
        session.close()
        as_13, as_182, as_183 = _read(path, "13"), _read(path, "18.2"), _read(path, "18.3")
        assert as_13 == as_182 == as_183
        assert as_13["entries"] == written_entries
        first = path.read_bytes().split(b"\n", 1)[0]
        if writer != "13":
            assert len(first) + 1 == SLOT_BYTES and parse_slot_line(first) is not None
        else:
            assert json.loads(first)["type"] == "session"


@settings(max_examples=200, deadline=None)
@given(title=TITLES, source=st.sampled_from([None, "auto", "user"]))
def test_every_slot_is_256_bytes_and_reads_back_a_prefix_of_its_title(title: str, source: str | None) -> None:
    line = encode_slot(TitleSlot(title, "2026-11-30T14:34:14.690Z", source))
    assert len(line) == SLOT_BYTES
    slot = parse_slot_line(line[:-1])
    assert slot is not None and title.startswith(slot.title) and slot.source == source
