"""The conformance corpus' required deviations (tests/conformance/README.md, "Required deviations"):
inputs on which omp 13.19.0 crashes, hangs or destroys data."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from omp_session import CorruptSessionError, SessionManager
from omp_session.format.codec import NOT_OBJECT
from tests.helpers import contents, ids, read_lines, user, within

DEVIATIONS = Path(__file__).parent / "conformance" / "deviations"
TIMEOUT = 10.0


def copy_case(name: str, tmp_path: Path) -> Path:
    target = tmp_path / f"{name}.jsonl"
    shutil.copyfile(DEVIATIONS / f"{name}.jsonl", target)
    return target


def test_corrupt_first_line_raises_naming_file_and_line_1(tmp_path: Path) -> None:
    path = copy_case("corrupt-first-line", tmp_path)
    original = path.read_bytes()
    for read_only in (False, True):
        with pytest.raises(CorruptSessionError) as info:
            SessionManager.open(path, read_only=read_only)
        assert info.value.path == path
        assert info.value.line == 1
        assert f"{path}:1:" in str(info.value)
    assert path.read_bytes() == original
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_corrupt_first_line_is_skipped_by_continue_recent(tmp_path: Path) -> None:
    path = copy_case("corrupt-first-line", tmp_path)
    original = path.read_bytes()
    with SessionManager.continue_recent("/proj", tmp_path) as session:
        assert session.get_session_file() != str(path)
    assert path.read_bytes() == original


def test_empty_file_starts_a_new_session_at_that_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = copy_case("empty-file", tmp_path)
    assert path.read_bytes() == b""
    with SessionManager.open(path) as session:
        assert session.get_session_file() == str(path)
        (header,) = read_lines(path)
        assert header == session.get_header()
        assert header["id"] == session.get_session_id() and header["cwd"] == str(tmp_path)
        new_id = session.append_message(user("first"))
    assert ids(read_lines(path)[1:]) == [new_id]


def test_null_line_is_skipped_and_recorded(tmp_path: Path) -> None:
    path = copy_case("null-line", tmp_path)
    original = path.read_bytes()
    with SessionManager.open(path) as session:
        assert path.read_bytes() == original
        assert ids(session.get_entries()) == ["nl-u1", "nl-a1"]
        (issue,) = session.get_load_issues()
        assert (issue.line, issue.reason, issue.skipped, issue.preview) == (3, NOT_OBJECT, True, "null")
        assert issue.offset == original.index(b"\nnull\n") + 1
        assert session.get_leaf_id() == "nl-a1"
        assert contents(session.build_session_context().messages) == ["x", "A:y"]
        session.append_message(user("after"))
    assert path.read_bytes().startswith(original)  # the null line is kept by appends


def test_scalar_lines_are_skipped_and_recorded(tmp_path: Path) -> None:
    path = copy_case("scalar-lines", tmp_path)
    original = path.read_bytes()
    with SessionManager.open(path) as session:
        assert ids(session.get_entries()) == ["sc-u1", "sc-a1"]
        assert [(i.line, i.reason, i.preview) for i in session.get_load_issues()] == [
            (3, NOT_OBJECT, "42"),
            (4, NOT_OBJECT, '"str"'),
            (5, NOT_OBJECT, "[1,2]"),
        ]
        assert [root.entry["id"] for root in session.get_tree()] == ["sc-u1"]
        assert session.get_leaf_id() == "sc-a1"
    assert path.read_bytes() == original


def test_scalar_as_last_line_keeps_the_leaf_on_the_last_entry(tmp_path: Path) -> None:
    path = copy_case("scalar-lines", tmp_path)
    path.write_bytes(path.read_bytes() + b"7\n")
    with SessionManager.open(path, read_only=True) as session:
        assert session.get_leaf_id() == "sc-a1"
        assert contents(session.build_session_context().messages) == ["x", "A:y"]


def test_assistant_without_usage_cost_loads_with_zero_cost(tmp_path: Path) -> None:
    path = copy_case("assistant-without-usage-cost", tmp_path)
    with SessionManager.open(path) as session:
        assert session.get_usage_statistics().to_dict() == {
            "input": 100,
            "output": 20,
            "cacheRead": 0,
            "cacheWrite": 0,
            "premiumRequests": 0,
            "cost": 0,
        }
        assert contents(session.build_session_context().messages) == ["x", "A:no cost"]


def test_assistant_without_any_usage_loads(tmp_path: Path) -> None:
    path = copy_case("assistant-without-usage-cost", tmp_path)
    path.write_bytes(
        path.read_bytes().replace(
            b'"usage":{"input":100,"output":20,"cacheRead":0,"cacheWrite":0,"totalTokens":120},', b""
        )
    )
    assert b'"usage"' not in path.read_bytes()
    with SessionManager.open(path) as session:
        assert session.get_usage_statistics().to_dict()["input"] == 0
        assert session.build_session_context().models == {"default": "anthropic/claude-sonnet-4-5"}


def test_self_parent_leaf_is_a_root(tmp_path: Path) -> None:
    path = copy_case("self-parent-leaf", tmp_path)
    original = path.read_bytes()
    session = within(TIMEOUT, lambda: SessionManager.open(path))
    assert session.get_leaf_id() == "sp-loop"
    context = within(TIMEOUT, session.build_session_context)
    assert contents(context.messages) == ["I am my own parent and the leaf"]
    assert ids(within(TIMEOUT, session.get_branch)) == ["sp-loop"]
    assert [root.entry["id"] for root in within(TIMEOUT, session.get_tree)] == ["sp-u1", "sp-loop"]
    assert path.read_bytes() == original
    new = within(TIMEOUT, lambda: session.create_branched_session("sp-loop"))
    assert new is not None and ids(read_lines(Path(new))[1:]) == ["sp-loop"]
    session.close()


def test_two_cycle_first_member_in_file_order_is_the_root(tmp_path: Path) -> None:
    path = copy_case("two-cycle", tmp_path)
    original = path.read_bytes()
    session = within(TIMEOUT, lambda: SessionManager.open(path))
    assert session.get_leaf_id() == "cy-b"
    roots = within(TIMEOUT, session.get_tree)
    assert [root.entry["id"] for root in roots] == ["cy-a"]
    assert [(n.entry["id"], d) for n, d in within(TIMEOUT, lambda: list(roots[0].walk()))] == [
        ("cy-a", 0),
        ("cy-b", 1),
    ]
    assert ids(within(TIMEOUT, session.get_branch)) == ["cy-a", "cy-b"]
    assert ids(within(TIMEOUT, lambda: session.get_branch("cy-a"))) == ["cy-a"]
    assert contents(within(TIMEOUT, session.build_session_context).messages) == ["a", "b"]
    assert path.read_bytes() == original
    new = within(TIMEOUT, lambda: session.create_branched_session("cy-b"))
    assert new is not None and ids(read_lines(Path(new))[1:]) == ["cy-a", "cy-b"]
    session.close()
    with within(TIMEOUT, lambda: SessionManager.open(new, read_only=True)) as reopened:
        assert ids(within(TIMEOUT, reopened.get_branch)) == ["cy-a", "cy-b"]
