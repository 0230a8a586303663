"""Packaging: the library runs on its core dependencies alone; the command line names missing extras.

The clean environments here are real: a fresh ``venv`` (no pip, no site-packages of ours) whose
only third-party modules are the ones a test links in, next to the package's own sources.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import omp_session

SOURCE_ROOT = Path(omp_session.__file__).resolve().parents[1]
SITE_PACKAGES = Path(str(importlib.metadata.distribution("orjson").locate_file("")))

#: What ``pip install omp-session`` brings, as import names.
CORE = ("orjson", "msgspec", "typing_extensions")
#: What ``[cli]`` brings: click, rich and rich's own dependencies.
CLI = ("click", "rich", "markdown_it", "mdurl", "pygments")
#: Every module the views need and the library must not load.
VIEW_MODULES = (*CLI, "starlette", "uvicorn", "jinja2", "markupsafe", "nh3")
#: Runs the ``omp-session`` console script's function with the arguments after ``-c``.
LAUNCH = "from omp_session._launcher import main; main()"


def _clean_python(root: Path, modules: tuple[str, ...]) -> Path:
    """A fresh virtual environment holding only ``modules`` (linked from this one) and our sources."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    [site] = root.glob("lib/python*/site-packages")
    for name in modules:
        source = SITE_PACKAGES / name
        if not source.exists():
            source = SITE_PACKAGES / f"{name}.py"
        (site / source.name).symlink_to(source)
    (site / "omp_session_src.pth").write_text(f"{SOURCE_ROOT}\n")
    return root / "bin" / "python"


def _run(python: Path, code: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    return subprocess.run(
        [str(python), "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


LIBRARY_ROUND = """
    import importlib, json, pkgutil, sys
    from pathlib import Path

    import omp_session
    from omp_session import SessionManager

    modules = ["omp_session.export.markdown", "omp_session.export.jsonl"]
    for package in ("format", "model", "store", "manager", "tools"):
        imported = importlib.import_module(f"omp_session.{package}")
        modules += [m.name for m in pkgutil.walk_packages(imported.__path__, f"omp_session.{package}.")]
    for name in modules:
        importlib.import_module(name)

    root = Path(sys.argv[1])
    with SessionManager.create("/work/project", root) as session:
        session.append_message({"role": "user", "content": "hello", "timestamp": 1})
        session.append_message(
            {"role": "assistant", "content": [{"type": "text", "text": "hi"}], "timestamp": 2,
             "api": "x", "provider": "p", "model": "m", "stopReason": "stop",
             "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                       "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}}
        )
        path = session.get_session_file()
    with SessionManager.open(path) as writer:
        writer.append_message({"role": "user", "content": "again", "timestamp": 3})
    reader = SessionManager.open(path, read_only=True)
    context = reader.build_session_context()
    listed = SessionManager.list("/work/project", root)
    from omp_session.export.markdown import export_markdown
    print(json.dumps({
        "modules": len(modules),
        "messages": [m["role"] for m in context.messages],
        "listed": [str(info.path) == str(path) for info in listed],
        "first_message": listed[0].first_message,
        "markdown_has_hello": "hello" in export_markdown(Path(path)),
        "views_loaded": sorted(m for m in sys.modules if m.partition(".")[0] in sys.argv[2].split(",")),
    }))
"""


def test_core_requirements_are_only_the_library_s(tmp_path: Path) -> None:
    requirements = importlib.metadata.requires("omp-session") or []
    names = (r.split(">")[0].split(";")[0].strip() for r in requirements if "extra ==" not in r)
    # (PEP 503 names: setuptools writes typing_extensions as given, hatchling normalised it)
    unconditional = sorted(re.sub(r"[-_.]+", "-", name).lower() for name in names)
    assert unconditional == ["msgspec", "orjson", "typing-extensions"]
    extras = importlib.metadata.metadata("omp-session").get_all("Provides-Extra") or []
    assert {"cli", "web", "all", "test"} <= set(extras)


def test_library_works_in_a_fresh_environment_without_the_view_dependencies(tmp_path: Path) -> None:
    python = _clean_python(tmp_path / "venv", CORE)
    missing = _run(python, "import click", cwd=tmp_path)
    assert missing.returncode == 1 and "No module named 'click'" in missing.stderr  # really clean
    sessions = tmp_path / "sessions"
    done = _run(python, LIBRARY_ROUND, str(sessions), ",".join(VIEW_MODULES), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["modules"] > 40
    assert result["messages"] == ["user", "assistant", "user"]
    assert result["listed"] == [True] and result["first_message"] == "hello"
    assert result["markdown_has_hello"] is True
    assert result["views_loaded"] == []


def test_the_command_names_the_cli_extra_when_it_is_missing(tmp_path: Path) -> None:
    python = _clean_python(tmp_path / "venv", CORE)
    for launch in (LAUNCH, "import runpy; runpy.run_module('omp_session')"):  # python -m omp_session
        done = _run(python, launch, "list", cwd=tmp_path)
        assert done.returncode == 2
        assert done.stdout == ""
        assert done.stderr == (
            "omp-session: error: the omp-session command needs the [cli] extra (click is not installed): "
            "pip install 'omp-session[cli]'\n"
        )


@pytest.mark.parametrize(
    ("arguments", "first_missing"),
    [(["export", "SESSION", "-f", "html"], "markupsafe"), (["serve", "--dir", "SESSIONS"], "starlette")],
    ids=["export-html", "serve"],
)
def test_web_commands_name_the_web_extra_when_it_is_missing(
    tmp_path: Path, arguments: list[str], first_missing: str
) -> None:
    # The HTML export needs only the templates (markupsafe, jinja2's escaping, is the first it
    # imports); the viewer needs the web server first.
    python = _clean_python(tmp_path / "venv", CORE + CLI)
    sessions = tmp_path / "sessions"
    made = _run(python, LIBRARY_ROUND, str(sessions), "", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    [session_file] = sessions.glob("*.jsonl")
    names = {"SESSION": str(session_file), "SESSIONS": str(sessions)}
    arguments = [names.get(argument, argument) for argument in arguments]
    done = _run(python, LAUNCH, *arguments, cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr == (
        f"omp-session: error: omp-session {arguments[0]} needs the [web] extra "
        f"({first_missing} is not installed): pip install 'omp-session[web]'\n"
    )
    shown = _run(python, LAUNCH, "show", str(session_file), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr  # the rest of the command line works without [web]
    assert "hello" in shown.stdout and "again" in shown.stdout


def test_one_version_source() -> None:
    assert importlib.metadata.version("omp-session") == omp_session.__version__
    pyproject = (SOURCE_ROOT.parent / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dynamic = ["version"]' in pyproject and "\nversion =" not in pyproject
