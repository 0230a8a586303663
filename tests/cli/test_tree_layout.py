"""``tree`` readable at any size (issue 30 #1): the current branch in column 0, side branches
indented at most :data:`MAX_INDENT` levels (deeper ones marked, not shifted), every line within the
width, ``--depth``, ``--around``; import bookkeeping hidden unless ``--all-entries``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bench.generate import Shape, generate

from omp_session.cli._cells import cells
from omp_session.tools.tree_view import MAX_INDENT

from .conftest import run


def _write(path: Path, entries: list[dict[str, Any]]) -> Path:
    header = {"type": "session", "version": 3, "id": "layout-0001", "timestamp": "2025-01-01T00:00:00.000Z"}
    lines = [header]
    for number, entry in enumerate(entries):
        lines.append({"timestamp": f"2025-01-01T00:{number // 60:02d}:{number % 60:02d}.000Z", **entry})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _message(entry_id: str, parent: str | None, role: str, text: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": text}]}
    if role == "assistant":
        message |= {"provider": "anthropic", "model": "m", "api": "anthropic-messages", "stopReason": "stop"}
    return {"type": "message", "id": entry_id, "parentId": parent, "message": message}


@pytest.fixture(scope="module")
def big_session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The issue's shape: 50,000 entries, about 70 forks along the current branch."""
    path = tmp_path_factory.mktemp("big") / "big.jsonl"
    stats = generate(path, Shape(0, target_messages=49_300))
    assert stats.entries >= 50_000
    return path


