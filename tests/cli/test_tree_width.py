"""``omp-session tree --width`` (issue 13 #3): lines fit, the id, ``[label]`` and ``◀ leaf`` are never cut."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omp_session.cli.tree import _fit, _fit_reference
from omp_session.tools.tree_view import TreeLine

from .conftest import Store, run


@pytest.mark.parametrize("width", [20, 30, 44, 60, 200])
def test_markers_survive_any_width(store: Store, width: int) -> None:
    path = store.add("v3-labels")
    wide = run("tree", str(path), "--width", "400").stdout.splitlines()
    narrow = run("tree", str(path), "--width", str(width)).stdout.splitlines()
    assert len(narrow) == len(wide)
    for full, cut in zip(wide, narrow, strict=True):
        entry_id = full.lstrip("│├└─ ").split(" ", 1)[0]
        assert entry_id in cut
        if "[" in full:
            label = full[full.rindex(" [") :].removesuffix("  ◀ leaf")
            assert label in cut, (full, cut)
        assert full.endswith("◀ leaf") == cut.endswith("◀ leaf")
        if width >= 44:  # wide enough for every line's id, kind, label and marker: the text gives way
            assert len(cut) <= width, cut
    assert narrow[-1].endswith("l-a3 assistant: B reply  ◀ leaf") or width < 40


def test_the_terminal_width_is_the_default(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "46")
    lines = run("tree", str(store.add("v3-labels"))).stdout.splitlines()
    assert max(len(line) for line in lines) <= 46
    assert any(line.endswith("◀ leaf") for line in lines)


# Box drawing and spaces (prefixes), one-cell text, accented, wide (CJK, emoji), combining and
# joining marks, no-break and ideographic spaces, control codes, tabs.
_TEXT = "aaabbc  .:é…→─│数ファ😀\u0301\u200d\ufe0f\xa0\u3000\t\x07\x1b"
_LINES = st.builds(
    TreeLine,
    prefix=st.text(alphabet="│├└─ ", max_size=16),
    entry_id=st.none() | st.text(alphabet="0123456789abcdef数", min_size=1, max_size=8),
    kind=st.sampled_from(["user", "assistant", "event", "fold", "repeat", "compaction", "tool result"]),
    text=st.text(alphabet=_TEXT, max_size=300)
    | st.lists(st.text(alphabet="abcé…", min_size=1, max_size=9), max_size=50).map(" ".join)
    | st.lists(st.text(alphabet="ab数😀 ", min_size=1, max_size=9), max_size=50).map(" ".join),
    label=st.none() | st.text(alphabet="ab数 ", min_size=1, max_size=10),
    is_leaf=st.booleans(),
    on_current_branch=st.booleans(),
    hidden=st.integers(0, 20),
    depth=st.integers(0, 6),
)


@settings(max_examples=1500, deadline=None)
@given(line=_LINES, width=st.integers(1, 80) | st.integers(1, 220))
def test_the_fast_fit_of_a_line_is_the_reference_fit(line: TreeLine, width: int) -> None:
    assert _fit(line, width) == _fit_reference(line, width)
