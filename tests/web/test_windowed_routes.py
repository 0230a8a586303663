"""A big session's windows share their node's route (issue 25 #5): the path to a node is cut from
the leaf's, the compaction's first kept entry is looked up by id, the rows on the path are kept.
Each shortcut gives what the step-by-step walk gives, on every node of every sample session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from omp_session.rendering.images import linked_images
from omp_session.rendering.windowed import WindowedSession
from omp_session.rendering.windowed_open import open_windowed
from tests.helpers import HEADER, write_session

from .support import SAMPLES

SESSIONS = sorted((SAMPLES / "sessions").glob("*/*.jsonl"))


def _walked(view: WindowedSession, key: str) -> list[int]:
    """The path root→``key`` one parent at a time (what ``path_to`` did before)."""
    out: list[int] = []
    current = view.position.get(key)
    while current is not None and current not in out:
        out.append(current)
        current = view.parents[current]
    return out[::-1]


def _runs(indexes: list[int]) -> list[list[int]]:
    runs: list[list[int]] = []
    for index in indexes:
        if runs and index == runs[-1][1] + 1:
            runs[-1][1] = index
        else:
            runs.append([index, index])
    return runs


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.name[:30])
def test_every_node_gets_the_path_split_and_rows_of_the_step_by_step_walk(path: Path) -> None:
    view = open_windowed(path, linked_images(None, str))
    fresh = open_windowed(path, linked_images(None, str))  # nothing kept: every window computed anew
    row_of = view.tree.get().row_of
    for key in view.keys:
        walked = _walked(view, key)
        assert view.path_to(key) == walked
        arranged = view.arrange(walked)
        assert sorted(
            arranged.dropped + arranged.rest + ([arranged.summary] if arranged.summary is not None else [])
        ) == sorted(walked)
        window = view.window(key)
        assert window["pathRows"] == _runs(
            sorted(row_of[view.keys[p]] for p in walked if view.keys[p] in row_of)
        )
        assert view.window(key) == window  # the kept route answers the same
        assert fresh.window(key) == window


def test_a_compaction_keeps_from_the_first_entry_with_its_id_even_when_ids_repeat(tmp_path: Path) -> None:
    def message(entry_id: str, parent: str | None, text: str) -> dict[str, Any]:
        return {
            "type": "message",
            "id": entry_id,
            "parentId": parent,
            "timestamp": "2025-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": text, "timestamp": 0},
        }

    compaction = {
        "type": "compaction",
        "id": "c1",
        "parentId": "m4",
        "timestamp": "2025-01-01T00:00:00.000Z",
        "summary": "earlier work",
        "firstKeptEntryId": "m3",
        "tokensBefore": 10,
    }
    entries = [message("m1", None, "one"), message("m2", "m1", "two"), message("m3", "m2", "three")]
    entries += [message("m4", "m3", "four"), compaction, message("m5", "c1", "five")]
    path = write_session(tmp_path / "s.jsonl", entries, header=HEADER)
    view = open_windowed(path, linked_images(None, str))
    split = view.arrange(view.path_to("m5"))
    assert [view.keys[p] for p in split.dropped] == ["m1", "m2"]
    assert [view.keys[p] for p in split.rest] == ["m3", "m4", "m5"]
