"""``SessionManager`` is composed, not inherited (issue 9 item 8): its parts share one state, none
of them knows the manager, and the API is explicit methods on the class itself."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import omp_session.manager
from omp_session import SessionManager

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
