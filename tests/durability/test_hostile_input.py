"""Inputs that used to hang or raise exceptions that are not the library's own (issue 11, items
4 to 8): special files, lone surrogates, deep nesting, odd field types, huge numbers.

The command line runs as a real process (``omp-session``), with a timeout: a hang fails the test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from omp_session import CorruptSessionError, SessionError, SessionManager
from omp_session.store.loading import load_session
from omp_session.tools.listing import list_sessions
from omp_session.tools.repair import check, repair

CLI = str(Path(sys.executable).with_name("omp-session"))
HEADER = '{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}'


def run_cli(*args: str, root: Path, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(root.parent / "agent"), "NO_COLOR": "1"}
    env.pop("OMP_SESSION_DEBUG", None)
    return subprocess.run(
        [CLI, "--dir", str(root), *args],
        capture_output=True,
        timeout=timeout,
        env=env,
        encoding="utf-8",
        errors="strict",
    )


def _message(entry_id: str, parent: str | None, content: str) -> str:
    parent_json = json.dumps(parent)
    return (
        f'{{"type":"message","id":"{entry_id}","parentId":{parent_json},'
        f'"timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"user","content":"{content}","timestamp":1}}}}'
    )


# -- item 4: FIFOs and devices -------------------------------------------------------------------


@pytest.fixture(params=["fifo", "dev-zero"])
def special_file(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    root = tmp_path / "sessions"
    (root / "-p").mkdir(parents=True)
    path = root / "-p" / "special.jsonl"
    if request.param == "fifo":
        os.mkfifo(path)
    else:
        os.symlink("/dev/zero", path)
    return path


def test_special_files_are_refused_without_blocking(special_file: Path) -> None:
    for read_only in (True, False):
        with pytest.raises(CorruptSessionError, match="not a session file"):
            SessionManager.open(special_file, read_only=read_only)
    with pytest.raises(CorruptSessionError):
        check(special_file)


@pytest.mark.parametrize("command", ["show", "check", "context", "tree", "stats", "export"])
def test_cli_refuses_special_files_without_blocking(special_file: Path, command: str) -> None:
    result = run_cli(command, str(special_file), root=special_file.parent.parent)
    assert result.returncode == 2, result.stderr
    assert "not a session file" in result.stderr and "internal error" not in result.stderr


def test_listing_skips_special_files_without_blocking(special_file: Path) -> None:
    result = run_cli("list", "--all", root=special_file.parent.parent)
    assert result.returncode == 0 and "internal error" not in result.stderr


# -- item 5: lone surrogates ---------------------------------------------------------------------


@pytest.fixture
def surrogate_session(tmp_path: Path) -> Path:
    root = tmp_path / "sessions"
    path = root / "-p" / "cut.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(HEADER + "\n" + _message("a1", None, "cut \\ud83d emoji") + "\n", encoding="ascii")
    return path


@pytest.mark.parametrize(
    "argv",
    [["show"], ["context"], ["tree"], ["stats"], ["export", "-f", "md"], ["export", "-f", "html"]],
    ids=lambda argv: "-".join(argv),
)
def test_lone_surrogates_are_displayed_as_replacement_characters(
    surrogate_session: Path, argv: list[str]
) -> None:
    result = run_cli(*argv[:1], str(surrogate_session), *argv[1:], root=surrogate_session.parent.parent)
    assert result.returncode == 0, result.stderr
    if argv[0] in ("show", "tree", "export"):
        assert "cut \ufffd emoji" in result.stdout


@pytest.mark.parametrize("argv", [["show", "--json"], ["list", "--all", "--json"]], ids=["show", "list"])
def test_lone_surrogates_stay_exact_in_json_output(surrogate_session: Path, argv: list[str]) -> None:
    target = [] if argv[0] == "list" else [str(surrogate_session)]
    result = run_cli(argv[0], *target, *argv[1:], root=surrogate_session.parent.parent)
    assert result.returncode == 0, result.stderr
    assert "\\ud83d" in result.stdout  # the escape omp wrote, not a replacement character
    assert "\ud83d" in json.dumps(json.loads(result.stdout), ensure_ascii=False)


def test_lone_surrogates_survive_a_rewrite_byte_for_byte(surrogate_session: Path) -> None:
    with SessionManager.open(surrogate_session) as session:
        assert session.get_entries()[0]["message"]["content"] == "cut \ud83d emoji"
        session.set_session_name("renamed")
    assert b'"content":"cut \\ud83d emoji"' in surrogate_session.read_bytes()


# -- item 7: raw exceptions ----------------------------------------------------------------------

HUGE = "9" * 400
HUGE_USAGE = (
    '{"type":"message","id":"b1","parentId":"a1","timestamp":"2025-01-01T00:00:02.000Z",'
    '"message":{"role":"assistant","content":[{"type":"text","text":"big"}],"api":"x","provider":"p",'
    f'"model":"m","usage":{{"input":1e308,"output":1e400,"cacheRead":{HUGE},"cacheWrite":0,'
    f'"totalTokens":{HUGE},"cost":{{"input":1e308,"output":1e308,"cacheRead":{HUGE},'
    f'"cacheWrite":0,"total":{HUGE}}}}},"stopReason":"stop","timestamp":2}}}}'
)


@pytest.mark.parametrize(
    "argv",
    [["stats"], ["show"], ["export", "-f", "html"], ["export", "-f", "md"], ["stats", "--json"]],
    ids=lambda argv: "-".join(argv),
)
def test_huge_usage_numbers_are_shown_not_crashed_on(tmp_path: Path, argv: list[str]) -> None:
    path = tmp_path / "sessions" / "-p" / "huge.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(f"{HEADER}\n{_message('a1', None, 'hi')}\n{HUGE_USAGE}\n", encoding="ascii")
    result = run_cli(argv[0], str(path), *argv[1:], root=path.parent.parent)
    assert result.returncode == 0, result.stderr


# -- item 6: deep nesting ------------------------------------------------------------------------


def _deep(depth: int) -> str:
    return '{"k":' * depth + "1" + "}" * depth


@pytest.mark.parametrize("depth", [254, 300, 1000])
def test_deeply_nested_entries_survive_a_rewrite(tmp_path: Path, depth: int) -> None:
    path = tmp_path / "deep.jsonl"
    deep_line = (
        f'{{"type":"custom","customType":"deep","data":{_deep(depth)},"id":"d1","parentId":null,'
        '"timestamp":"2025-01-01T00:00:01.000Z"}'
    )
    path.write_text(f"{HEADER}\n{deep_line}\n", encoding="ascii")
    with SessionManager.open(path) as session:
        session.set_session_name("renamed")
        session.append_message({"role": "user", "content": "after", "timestamp": 2})
    assert deep_line.encode() + b"\n" in path.read_bytes()
    assert len(SessionManager.open(path, read_only=True).get_entries()) == 2


def test_a_deeply_nested_version_1_file_can_be_appended_to(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    header = '{"type":"session","id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}'
    entry = (
        f'{{"type":"custom","customType":"deep","data":{_deep(400)},"timestamp":"2025-01-01T00:00:01.000Z"}}'
    )
    path.write_text(f"{header}\n{entry}\n", encoding="ascii")
    with SessionManager.open(path) as session:  # the first write migrates: a full rewrite
        session.append_message({"role": "user", "content": "after", "timestamp": 2})
    reloaded = SessionManager.open(path, read_only=True)
    assert reloaded.get_header()["version"] == 3 and len(reloaded.get_entries()) == 2


def test_entry_ids_that_are_lists_or_objects_are_reported_and_repaired(tmp_path: Path) -> None:
    path = tmp_path / "ids.jsonl"
    path.write_text(
        f"{HEADER}\n"
        + _message("a1", None, "ok").replace('"id":"a1"', '"id":["x"]')
        + "\n"
        + _message("b1", "a1", "ok")
        .replace('"id":"b1"', '"id":{"a":1}')
        .replace('"parentId":"a1"', '"parentId":["x"]')
        + "\n",
        encoding="ascii",
    )
    assert {problem.kind for problem in check(path)} == {"missing-id"}
    SessionManager.open(path, read_only=True).build_session_context()
    repair(path)  # nothing it may fix: the file stays as it was
    assert {problem.kind for problem in check(path)} == {"missing-id"}


@pytest.mark.parametrize("value", ['"abc"', "5", "{}", "null", '[{"a":1}]'])
def test_odd_list_fields_never_break_context_building(tmp_path: Path, value: str) -> None:
    path = tmp_path / "odd.jsonl"
    path.write_text(
        f"{HEADER}\n"
        f'{{"type":"mcp_tool_selection","selectedToolNames":{value},"id":"m1","parentId":null,"timestamp":"t"}}\n'
        f'{{"type":"ttsr_injection","injectedRules":{value},"id":"t1","parentId":"m1","timestamp":"t"}}\n',
        encoding="ascii",
    )
    context = SessionManager.open(path, read_only=True).build_session_context()
    assert isinstance(context.selected_mcp_tool_names, list)


def test_a_huge_header_version_in_a_large_file_opens_and_never_locks_us_out(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    header = HEADER.replace('"version":3', f'"version":{2**64}')
    lines = [_message(f"e{i:05d}", None if i == 0 else f"e{i - 1:05d}", "x" * 1000) for i in range(300)]
    path.write_text(header + "\n" + "\n".join(lines) + "\n", encoding="ascii")
    assert path.stat().st_size >= 256 * 1024  # large enough for the offset index
    for _ in range(2):  # the second open finds whatever the first one cached
        assert len(SessionManager.open(path, read_only=True).get_entries()) == 300
    with SessionManager.open(path) as session:
        session.append_message({"role": "user", "content": "more", "timestamp": 1})
    with SessionManager.open(path) as session:  # the lock was released
        assert len(session.get_entries()) == 301


def test_symlink_loops_raise_the_librarys_own_error(tmp_path: Path) -> None:
    loop = tmp_path / "loop.jsonl"
    os.symlink(loop.name, loop)
    for read_only in (True, False):
        with pytest.raises(SessionError):
            SessionManager.open(loop, read_only=read_only)
    with pytest.raises(SessionError):
        check(loop)
    with pytest.raises(SessionError):
        repair(loop)
    assert loop.is_symlink() and os.readlink(loop) == loop.name


# -- item 16: store scans ------------------------------------------------------------------------


def test_a_scan_skips_only_the_bad_entries_and_says_how_many(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    project = root / "-p"
    project.mkdir(parents=True)
    (project / "good.jsonl").write_text(f"{HEADER}\n{_message('a1', None, 'hello')}\n", encoding="ascii")
    os.symlink("loop.jsonl", project / "loop.jsonl")
    unreadable = project / "secret.jsonl"
    unreadable.write_text("not a session\n", encoding="ascii")
    unreadable.chmod(0)
    os.mkfifo(project / "pipe.jsonl")
    try:
        listed = list_sessions(project)
        assert [info.first_message for info in listed] == ["hello"]
        expected = 3 if os.geteuid() != 0 else 2  # root reads any file
        assert len(listed.skipped) == expected
        result = run_cli("list", "--all", root=root)
        assert result.returncode == 0 and "hello" in result.stdout
        # Few skipped files are named one a line (issue 30: many are summarized, one line a reason).
        notes = [line for line in result.stderr.splitlines() if line.startswith("omp-session: skipped ")]
        assert len(notes) == expected and "loop.jsonl" in result.stderr
    finally:
        unreadable.chmod(0o644)


# -- item 8: a stale offset index ----------------------------------------------------------------


def _unsampled_lines(data: bytes) -> list[int]:
    """Indexes of lines that lie outside every block the offset index fingerprint samples."""
    covered = len(data)
    sampled = [(0, 4096), *((covered * k // 17, 4096) for k in range(1, 17)), (covered - 65536, 65536)]
    result, offset = [], 0
    for number, line in enumerate(data.split(b"\n")[:-1]):
        start, end = offset, offset + len(line) + 1
        if all(end <= s or start >= s + n for s, n in sampled):
            result.append(number)
        offset = end
    return result


@pytest.mark.parametrize("edit", ["content", "ids"])
def test_a_same_size_edit_behind_the_offset_index_is_read_correctly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: str
) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    path = tmp_path / "big.jsonl"
    lines = [_message(f"e{i:05d}", None if i == 0 else f"e{i - 1:05d}", "x" * 1000) for i in range(300)]
    path.write_text(HEADER + "\n" + "\n".join(lines) + "\n", encoding="ascii")
    SessionManager.open(path, read_only=True).close()  # stores the offset index
    data = path.read_bytes()
    split = data.split(b"\n")
    free = [n for n in _unsampled_lines(data) if n + 1 in _unsampled_lines(data) and n > 1]
    number = free[len(free) // 2]
    if edit == "content":
        split[number] = split[number].replace(b'"x', b'"y', 1)
    else:  # rename an entry and its child's link, both in place
        old_id = f"e{number - 1:05d}".encode()
        split[number] = split[number].replace(b'"id":"' + old_id, b'"id":"z' + old_id[1:])
        split[number + 1] = split[number + 1].replace(b'"parentId":"' + old_id, b'"parentId":"z' + old_id[1:])
    edited = b"\n".join(split)
    assert len(edited) == len(data) and edited != data
    path.write_bytes(edited)
    expected = load_session(path).entries
    session = SessionManager.open(path, read_only=True)
    assert session.get_entries() == expected
    leaf = expected[-1]["id"]
    assert [e["id"] for e in session.get_branch(leaf)] == [e["id"] for e in expected]
    assert len(session.build_session_context().messages) == 300
