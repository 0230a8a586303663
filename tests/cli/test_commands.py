"""Each command on a store built from the corpus and from sessions our SessionManager wrote."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from omp_session.cli import main
from omp_session.model.tree import SessionIndex
from omp_session.store.loading import load_session

from .conftest import Store, run
from .sessions import agent_session

COMMANDS = [
    "list",
    "show",
    "tree",
    "context",
    "export",
    "stats",
    "search",
    "check",
    "repair",
    "migrate",
    "fork",
    "label",
]


def test_help_has_an_example_for_every_command() -> None:
    result = run("--help")
    assert result.exit_code == 0
    examples = result.stdout.split("Examples:")[1]
    for command in [*COMMANDS, "serve"]:
        assert f"omp-session {command}" in examples
    assert "_OMP_SESSION_COMPLETE=bash_source omp-session" in result.stdout
    for command in COMMANDS:
        sub = run(command, "--help")
        assert sub.exit_code == 0 and f"omp-session {command} " in sub.stdout.split("Example")[1]


def test_the_lazily_loaded_commands_are_listed_completed_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    # The group imports a command's module only when it is used: --help must still list each
    # command with its own short help, completion must still offer the names, and an unknown
    # name must still be click's usage error.
    import subprocess
    import sys

    import click

    from omp_session.cli import _COMMANDS

    listed = run("--help").stdout.split("Commands:", 1)[1].split("Examples:", 1)[0]
    names = [line.split()[0] for line in listed.splitlines() if line.strip()]
    assert names == sorted(_COMMANDS)
    group = click.Context(main)
    for name in names:
        command = main.get_command(group, name)
        assert command is not None and command.name == name
        line = next(line for line in listed.splitlines() if line.split()[:1] == [name])
        assert line.split(None, 1)[1].startswith(command.get_short_help_str(limit=200)[:12]), name
    unknown = run("nosuch")
    assert unknown.exit_code == 2 and "No such command 'nosuch'." in unknown.output
    monkeypatch.setenv("_OMP_SESSION_COMPLETE", "bash_complete")
    monkeypatch.setenv("COMP_WORDS", "omp-session ex")
    monkeypatch.setenv("COMP_CWORD", "1")
    completed = CliRunner().invoke(main, [], prog_name="omp-session")
    assert completed.stdout.split() == ["plain,export", "plain,export-store"]
    # ... and a run imports its own command only (a fresh interpreter: this one has them all now).
    probe = (
        "import json, sys\nfrom omp_session.cli import main\n"
        "try:\n    main(['show', '--help'])\nexcept SystemExit:\n    pass\n"
        "print(json.dumps([m for m in sys.modules if m.startswith('omp_session.cli.')]), file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = {f"omp_session.cli.{module}" for module, _ in _COMMANDS.values()} & set(json.loads(done.stderr))
    assert loaded == {"omp_session.cli.show"}


def test_version() -> None:
    result = run("--version")
    assert result.exit_code == 0 and result.stdout == "omp-session, version 0.1.0\n"


def test_shell_completion_offers_session_ids(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    store.add("v3-labels", session_id="15d0aaaa")
    store.add("v3-labels", session_id="99ffbbbb", name="other.jsonl")
    monkeypatch.setenv("_OMP_SESSION_COMPLETE", "bash_complete")
    monkeypatch.setenv("COMP_WORDS", "omp-session show 15")
    monkeypatch.setenv("COMP_CWORD", "2")
    result = CliRunner().invoke(main, [], prog_name="omp-session")
    assert result.exit_code == 0, result.output
    assert result.stdout.split() == ["plain,15d0aaaa"]


def test_list_current_project_all_and_json(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.add("v3-labels", session_id="aaaa1111")
    store.add("header-title-parent", session_id="bbbb2222", project="-other")
    result = run("list", "--all")
    assert result.exit_code == 0
    assert "aaaa1111" in result.stdout and "bbbb2222" in result.stdout and "first" in result.stdout
    rows = json.loads(run("list", "--all", "--json").stdout)
    assert {row["id"] for row in rows} == {"aaaa1111", "bbbb2222"}
    assert all("allMessagesText" not in row and row["size"] > 0 for row in rows)
    assert len(json.loads(run("list", "--all", "--json", "--limit", "1").stdout)) == 1
    monkeypatch.chdir(tmp_path)
    empty = run("list")
    assert empty.exit_code == 0 and empty.stdout == "" and "try --all" in empty.stderr


def test_list_a_project_by_cwd(store: Store, tmp_path: Path) -> None:
    path, _ids = agent_session(store.root / "-elsewhere")
    from omp_session.tools.resolve import project_dir

    project = project_dir(tmp_path, store.root)
    project.mkdir()
    path.rename(project / path.name)
    rows = json.loads(run("list", "--cwd", str(tmp_path), "--json").stdout)
    assert [row["firstMessage"] for row in rows] == ["What is in this picture? Also list the files."]
    assert rows[0]["messageCount"] == 6


def test_show_json_and_leaf(store: Store) -> None:
    path = store.add("v3-branch-summaries")
    data = json.loads(run("show", str(path), "--leaf", "a0000002", "--json").stdout)
    assert [i["entry_id"] for i in data["branches"][0]["items"]] == [
        "u0000001",
        "a0000001",
        "u0000002",
        "a0000002",
    ]
    assert run("show", str(path), "--leaf", "a0000002", "--all-branches").exit_code == 2


def test_show_a_session_we_wrote(store: Store) -> None:
    path, ids = agent_session(store.root / "-demo")
    result = run("show", str(path), "--leaf", ids["answer"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "[question]" in out and "[image: image/png, blob " in out
    assert "▸ thinking (2 lines, --thinking expands): The user wants two things.…" in out
    assert '→ bash {"command": "ls"}' in out and "⎿ result" in out and "✗ error" in out
    expanded = run("show", str(path), "--leaf", ids["answer"], "--thinking").stdout
    assert "▾ thinking\n  The user wants two things.\n  First the image." in expanded


def test_tree_marks_the_leaf_and_json(store: Store) -> None:
    data = json.loads(run("tree", str(store.add("v3-all-entry-types")), "--json").stdout)
    assert [line["kind"] for line in data].count("fold") == 3
    leaf = [line for line in data if line["is_leaf"]]
    assert [line["entry_id"] for line in leaf] == ["cea680ec"]
    full = json.loads(run("tree", str(store.add("v3-all-entry-types")), "--json", "--full").stdout)
    assert len(full) == 18 and not any(line["kind"] == "fold" for line in full)


def test_context_agent_and_llm_messages(store: Store) -> None:
    path = store.add("custom-roles")
    context = json.loads(run("context", str(path)).stdout)
    assert set(context) >= {"messages", "thinkingLevel", "models"}
    assert context["models"] == {"default": "anthropic/claude-sonnet-4-5"}
    llm = json.loads(run("context", str(path), "--llm").stdout)
    assert {m["role"] for m in llm} == {"user", "developer", "assistant", "toolResult"}
    assert llm[-1]["content"] == [{"type": "text", "text": "export const a = 1;"}]  # pruned result
    branch = json.loads(run("context", str(store.add("v3-branch-summaries")), "--leaf", "a0000002").stdout)
    assert [m["content"] for m in branch["messages"] if m["role"] == "user"] == [
        "Write a sort function",
        "Make it a bubble sort",
    ]


def test_context_inlines_blobs(store: Store) -> None:
    path, _ids = agent_session(store.root / "-demo")
    assert "blob:sha256:" in path.read_text()
    context = json.loads(run("context", str(path), "--leaf", _ids["answer"]).stdout)
    image = context["messages"][0]["content"][1]
    assert image["type"] == "image" and not image["data"].startswith("blob:")


def test_stats_one_session_and_all(store: Store) -> None:
    path = store.add("v3-branch-summaries", session_id="5ca1ab1e")
    one = run("stats", str(path))
    assert one.exit_code == 0
    assert "u0000005 (current)" in one.stdout and "all branches" in one.stdout and "$0.01" in one.stdout
    # The other branches are summarised unless --branches is given (issue 27 #6).
    assert "a0000002" not in one.stdout and "2 other branches (4 to 5 entries" in one.stdout
    every_branch = run("stats", "--branches", str(path)).stdout
    assert "a0000002" in every_branch and "a0000003" in every_branch and "other branches" not in every_branch
    store.add("omp-large-real")
    every = run("stats", "--all")
    assert "total" in every.stdout and "Tool calls: bash 192, edit 146, read 50, write 3" in every.stdout
    data = json.loads(run("stats", "--all", "--json").stdout)
    assert data["total"]["input"] == 400 + 1049 and len(data["sessions"]) == 2


def test_search_text_and_json(store: Store) -> None:
    store.add("v3-branch-summaries", session_id="5ca1ab1e")
    result = run("search", "merge sort", "--all")
    assert result.exit_code == 0
    assert "u0000003 user [abandoned → a0000003]  Use merge sort instead" in result.stdout
    assert result.stderr == "2 hits in 1 session files\n"
    hits = json.loads(run("search", "sort", "--all", "--json", "--limit", "2").stdout)
    assert len(hits) == 2 and hits[0]["session_id"] == "5ca1ab1e"
    regex = json.loads(run("search", "^add", "--regex", "--all", "--json").stdout)
    assert [h["entry_id"] for h in regex] == ["u0000005"]


def test_check_clean_and_damaged(store: Store) -> None:
    clean = run("check", str(store.add("v3-labels")))
    assert clean.exit_code == 0 and clean.stdout == ""
    damaged_path = store.add("malformed-middle-line")
    damaged = run("check", str(damaged_path))
    assert damaged.exit_code == 1
    assert damaged.stdout.startswith(f"{damaged_path}:")
    assert all(line.count(": ") >= 2 for line in damaged.stdout.splitlines())
    every = run("check", "--all", "--json")
    assert every.exit_code == 1
    report = json.loads(every.stdout)
    assert report[str(store.root / "-src-app" / "v3-labels.jsonl")] == []


def test_check_all_reports_a_corrupt_header_as_a_problem(store: Store) -> None:
    store.add("corrupt-first-line", kind="deviations")
    result = run("check", "--all")
    assert result.exit_code == 1 and ": header: " in result.stdout


def test_repair_then_nothing_to_repair(store: Store) -> None:
    path = store.add("truncated-last-line")
    first = run("repair", str(path))
    assert first.exit_code == 0, first.output
    assert "backup: " in first.stdout
    assert run("check", str(path)).exit_code == 0
    again = run("repair", str(path))
    assert again.stdout == f"{path}: nothing to repair\n"


def test_migrate_keeps_a_backup(store: Store) -> None:
    path = store.add("v1-linear-compaction-index")
    before = path.read_bytes()
    dry = run("migrate", str(path), "--dry-run")
    assert dry.stdout == f"{path}: would migrate v1 → v3\n" and path.read_bytes() == before
    done = run("migrate", str(path))
    assert done.stdout == f"{path}: migrated v1 → v3 (backup {path.name}.v1.bak)\n"
    assert (path.parent / f"{path.name}.v1.bak").read_bytes() == before
    assert load_session(path).header["version"] == 3
    assert run("migrate", str(path)).stdout == f"{path}: already version 3\n"
    store.add("v2-hookmessage")
    every = run("migrate", "--all")
    assert every.exit_code == 0 and "migrated v2 → v3" in every.stdout
    assert every.stderr == "1 of 2 files migrated\n"  # the .bak is not a session file


def test_fork_writes_a_new_file_and_leaves_the_source(store: Store) -> None:
    path = store.add("v3-labels")
    before = path.read_bytes()
    result = run("fork", str(path), "--leaf", "l-u2")
    assert result.exit_code == 0, result.output
    new = Path(result.stdout.strip())
    assert path.read_bytes() == before and new.parent == path.parent
    loaded = load_session(new)
    assert loaded.header["parentSession"] == str(path)
    index = SessionIndex(loaded.entries)
    assert [e["id"] for e in loaded.entries if e["type"] == "message"] == ["l-u1", "l-a1", "l-u2"]
    assert index.labels == {"l-u1": "beginning", "l-u2": "A (set from branch B)"}


def test_label_and_clear(store: Store) -> None:
    path = store.add("v3-labels")
    result = run("label", str(path), "l-a3", "nice answer")
    assert result.exit_code == 0 and result.stdout == "labelled l-a3: nice answer\n"
    assert SessionIndex(load_session(path).entries).labels["l-a3"] == "nice answer"
    cleared = run("label", str(path), "l-a3", "--clear")
    assert cleared.stdout == "cleared the label of l-a3\n"
    assert "l-a3" not in SessionIndex(load_session(path).entries).labels
    assert run("label", str(path), "l-a3").exit_code == 2
    assert run("label", str(path), "l-a3", "x", "--clear").exit_code == 2


def test_export_jsonl_is_a_valid_branch_session(store: Store) -> None:
    path = store.add("v3-all-entry-types")
    result = run("export", str(path), "-f", "jsonl", "--leaf", "e9e3")
    assert result.exit_code == 0, result.output
    new = Path(result.stdout.strip())
    loaded = load_session(new)
    assert loaded.header["id"] != "15d0c6a0e2b44001" and loaded.header["parentSession"] == str(path)
    assert loaded.entries[-2]["id"] == "e9e3278e"
    assert loaded.entries[-1] == {
        **loaded.entries[-1],
        "type": "label",
        "targetId": "6b88fc6b",
        "label": "plan",
    }
    assert [e["id"] for e in loaded.entries[:-1]] == [e["id"] for e in load_session(path).entries[:8]]
    target = store.root / "out.jsonl"
    assert run("export", str(path), "-f", "jsonl", "-o", str(target)).exit_code == 0
    assert [e["id"] for e in load_session(target).entries][-2] == "cea680ec"  # then the label


def test_export_markdown_to_a_file(store: Store) -> None:
    target = store.root.parent / "out" / "session.md"
    result = run("export", str(store.add("v3-labels")), "-o", str(target))
    assert result.exit_code == 0 and result.stdout == "" and result.stderr == f"wrote {target}\n"
    assert target.read_text().startswith("# Session 15d0c6a0e2b44001\n")


def test_export_html(store: Store) -> None:
    result = run("export", str(store.add("v3-labels")), "-f", "html")
    assert result.exit_code == 0, result.output
    assert "<html" in result.stdout.lower() and "branch B" in result.stdout


def test_show_pages_on_a_terminal(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    import click

    paged: list[str] = []
    module = importlib.import_module("omp_session.cli.show")
    monkeypatch.setattr(module, "is_terminal", lambda stream=None: True)
    monkeypatch.setattr(click, "echo_via_pager", lambda text, color=None: paged.append(text))
    path = store.add("v3-labels")
    result = run("show", str(path))
    assert result.exit_code == 0 and result.stdout == ""
    assert len(paged) == 1 and "B reply" in paged[0]
    assert "B reply" in run("show", str(path), "--no-pager").stdout


def test_search_shows_progress_on_a_terminal_for_many_files(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    for number in range(25):
        store.add("v3-labels", session_id=f"s{number:02d}", name=f"{number:02d}.jsonl")
    module = importlib.import_module("omp_session.cli.search")
    monkeypatch.setattr(module, "is_terminal", lambda stream=None: True)
    hits = json.loads(run("search", "branch B", "--all", "--json").stdout)
    assert len(hits) == 25


def test_list_table_keeps_every_column_with_long_titles(store: Store) -> None:
    from omp_session import SessionManager

    directory = store.root / "-long"
    with SessionManager.create("/home/x/long", directory) as session:
        session.append_message({"role": "user", "content": "word " * 200, "timestamp": 1})
        session.ensure_on_disk()
    result = run("list", "--all")
    header = result.stdout.splitlines()[0].split()
    assert header == ["Last", "activity", "ID", "Title", "/", "first", "message", "Msgs", "Size", "Cwd"]
    assert "/home/x/long" in result.stdout