@pytest.mark.parametrize("width", [80, 120])
def test_the_big_session_fits_and_keeps_the_current_branch_readable(
    big_session: Path, width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    result = run("tree", str(big_session))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(cells(line) for line in lines) <= width
    # Side branches are drawn (about 70 forks), each under its fork point.
    assert sum(line.startswith(("├─ ", "└─ ")) for line in lines) >= 65
    # The current branch is in column 0 and keeps real text to the very leaf (was "…" from line
    # 5,313 on at 80 columns).
    trunk = [line for line in lines if not line.startswith(("├", "└", "│", " "))]
    assert len(trunk) > len(lines) // 2
    for line in trunk:
        if line.startswith("…"):
            assert line.endswith("entries folded"), line
            continue
        assert ": …" not in line and not line.endswith(" …"), line
    assert trunk[-1].endswith("◀ leaf") and ": " in trunk[-1]
    assert len(trunk[-1].split(": ", 1)[1]) > 20


def test_json_trunk_is_column_0_and_is_an_array(big_session: Path) -> None:
    data = json.loads(run("tree", str(big_session), "--json", "--depth", "0").stdout)
    assert isinstance(data, list)
    current = [line for line in data if line["on_current_branch"]]
    assert current and all(line["prefix"] == "" and line["depth"] == 0 for line in current)
    folds = [line for line in data if line["kind"] == "fold" and line["text"]]
    assert len(folds) >= 65 and all(line["text"].startswith("in 1 side branch") for line in folds)
    assert not any(line["depth"] > 1 for line in data)


def _nested(tmp_path: Path, levels: int) -> Path:
    """A trunk t1 → t2 → t3 (leaf) and, from t1, side branches forking inside each other ``levels``
    deep (s1 forks into s1x and s2, s2 into s2x and s3, …)."""
    entries = [_message("t1", None, "user", "trunk start")]
    parent = "t1"
    for level in range(1, levels + 1):
        entries.append(_message(f"s{level}", parent, "user", f"side level {level} " + "word " * 30))
        entries.append(_message(f"s{level}x", f"s{level}", "assistant", f"dead end {level}"))
        parent = f"s{level}"
    entries += [
        _message("t2", "t1", "assistant", "trunk reply " + "long " * 20),
        _message("t3", "t2", "user", "trunk end " + "long " * 20),
    ]
    return _write(tmp_path / "nested.jsonl", entries)


@pytest.mark.parametrize("width", [80, 120])
def test_deep_side_branches_are_marked_not_shifted(tmp_path: Path, width: int) -> None:
    path = _nested(tmp_path, 8)
    lines = run("tree", str(path), "--width", str(width)).stdout.splitlines()
    assert max(cells(line) for line in lines) <= width
    by_id = {line.lstrip("│├└─ 0123456789»").split(" ", 1)[0]: line for line in lines}
    deepest = by_id["s8"]
    # Level 8 is drawn no wider than level MAX_INDENT, its level written in the prefix.
    prefix = deepest[: deepest.index("s8 ")]
    assert len(prefix) == MAX_INDENT * 3 and "8»" in prefix
    assert by_id["s3"].startswith("      └─ s3 ")  # level 3: shifted 3 cells per level
    assert by_id["s8x"].startswith(prefix[:-3] + "   s8x ")
    assert [line.split(" ", 1)[0] for line in lines[-2:]] == ["t2", "t3"]
    assert lines[-1].endswith("◀ leaf")


def test_depth_folds_side_branches_into_one_line(tmp_path: Path) -> None:
    path = _nested(tmp_path, 5)
    assert run("tree", str(path), "--depth", "0", "--width", "400").stdout.splitlines() == [
        "t1 user: trunk start",
        "└─ … 10 entries in 1 side branch",
        "t2 assistant: trunk reply " + " ".join(["long"] * 20),
        "t3 user: trunk end " + " ".join(["long"] * 20) + "  ◀ leaf",
    ]
    two = run("tree", str(path), "--depth", "2", "--width", "80").stdout.splitlines()
    assert any(line.startswith("└─ s1 ") for line in two)
    assert any(line.startswith("   └─ s2 ") for line in two)
    assert "      └─ … 7 entries in 2 side branches" in two  # s2x, and s3 with all below it
    assert not any("s3 " in line for line in two)


def test_around_puts_the_entry_in_column_0(tmp_path: Path) -> None:
    path = _nested(tmp_path, 6)
    lines = run("tree", str(path), "--around", "s5x", "--lines", "4", "--width", "80").stdout.splitlines()
    assert lines[0].startswith("(") and lines[0].endswith("lines above)")
    # The branch through s5x is the trunk: it ends there, s5's newer child s6 hangs beside it.
    assert [line.split(": ")[0] for line in lines[1:]] == [
        "└─ s4x assistant",
        "s5 user",
        "└─ s6 user",
        "   s6x assistant",
        "s5x assistant",
    ]
    near = run("tree", str(path), "--around", "s3", "--lines", "1", "--width", "200").stdout.splitlines()
    assert near == [
        "(6 lines above)",
        "└─ s2x assistant: dead end 2",
        "s3 user: side level 3 " + " ".join(["word"] * 30),
        "└─ s3x assistant: dead end 3",
        "(6 lines below)",
    ]
    data = json.loads(run("tree", str(path), "--around", "s5x", "--lines", "99", "--json").stdout)
    focus = next(line for line in data if line["entry_id"] == "s5x")
    assert focus["prefix"] == "" and not focus["on_current_branch"]
    assert any(line["entry_id"] == "t3" and line["is_leaf"] for line in data)
    missing = run("tree", str(path), "--around", "nope")
    assert missing.exit_code == 2 and "nope" in missing.stderr


def test_import_bookkeeping_is_hidden_unless_asked(tmp_path: Path) -> None:
    record = {"type": "custom", "customType": "claude_record", "data": {"type": "summary"}}
    path = _write(
        tmp_path / "imported.jsonl",
        [
            {"id": "rec1", "parentId": None, **record},
            _message("u1", "rec1", "user", "hello"),
            _message("a1", "u1", "assistant", "hi there"),
            {
                "type": "custom",
                "id": "imp1",
                "parentId": "a1",
                "customType": "foreign_session_import",
                "data": {"source": "claude"},
            },
        ],
    )
    assert run("tree", str(path)).stdout.splitlines() == [
        "u1 user: hello",
        "a1 assistant: hi there  ◀ leaf",
    ]
    hidden = run("tree", str(path), "--around", "imp1")
    assert hidden.exit_code == 2 and "add --all-entries" in hidden.stderr
    assert (
        run("tree", str(path), "--around", "imp1", "--all-entries")
        .stdout.splitlines()[-1]
        .startswith("imp1 ")
    )
    every = run("tree", str(path), "--all-entries").stdout
    assert "rec1 custom: claude_record" in every or "rec1 custom entry claude_record" in every
    assert every.splitlines()[-1].startswith("imp1 ") and every.splitlines()[-1].endswith("◀ leaf")
