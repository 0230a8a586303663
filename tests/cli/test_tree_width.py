"""``omp-session tree --width`` (issue 13 #3): lines fit, the id, ``[label]`` and ``◀ leaf`` are never cut."""

from __future__ import annotations

import pytest

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
