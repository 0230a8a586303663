"""Small viewer fixes of issue 13 #7: titles from the first real prompt, projects that share a cwd."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omp_session.tools.summary import first_prompt, is_slash_command
from omp_session.web.catalog import SessionCatalog
from omp_session.web.index_search import CatalogSearch
from omp_session.web.index_view import build_index

from .support import opened, write_session


def _session(path: Path, cwd: str, *texts: str) -> Path:
    header = {
        "type": "session",
        "version": 3,
        "id": path.stem,
        "timestamp": "2025-06-02T14:05:00.000Z",
        "cwd": cwd,
    }
    records: list[dict[str, Any]] = [header]
    parent = None
    for number, text in enumerate(texts):
        entry_id = f"u{number}"
        records.append(
            {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": f"2025-06-02T14:05:0{number}.000Z",
                "message": {"role": "user", "content": text},
            }
        )
        parent = entry_id
    return write_session(path, records)


def test_slash_commands_are_not_prompts() -> None:
    assert is_slash_command("/mode") and is_slash_command("/model sonnet") and is_slash_command("/skill:x")
    assert not is_slash_command("/etc/hosts is broken") and not is_slash_command("fix /mode")
    assert first_prompt(["/mode", "", "read the docs"]) == "read the docs"
    assert first_prompt(["/mode"]) == "/mode"


def test_a_session_opened_with_a_slash_command_is_titled_by_its_first_prompt(tmp_path: Path) -> None:
    path = _session(tmp_path / "p" / "s1.jsonl", "/w", "/mode", "port the selector")
    assert opened(path).title == "port the selector"
    [summary] = SessionCatalog(tmp_path).sessions()
    assert summary.title == "port the selector"
    assert summary.first_message == "/mode"  # omp's firstMessage is left as omp computes it


def test_projects_with_one_cwd_are_told_apart(tmp_path: Path) -> None:
    _session(tmp_path / "-w-app" / "a.jsonl", "/w/app", "one")
    _session(tmp_path / "--w-app--" / "b.jsonl", "/w/app", "two")
    _session(tmp_path / "-other" / "c.jsonl", "/other", "three")
    page = build_index(SessionCatalog(tmp_path).sessions(), CatalogSearch())
    hints = {link.project: (link.cwd, link.hint) for link in page.projects}
    assert hints == {
        "-w-app": ("/w/app", "-w-app"),
        "--w-app--": ("/w/app", "--w-app--"),
        "-other": ("/other", ""),
    }
    assert sorted(group.hint for group in page.groups) == ["", "--w-app--", "-w-app"]
