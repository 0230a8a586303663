"""Every module says what it exports (``__all__``), and each exported name exists."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import omp_session

SOURCE = Path(omp_session.__file__).parent
MODULES = sorted(
    ".".join(("omp_session", *path.relative_to(SOURCE).with_suffix("").parts)).removesuffix(".__init__")
    for path in SOURCE.rglob("*.py")
    if path.name != "__main__.py"  # runs the command line when imported
)


def test_every_module_is_listed() -> None:
    assert len(MODULES) > 80 and "omp_session.errors" in MODULES and "omp_session.store" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_module_defines_all_and_every_name_in_it_exists(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__dict__.get("__all__")
    assert isinstance(exported, list), f"{name} has no __all__"
    assert len(set(exported)) == len(exported)
    assert [export for export in exported if not hasattr(module, export)] == []


def test_internal_modules_say_so_and_public_ones_do_not() -> None:
    internal = {
        name
        for name in MODULES
        if "Internal module" in (ast.get_docstring(ast.parse(_source_of(name))) or "")
    }
    assert {
        "omp_session.store._indexed.fast_open",
        "omp_session.manager.appends",
        "omp_session.cli.show",
    } <= internal
    assert not internal & {"omp_session", "omp_session.errors", "omp_session.store", "omp_session.web"}


def _source_of(name: str) -> str:
    parts = name.split(".")[1:]
    path = SOURCE.joinpath(*parts)
    file = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    return file.read_text(encoding="utf-8")
