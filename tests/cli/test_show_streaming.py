"""``show`` writes its transcript item by item (issue 30's ``show | head`` row): an item is built
only when it is written, each item waits only for the results of its own tool calls, and a reader
that stops early (``head``) ends the command quietly. How fast ``show | head`` returns is measured
in ``bench/show_head.py``, not here; these tests check that the streamed output is the output."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omp_session import SessionManager
from omp_session.cli._common import console
from omp_session.cli._lines import LineWriter
from omp_session.cli.show import _Options, render_transcript
from omp_session.tools.content import tool_result_of
from omp_session.tools.entry_kinds import EntryKind, classify
from omp_session.tools.reading import read_session
from omp_session.tools.transcript import (
    TranscriptItem,
    _entry_item,
    build_items,
    iter_items,
    session_transcript,
)

from .sessions import assistant, text, tool_call, tool_result

LAUNCH = [sys.executable, "-c", "from omp_session._launcher import main; main()"]
TURNS = 400


def _long_session(directory: Path) -> Path:
    """Turns of a prompt, a call, its result and a reply: thousands of output lines."""
    with SessionManager.create("/home/x/app", directory) as session:
        for turn in range(TURNS):
            session.append_message({"role": "user", "content": f"prompt {turn}: read it", "timestamp": 1})
            session.append_message(
                assistant(text(f"Reading {turn}."), tool_call(f"c{turn}", "read", path="a.txt"))
            )
            session.append_message(tool_result(f"c{turn}", "read", "\n".join(f"line {n}" for n in range(12))))
            session.append_message(assistant(text(f"Done with {turn}.")))
        path = session.get_session_file()
    assert path is not None
    return Path(path)


class _Watched(list[dict[str, Any]]):
    """A path whose walks are counted entry by entry (the second walk is the one that builds)."""

    def __init__(self, entries: list[dict[str, Any]]) -> None:
        super().__init__(entries)
        self.walked: list[int] = []

    def __iter__(self) -> Iterator[dict[str, Any]]:
        self.walked.append(0)
        for entry in super().__iter__():
            self.walked[-1] += 1
            yield entry


@pytest.fixture(scope="module")
def long_session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _long_session(tmp_path_factory.mktemp("long"))


def test_an_item_comes_as_soon_as_its_calls_have_their_results(long_session: Path) -> None:
    path = long_session
    with read_session(path) as session:
        entries = _Watched(list(session.get_branch()))
        expected = session_transcript(session).branches[0].items
    items = iter_items(entries)
    first, second = next(items), next(items)
    assert first.kind == "user" and second.kind == "assistant"
    call = second.parts[1].tool_call
    assert call is not None and call.result is not None  # its result, two entries on, attached
    assert entries.walked[-1] <= 4  # the rest of the 1,600 entries not built yet
    rest = [first, second, *items]
    assert [item.to_dict() for item in rest] == [item.to_dict() for item in expected]


def test_a_call_whose_result_never_comes_does_not_hold_the_items_after_it() -> None:
    entries: list[dict[str, Any]] = [
        {"type": "message", "id": "a1", "parentId": None, "message": assistant(tool_call("lost", "read"))},
        {"type": "message", "id": "u1", "parentId": "a1", "message": {"role": "user", "content": "next"}},
        {"type": "message", "id": "a2", "parentId": "u1", "message": assistant(tool_call("c2", "read"))},
        {"type": "message", "id": "u2", "parentId": "a2", "message": {"role": "user", "content": "more"}},
        {"type": "message", "id": "r2", "parentId": "u2", "message": tool_result("c2", "read", "late")},
    ]
    watched = _Watched(entries)
    items = iter_items(watched)
    assert next(items).entry_id == "a1" and watched.walked[-1] == 1  # nothing later answers "lost"
    assert next(items).entry_id == "u1"
    late = next(items)  # a2 waits for its result, three entries on, and then has it
    assert late.entry_id == "a2" and watched.walked[-1] == 5
    assert late.parts[0].tool_call is not None and late.parts[0].tool_call.result is not None
    assert [item.entry_id for item in items] == ["u2"]
    assert [item.entry_id for item in build_items(entries)] == ["a1", "u1", "a2", "u2"]


def _whole_pass_items(path: list[dict[str, Any]], labels: dict[str, str]) -> list[TranscriptItem]:
    """The items as one pass over the whole path pairs them (``build_items`` before it streamed):
    each result goes to the latest unanswered call of its id, else is an item of its own."""
    items: list[TranscriptItem] = []
    open_calls: dict[str, Any] = {}
    for entry in path:
        found = classify(entry)
        if found.kind == EntryKind.TOOL_RESULT:
            result = tool_result_of(entry["id"], found.fields)
            call = open_calls.pop(result.tool_call_id, None)
            if call is not None:
                call.result = result
                continue
            item = TranscriptItem("tool_result", result.entry_id, entry.get("timestamp"))
            item.label = labels.get(entry["id"])
            item.title, item.parts = result.tool_name, result.parts
            item.meta = {
                "toolCallId": result.tool_call_id,
                "isError": result.is_error,
                "pruned": result.pruned,
            }
            items.append(item)
            continue
        built = _entry_item(entry, found, labels)
        if built is None:
            continue
        for part in built.parts:
            if part.tool_call is not None and part.tool_call.id:
                open_calls[part.tool_call.id] = part.tool_call
        items.append(built)
    return items


#: A path of prompts, assistant turns with calls and results, whose call ids repeat, go
#: unanswered, are answered twice or before the call, or are empty.
_IDS = st.sampled_from(["a", "b", "c", ""])
_STEP = st.one_of(
    st.just(("user",)),
    st.tuples(st.just("assistant"), st.lists(_IDS, max_size=3)),
    st.tuples(st.just("result"), _IDS, st.booleans()),
)


def _path(steps: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for number, step in enumerate(steps):
        if step[0] == "user":
            message: dict[str, Any] = {"role": "user", "content": f"prompt {number}", "timestamp": 1}
        elif step[0] == "assistant":
            message = assistant(
                text(f"turn {number}"), *(tool_call(i, "read", path=f"{number}") for i in step[1])
            )
        else:
            message = tool_result(step[1], "read", f"output {number}", error=step[2])
        parent = entries[-1]["id"] if entries else None
        entries.append({"type": "message", "id": f"e{number}", "parentId": parent, "message": message})
    return entries


@settings(max_examples=300, deadline=None)
@given(st.lists(_STEP, max_size=14), st.sets(st.integers(0, 13), max_size=3))
def test_each_streamed_item_is_final_when_given_and_the_items_are_the_whole_pass(
    steps: list[tuple[Any, ...]], labelled: set[int]
) -> None:
    # An item given before a later result is attached to it would be shown without that result:
    # each item's form when it is given must be its final one, and the items those of the pass.
    path = _path(steps)
    labels = {f"e{number}": f"label {number}" for number in labelled if number < len(path)}
    given_forms: list[dict[str, Any]] = []
    streamed: list[TranscriptItem] = []
    for item in iter_items(path, labels):
        given_forms.append(item.to_dict())
        streamed.append(item)
    expected = [item.to_dict() for item in _whole_pass_items(path, labels)]
    assert given_forms == expected
    assert [item.to_dict() for item in streamed] == expected


def test_show_into_a_closed_pipe_prints_the_first_lines_and_no_traceback(long_session: Path) -> None:
    path = long_session
    env = {**os.environ, "COLUMNS": "100"}
    full = subprocess.run([*LAUNCH, "show", str(path)], capture_output=True, env=env, timeout=120, check=True)
    lines = full.stdout.decode().splitlines(keepends=True)
    assert len(full.stdout) > 4 * 65536  # far more than a pipe holds: the writer meets the closed pipe
    shown = subprocess.Popen(
        [*LAUNCH, "show", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    head = subprocess.run(
        ["head", "-n", "5"], stdin=shown.stdout, capture_output=True, timeout=120, check=True
    )
    assert shown.stdout is not None
    shown.stdout.close()  # only head reads it now: when head is gone, the next write fails
    _, errors = shown.communicate(timeout=120)
    assert head.stdout.decode() == "".join(lines[:5])
    assert b"Traceback" not in errors and errors == b""
    assert shown.returncode == 1  # click's status for a closed pipe, as every command has it


@pytest.mark.parametrize("options", [[], ["--all-branches", "--full", "--thinking", "--events"]])
def test_streamed_show_prints_what_the_whole_transcript_renders(
    tmp_path: Path, options: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command (items streamed) against the transcript built whole first and then rendered
    (as ``show`` worked before; the renderer still takes one)."""
    path = _long_session(tmp_path)
    with SessionManager.open(path) as session:  # a second branch, so --all-branches has two
        session.branch(session.get_branch()[-5]["id"])
        session.append_message({"role": "user", "content": "another way", "timestamp": 9})
    env = {**os.environ, "COLUMNS": "90"}
    streamed = subprocess.run(
        [*LAUNCH, "show", *options, str(path)], capture_output=True, env=env, timeout=120
    )
    assert streamed.returncode == 0, streamed.stderr
    with read_session(path) as session:
        transcript = session_transcript(session, all_branches="--all-branches" in options, all_entries=False)
    transcript.path = str(path)
    monkeypatch.setenv("COLUMNS", "90")
    buffer = io.StringIO()
    chosen = {name: f"--{name}" in options for name in ("thinking", "full", "events")}
    render_transcript(transcript, LineWriter(console(), buffer), _Options(**chosen))
    assert len(transcript.branches) == (2 if "--all-branches" in options else 1)
    assert streamed.stdout.decode() == buffer.getvalue()
