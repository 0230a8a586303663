"""``SessionManager`` is composed, not inherited (issue 9 item 8): its parts share one state, none
of them knows the manager, and the API is explicit methods on the class itself."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path
from typing import Any

import pytest

import omp_session.manager
from omp_session import SessionManager
from omp_session.manager.appends import Appends
from omp_session.manager.navigation import Navigation
from omp_session.manager.state import SessionState

MANAGER_DIR = Path(omp_session.manager.__file__).parent
PARTS = ["appends", "navigation", "omp18_api", "persistence", "state", "titles", "whole_session", "workspace"]


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    names |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    return names


def test_the_manager_inherits_nothing() -> None:
    assert SessionManager.__mro__ == (SessionManager, object)


def test_no_part_imports_the_manager_or_stubs_its_methods() -> None:
    for part in [*PARTS, "factories"]:
        path = MANAGER_DIR / f"{part}.py"
        assert "omp_session.manager.session_manager" not in _imported_modules(path), part
        assert "NotImplementedError" not in path.read_text(encoding="utf-8"), part


def test_every_public_method_is_defined_on_the_class_with_its_types() -> None:
    public = [name for name in dir(SessionManager) if not name.startswith("_")]
    assert len(public) > 60
    for name in public:
        assert name in vars(SessionManager), f"{name} is not defined on SessionManager itself"
        member = getattr(SessionManager, name)
        if callable(member):
            assert "return" in inspect.get_annotations(member), name


def test_the_parts_see_one_state_after_a_fork_moves_the_file(tmp_path: Path) -> None:
    # A fork replaces the storage; the artifacts part must follow the new file, not keep the old.
    with SessionManager.create("/p", tmp_path) as session:
        session.append_message({"role": "user", "content": "q", "timestamp": 1})
        session.ensure_on_disk()
        old_directory = session.get_artifacts_dir()
        result = session.fork()
        assert result is not None
        new_directory = session.get_artifacts_dir()
        assert new_directory == str(Path(result.new_session_file).with_suffix("")) != old_directory
        artifact = session.save_artifact("after the fork", "bash")
        assert Path(str(session.get_artifact_path(artifact))).parent == Path(str(new_directory))
        assert session.get_entries()[0]["message"]["content"] == "q"


#: What is on disk: ``Persistence``'s, set nowhere else (issue 23 item 3).
WRITE_FLAGS = {
    "ensured",
    "flushed",
    "migrated_from",
    "has_slot",
    "read_offset",
    "rewrite_pending",
    "rewrite_backup",
    "sealed",
    "hold_writes",
}


def test_only_the_persistence_part_changes_what_is_on_disk() -> None:
    assert not WRITE_FLAGS & {field.name for field in dataclasses.fields(SessionState)}
    for path in MANAGER_DIR.glob("*.py"):
        if path.name == "persistence.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        targets = [
            target
            for node in ast.walk(tree)
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        ]
        names = {
            element.attr.lstrip("_")
            for target in targets
            for element in (target.elts if isinstance(target, ast.Tuple) else [target])
            if isinstance(element, ast.Attribute)
        }
        assert not names & WRITE_FLAGS, (path.name, names & WRITE_FLAGS)


def test_the_constructor_is_private() -> None:
    with pytest.raises(TypeError):
        SessionManager(cwd="/p", session_dir="", header={})  # type: ignore[call-arg]


def test_a_forwarded_method_is_the_parts_and_answers_for_its_own_manager(tmp_path: Path) -> None:
    # Bound on each manager at its first call: one manager's parts never answer for another's.
    assert SessionManager.get_leaf_id is Navigation.get_leaf_id  # the signature and docstring are the part's
    assert SessionManager.get_entries.__doc__ == Navigation.get_entries.__doc__ is not None
    first, second = SessionManager.in_memory("/a"), SessionManager.in_memory("/b")
    one = first.append_message({"role": "user", "content": "one", "timestamp": 1})
    assert first.get_leaf_id() == one and second.get_leaf_id() is None
    two = second.append_message({"role": "user", "content": "two", "timestamp": 2})
    assert second.get_leaf_id() == two and first.get_leaf_id() == one
    assert inspect.signature(first.append_message) == inspect.signature(Appends.append_message).replace(
        parameters=list(inspect.signature(Appends.append_message).parameters.values())[1:]
    )


def test_of_entries_holds_what_it_is_given_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    header = {
        "type": "session",
        "version": 3,
        "id": "s1",
        "timestamp": "2025-06-02T14:00:00.000Z",
        "cwd": "/w",
    }
    entries: list[dict[str, Any]] = [
        {"type": "message", "id": "a", "parentId": None, "timestamp": "2025-06-02T14:00:01.000Z",
         "message": {"role": "user", "content": "q", "timestamp": 1}},
        {"type": "message", "id": "b", "parentId": "a", "timestamp": "2025-06-02T14:00:02.000Z",
         "message": {"role": "user", "content": "again", "timestamp": 2}},
    ]  # fmt: skip
    session = SessionManager.of_entries(header, entries, cwd="/w")
    assert session.get_header() == header and session.get_entries() == entries
    assert session.get_leaf_id() == "b" and session.get_session_file() is None
    session.append_message({"role": "user", "content": "more", "timestamp": 3})
    assert len(session.get_entries()) == 3 and list(tmp_path.iterdir()) == []
