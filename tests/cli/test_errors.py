"""Every error is one line on stderr with exit status 2, never a traceback."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from tests.durability.conftest import start_child

from .conftest import Store, assert_one_line_error, run

# Commands taking a SESSION, with the arguments that follow it.
SESSION_COMMANDS = [
    ("show",),
    ("tree",),
    ("context",),
    ("export",),
    ("export", "-f", "jsonl"),
    ("stats",),
    ("fork",),
    ("label", "l-u1", "text"),
    ("check",),
    ("repair",),
    ("migrate",),
]


def _argv(command: tuple[str, ...], session: str) -> list[str]:
    return [command[0], session, *command[1:]]


@pytest.mark.parametrize("command", SESSION_COMMANDS, ids=" ".join)
def test_missing_file(store: Store, command: tuple[str, ...]) -> None:
    missing = str(store.root / "-src-app" / "nope.jsonl")
    assert_one_line_error(run(*_argv(command, missing)), f"{missing}: no such session file")


@pytest.mark.parametrize("command", SESSION_COMMANDS, ids=" ".join)
def test_no_matching_session(store: Store, command: tuple[str, ...]) -> None:
    store.add("v3-labels", session_id="abc1")
    assert_one_line_error(run(*_argv(command, "zzz")), "no session matches 'zzz'")


@pytest.mark.parametrize("command", SESSION_COMMANDS, ids=" ".join)
def test_ambiguous_prefix(store: Store, command: tuple[str, ...]) -> None:
    store.add("v3-labels", session_id="abc1", name="one.jsonl")
    store.add("v3-labels", session_id="abc2", name="two.jsonl")
    assert_one_line_error(
        run(*_argv(command, "ab")), "'ab' is ambiguous", "abc1 (one.jsonl)", "abc2 (two.jsonl)"
    )


CORRUPT_COMMANDS = [c for c in SESSION_COMMANDS if c[0] not in ("check", "repair")]


@pytest.mark.parametrize("command", CORRUPT_COMMANDS, ids=" ".join)
def test_corrupt_file(store: Store, command: tuple[str, ...]) -> None:
    path = store.add("corrupt-first-line", kind="deviations")
    before = path.read_bytes()
    assert_one_line_error(
        run(*_argv(command, str(path))), f"{path}:", "the first line is not a session header"
    )
    assert path.read_bytes() == before


def test_check_reports_a_corrupt_file_as_a_problem(store: Store) -> None:
    path = store.add("corrupt-first-line", kind="deviations")
    result = run("check", str(path))
    assert result.exit_code == 1 and result.stdout.startswith(f"{path}:1: header: ")


@pytest.mark.parametrize(
    "argv",
    [
        ["show", "{}", "--leaf", "zzz"],
        ["context", "{}", "--leaf", "zzz"],
        ["export", "{}", "--leaf", "zzz"],
        ["export", "{}", "-f", "jsonl", "--leaf", "zzz"],
        ["fork", "{}", "--leaf", "zzz"],
        ["label", "{}", "zzz", "text"],
    ],
    ids=lambda argv: " ".join(argv),
)
def test_unknown_entry_id(store: Store, argv: list[str]) -> None:
    path = store.add("v3-labels")
    before = path.read_bytes()
    assert_one_line_error(run(*(str(path) if a == "{}" else a for a in argv)), "Entry zzz not found")
    assert path.read_bytes() == before


def test_ambiguous_entry_prefix(store: Store) -> None:
    path = store.add("v3-labels")
    assert_one_line_error(
        run("show", str(path), "--leaf", "l-L"), "entry id prefix 'l-L' is ambiguous", "l-L1"
    )


def test_invalid_regex() -> None:
    assert_one_line_error(run("search", "(", "--regex", "--all"), "invalid regular expression")


def test_refusing_to_overwrite_an_export(store: Store) -> None:
    path = store.add("v3-labels")
    target = store.root / "taken.jsonl"
    target.write_text("mine\n")
    assert_one_line_error(run("export", str(path), "-f", "jsonl", "-o", str(target)), "already exists")
    assert target.read_text() == "mine\n"


def test_a_locked_session(store: Store) -> None:
    # The lock is per process (a process may reopen its own session): hold it in another one.
    path = store.add("v3-labels")
    holder = start_child("hold", str(path), stdin=True)
    assert holder.stdout is not None and holder.stdout.readline() == b"opened\n"
    try:
        assert_one_line_error(
            run("label", str(path), "l-u1", "x"), f"locked for writing by process {holder.pid}"
        )
    finally:
        holder.communicate(b"\n", timeout=30)


def test_an_internal_error_is_one_line_too(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("boom\nsecond line")

    # The package attribute ``omp_session.cli.tree`` is the command; patch the module itself.
    monkeypatch.setattr(importlib.import_module("omp_session.cli.tree"), "tree_lines", broken)
    result = run("tree", str(store.add("v3-labels")))
    assert_one_line_error(result, "internal error: RuntimeError: boom second line", "OMP_SESSION_DEBUG=1")


def test_a_missing_sessions_root_is_the_same_error_for_list_as_for_search(tmp_path: Path) -> None:
    # Issue 30: list said "No sessions" (exit 0) where search said "no such sessions directory".
    missing = tmp_path / "nothing"
    for command in (["list", "--all"], ["list"], ["search", "x", "--all"]):
        assert_one_line_error(run("--dir", str(missing), *command), f"{missing}: no such sessions directory")


@pytest.mark.parametrize(
    "argv",
    [
        ["check"],
        ["check", "x", "--all"],
        ["migrate"],
        ["show"],
        ["list", "--all", "--cwd", "."],
        ["export", "x", "-f", "pdf"],
    ],
    ids=lambda argv: " ".join(argv),
)
def test_usage_errors_exit_2(argv: list[str]) -> None:
    result = run(*argv)
    assert result.exit_code == 2 and "Error:" in result.stderr and "Traceback" not in result.output


@pytest.mark.parametrize("command", ["show", "context", "fork"])
def test_an_unknown_id_in_a_version_1_file_explains_why(store: Store, command: str) -> None:
    path = store.add("v1-linear-compaction-index")
    before = path.read_bytes()
    result = run(command, str(path), "--leaf", "0123abcd")
    assert_one_line_error(result, "Entry 0123abcd not found: this is a version 1 file", "omp-session migrate")
    assert path.read_bytes() == before
