"""Small command-line fixes of issue 13 #7: each one an observable behaviour."""

from __future__ import annotations

from pathlib import Path

from .conftest import Store, assert_one_line_error, run


def test_search_outside_a_project_hints_at_all(store: Store, tmp_path: Path) -> None:
    store.add("v3-labels")
    result = run("--dir", str(store.root), "search", "sort", "--cwd", str(tmp_path))
    assert result.exit_code == 0
    assert result.stderr.splitlines() == [
        "0 hits in 0 session files",
        f"(only the sessions of {tmp_path} were searched; --all searches every project)",
    ]
    found = run("--dir", str(store.root), "search", "sort", "--all")
    assert "--all searches" not in found.stderr


def test_an_empty_query_is_refused(store: Store) -> None:
    for query in ("", "   "):
        result = run("--dir", str(store.root), "search", query, "--all")
        assert result.exit_code == 2 and "an empty one matches everything" in result.stderr


def test_a_missing_sessions_directory_is_an_error_for_scans(tmp_path: Path) -> None:
    missing = tmp_path / "nonexistent"
    for command in (["search", "x", "--all"], ["check", "--all"], ["migrate", "--all"]):
        assert_one_line_error(run("--dir", str(missing), *command), f"{missing}: no such sessions directory")


def test_context_accepts_json(store: Store) -> None:
    path = store.add("v3-labels")
    plain, with_flag = run("context", str(path)), run("context", str(path), "--json")
    assert with_flag.exit_code == 0 and with_flag.stdout == plain.stdout


def test_a_skipped_file_is_named_once(store: Store) -> None:
    store.add("v3-labels")
    bad = store.root / "-src-app" / "broken.jsonl"
    bad.write_text("not json\n")
    result = run("--dir", str(store.root), "search", "sort", "--all")
    skipped = [line for line in result.stderr.splitlines() if line.startswith("omp-session: skipped")]
    assert len(skipped) == 1 and skipped[0].count(str(bad)) == 1, skipped
