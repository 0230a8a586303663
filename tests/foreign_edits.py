"""A Claude Code transcript and a Codex rollout whose edits every view must draw as diffs (issue 30
item 2), written as those agents write them and imported with the real ``import`` command.

Claude Code: an ``Edit`` whose result (``toolUseResult``) carries the ``structuredPatch`` with the
file's line numbers, a ``MultiEdit``, a ``Write`` of a new file, and an ``Edit`` of a file whose
old text spans a ``/** … */`` comment. Codex: one ``apply_patch`` (the custom tool, V4A text) that
updates, adds, deletes and moves files, whose result is Codex's JSON string output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from omp_session.cli import main

__all__ = ["CODEX_PATCH", "import_foreign_edits", "stage_foreign_edits"]

_CWD = "/home/alice/work/app"
_SESSION = "5e551011-0000-4000-8000-0000000000e1"

CODEX_PATCH = (
    "*** Begin Patch\n"
    "*** Update File: src/server.go\n"
    "@@ func main() {\n"
    ' \tlog.Println("starting")\n'
    "-\tport := 8080\n"
    "+\tport := 9090\n"
    " \tserve(port)\n"
    "*** Add File: docs/PORT.md\n"
    "+# Port\n"
    "+\n"
    "+The server listens on 9090.\n"
    "*** Delete File: old/notes.txt\n"
    "*** Update File: src/util.go\n"
    "*** Move to: src/helpers.go\n"
    "@@\n"
    "-package util\n"
    "+package helpers\n"
    "*** End Patch\n"
)


def _claude_record(number: int, kind: str, message: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "parentUuid": None if number == 1 else f"c1a0dee1-0000-4000-8000-{number - 1:012d}",
        "isSidechain": False,
        "userType": "external",
        "cwd": _CWD,
        "sessionId": _SESSION,
        "version": "2.0.14",
        "gitBranch": "main",
        "type": kind,
        "uuid": f"c1a0dee1-0000-4000-8000-{number:012d}",
        "timestamp": f"2025-09-01T10:00:{number:02d}.000Z",
        "message": message,
        **extra,
    }


def _tool_use(number: int, call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    message = {
        "id": f"msg_e1_{number}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "tool_use", "id": call_id, "name": name, "input": arguments}],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    return _claude_record(number, "assistant", message)


def _tool_result(number: int, call_id: str, text: str, result: dict[str, Any]) -> dict[str, Any]:
    content = [{"tool_use_id": call_id, "type": "tool_result", "content": text}]
    return _claude_record(number, "user", {"role": "user", "content": content}, toolUseResult=result)


def claude_records() -> list[dict[str, Any]]:
    router = "src/router.ts"
    original = "import x from 'x';\n\n/**\n * Routes.\n */\nexport const routes = [];\n"
    edit = {
        "file_path": f"{_CWD}/{router}",
        "old_string": "export const routes = [];",
        "new_string": ("export const routes = [\n  '/home',\n];"),
    }
    patch = [
        {
            "oldStart": 5,
            "oldLines": 2,
            "newStart": 5,
            "newLines": 4,
            "lines": ["  */", "-export const routes = [];", "+export const routes = [", "+  '/home',", "+];"],
        }
    ]
    comment_old = "/**\n * Routes.\n */"
    comment_new = "/**\n * The routes of the app.\n */"
    multi = {
        "file_path": f"{_CWD}/src/app.py",
        "edits": [
            {"old_string": "DEBUG = True", "new_string": "DEBUG = False"},
            {"old_string": "PORT = 80", "new_string": "PORT = 8080"},
        ],
    }
    write = {"file_path": f"{_CWD}/src/new_module.py", "content": '"""A new module."""\n\nVALUE = 1\n'}
    return [
        _claude_record(1, "user", {"role": "user", "content": "Add a home route."}),
        _tool_use(2, "toolu_e1_a", "Edit", edit),
        _tool_result(3, "toolu_e1_a", "The file has been updated.", {
            "filePath": f"{_CWD}/{router}", "oldString": edit["old_string"], "newString": edit["new_string"],
            "originalFile": original, "structuredPatch": patch, "userModified": False, "replaceAll": False,
        }),
        _tool_use(4, "toolu_e1_b", "MultiEdit", multi),
        _tool_result(5, "toolu_e1_b", "Applied 2 edits.", {"filePath": multi["file_path"]}),
        _tool_use(6, "toolu_e1_c", "Write", write),
        _tool_result(7, "toolu_e1_c", "File created.", {"type": "create", "filePath": write["file_path"]}),
        _tool_use(8, "toolu_e1_d", "Edit", {
            "file_path": f"{_CWD}/{router}", "old_string": comment_old, "new_string": comment_new,
        }),
        _tool_result(9, "toolu_e1_d", "The file has been updated.", {"originalFile": original}),
    ]  # fmt: skip


def codex_records() -> list[dict[str, Any]]:
    def line(second: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": f"2025-10-02T08:00:{second:02d}.000Z", "type": kind, "payload": payload}

    output = json.dumps({"output": "Success. Updated the following files:\nM src/server.go\n", "metadata": {
        "exit_code": 0, "duration_seconds": 0.1}})  # fmt: skip
    return [
        line(0, "session_meta", {
            "id": "0199c0de-00e1-7000-8000-0000000000e1", "timestamp": "2025-10-02T08:00:00.000Z",
            "cwd": "/home/bob/src/svc", "originator": "codex_cli_rs", "cli_version": "0.46.0",
            "source": "cli", "model_provider": "openai",
        }),
        line(1, "turn_context", {"cwd": "/home/bob/src/svc", "model": "gpt-5-codex", "effort": "medium"}),
        line(2, "response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "Move the server to port 9090."}]}),
        line(3, "response_item", {
            "type": "custom_tool_call", "status": "completed", "call_id": "call_e1_p", "name": "apply_patch",
            "input": CODEX_PATCH,
        }),
        line(4, "response_item", {
            "type": "custom_tool_call_output", "call_id": "call_e1_p", "output": output,
        }),
        line(5, "response_item", {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "Done."}]}),
    ]  # fmt: skip


def _write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def stage_foreign_edits(home: Path) -> dict[str, Path]:
    """Both transcripts where the agents keep them under ``home`` (``~/.claude/projects/…``,
    ``~/.codex/sessions/YYYY/MM/DD/rollout-….jsonl``), by source."""
    claude = home / ".claude" / "projects" / "-home-alice-work-app" / f"{_SESSION}.jsonl"
    codex = home / ".codex" / "sessions" / "2025" / "10" / "02"
    rollout = codex / "rollout-2025-10-02T08-00-00-0199c0de-00e1-7000-8000-0000000000e1.jsonl"
    return {
        "claude": _write_jsonl(claude, claude_records()),
        "codex": _write_jsonl(rollout, codex_records()),
    }


def import_foreign_edits(tmp_path: Path) -> dict[str, Path]:
    """Stage both transcripts under ``tmp_path/home``, import each with ``omp-session import``
    into ``tmp_path/sessions`` and return the imported omp session files by source."""
    sessions = tmp_path / "sessions"
    sources = stage_foreign_edits(tmp_path / "home")
    imported: dict[str, Path] = {}
    for source, path in sources.items():
        before = set(sessions.rglob("*.jsonl"))
        result = CliRunner().invoke(main, ["--dir", str(sessions), "import", source, str(path)])
        assert result.exit_code == 0, result.output
        (new,) = set(sessions.rglob("*.jsonl")) - before
        imported[source] = new
    return imported
