"""The command line over a store mixing omp 13.19 and omp 18.2.3 files (issue 10): every command
finds and reads the omp 18 files, shows slot titles and the new entry types."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from .conftest import PROJECT, Store, run

CORPUS18 = Path(__file__).resolve().parents[1] / "conformance_omp18" / "load"
OMP18 = {
    "api-renamed-twice": "01a22ce0-d46e-7577-9603-53203994b9d3",
    "api-reset-boundary": "01a22ce1-3575-71a3-b904-67115e512686",
    "api-model-usage": "01a22ce1-8541-7630-8a75-540ec690d8fe",
}


def _mixed(store: Store) -> dict[str, Path]:
    paths = {"legacy": store.add("header-title-parent")}
    for case in OMP18:
        target = store.root / PROJECT / f"{case}.jsonl"
        shutil.copyfile(CORPUS18 / f"{case}.jsonl", target)
        paths[case] = target
    return paths


def test_list_all_shows_omp18_files_with_their_slot_titles(store: Store) -> None:
    _mixed(store)
    rows = json.loads(run("list", "--all", "--json").stdout)
    titles = {row["id"]: row.get("title") for row in rows}
    assert len(rows) == 4
    assert titles[OMP18["api-renamed-twice"]] == "User picked title"  # not the stale header title
    assert "Refactor the parser" in titles.values()  # the omp 13.19 file
    table = run("list", "--all").stdout
    assert "User picked title" in table and "Fix the parser" not in table


def test_check_passes_and_show_renders_new_entries(store: Store) -> None:
    paths = _mixed(store)
    result = run("check", "--all")
    assert result.exit_code == 0, result.output
    assert "0 problems in 0 of 4 files" in result.output
    reset = run("show", OMP18["api-reset-boundary"][:13]).stdout
    assert "context cleared (/clear)" in reset
    assert reset.index("first answer") < reset.index("context cleared") < reset.index("after clear")
    usage = run("show", str(paths["api-model-usage"])).stdout
    assert "$ model usage · title · anthropic/claude-haiku-4-5 · in 300 · out 12" in usage
    renamed = run("show", str(paths["api-renamed-twice"])).stdout
    assert renamed.splitlines()[0].endswith("User picked title")
    assert "✎ title → Fix the parser (auto)" in renamed


def test_tree_export_and_search_read_omp18_files(store: Store) -> None:
    paths = _mixed(store)
    tree = json.loads(run("tree", str(paths["api-reset-boundary"]), "--json").stdout)
    assert "/clear: the model context starts after this" in {line["text"] for line in tree}
    markdown = run("export", str(paths["api-reset-boundary"]), "-f", "md").stdout
    assert "*context cleared (/clear): the model sees only what follows*" in markdown
    renamed = run("export", str(paths["api-renamed-twice"]), "-f", "md").stdout
    assert renamed.startswith("# User picked title")
    written = Path(run("export", str(paths["api-model-usage"]), "-f", "jsonl").stdout.strip())
    lines = [json.loads(line) for line in written.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["type"] == "session"  # a slot-less copy: every omp can resume it
    assert any(line.get("type") == "model_usage" for line in lines)
    found = json.loads(run("search", "after clear", "--all", "--json").stdout)
    assert [hit["session_id"] for hit in found] == [OMP18["api-reset-boundary"]]
