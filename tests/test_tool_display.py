"""Tool calls a person can read (issue 13 #1): the display model and each view's rendering of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from omp_session.cli import main
from omp_session.export.markdown import export_markdown
from omp_session.format.codec import encode_line
from omp_session.rendering.blocks import tool_call_block
from omp_session.tools.tool_display import (
    diff_text,
    is_one_line_call,
    language_for_path,
    parse_diff,
    readable_output,
    tool_call_display,
)
from tests.web.support import entry_views, opened

HEADER = {
    "type": "session",
    "version": 3,
    "id": "s-tools",
    "timestamp": "2025-06-02T14:05:00.000Z",
    "cwd": "/w",
}
EDIT = {"path": "app/orders.py", "oldText": "def f():\n    return 1\n", "newText": "def f():\n    return 2\n"}
WRITE = {"path": "t.ts", "content": "a\nb"}
PI_DIFF = "   9 def f():\n- 10     return 1\n+ 10     return 2\n  11 "


def _session(path: Path) -> Path:
    def entry(entry_id: str, parent: str | None, message: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "message",
            "id": entry_id,
            "parentId": parent,
            "timestamp": "2025-06-02T14:05:01.000Z",
            "message": message,
        }

    calls = [
        {"type": "toolCall", "id": "c-edit", "name": "edit", "arguments": EDIT},
        {
            "type": "toolCall",
            "id": "c-write",
            "name": "write",
            "arguments": {"path": "t.ts", "content": "a\nb"},
        },
        {"type": "toolCall", "id": "c-bash", "name": "bash", "arguments": {"command": "cd x\nmake test"}},
    ]
    records = [
        HEADER,
        entry("u1", None, {"role": "user", "content": "fix it"}),
        entry("a1", "u1", {"role": "assistant", "content": calls, "model": "m", "provider": "p"}),
        entry(
            "r1",
            "a1",
            {
                "role": "toolResult",
                "toolCallId": "c-edit",
                "toolName": "edit",
                "content": [{"type": "text", "text": "ok"}],
                "details": {"diff": PI_DIFF},
            },
        ),
    ]
    path.write_bytes(b"".join(encode_line(record) for record in records))
    return path


def test_an_edit_is_a_diff_numbered_by_its_result() -> None:
    computed = tool_call_display("edit", EDIT)
    assert computed.kind == "edit" and computed.language == "python" and not computed.numbered_from_file
    assert diff_text(computed.diff) == " def f():\n-    return 1\n+    return 2\n "
    from_result = tool_call_display("edit", EDIT, {"diff": PI_DIFF})
    assert from_result.numbered_from_file
    assert [(d.sign, d.old_line, d.new_line) for d in from_result.diff] == [
        (" ", 9, 9),
        ("-", 10, None),
        ("+", None, 10),
        (" ", 11, 11),
    ]
    assert "oldText" in computed.shown and "path" not in computed.shown


def test_every_edit_form_is_a_diff() -> None:
    claude = tool_call_display("Edit", {"file_path": "a.rs", "old_string": "x", "new_string": "y"})
    assert claude.kind == "edit" and claude.language == "rust" and diff_text(claude.diff) == "-x\n+y"
    multi = tool_call_display("edit", {"path": "a.go", "edits": [{"oldText": "a", "newText": "b"}] * 2})
    assert diff_text(multi.diff) == "@@ edit 1 of 2 @@\n-a\n+b\n@@ edit 2 of 2 @@\n-a\n+b"
    unified = parse_diff("@@ -88,2 +88,3 @@\n a\n-b\n+c\n+d")
    assert [(d.sign, d.old_line, d.new_line) for d in unified] == [
        ("@", None, None),
        (" ", 88, 88),
        ("-", 89, None),
        ("+", None, 89),
        ("+", None, 90),
    ]


def test_writes_commands_and_other_arguments() -> None:
    write = tool_call_display("write", {"path": "src/x.tsx", "content": "<A/>"})
    assert (write.kind, write.language, write.code) == ("write", "tsx", "<A/>")
    bash = tool_call_display("bash", {"command": "ls\npwd", "timeout": 5})
    assert (bash.kind, bash.code, bash.arguments) == ("command", "ls\npwd", [("timeout", "5")])
    other = tool_call_display("task", {"prompt": "line one\nline two", "n": [1]})
    assert other.kind == "generic" and other.multiline and ("prompt", "line one\nline two") in other.arguments
    assert language_for_path("Makefile") == "make" and language_for_path("x.unknown") is None


def test_show_prints_the_diff_the_file_and_the_command(tmp_path: Path) -> None:
    path = _session(tmp_path / "s.jsonl")
    result = CliRunner().invoke(
        main, ["show", str(path), "--no-pager"], env={"COLUMNS": "100", "NO_COLOR": "1"}
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "→ edit app/orders.py" in out
    assert "  10 -     return 1" in out and "  10 +     return 2" in out  # the file's line numbers
    assert "→ write t.ts" in out and "  1 + a\n  2 + b" in out  # the written file, numbered
    assert "  $ cd x\n    make test" in out  # a real line break, not "cd x\\nmake test"
    assert "\\n" not in out


def test_markdown_has_a_diff_block(tmp_path: Path) -> None:
    text = export_markdown(_session(tmp_path / "s.jsonl"))
    assert "```diff\n def f():\n-    return 1\n+    return 2\n \n```" in text
    assert "```typescript\na\nb\n```" in text
    assert "```sh\ncd x\nmake test\n```" in text


def test_viewer_and_export_draw_the_diff_table(tmp_path: Path) -> None:
    path = _session(tmp_path / "s.jsonl")
    calls = [b for e in entry_views(path) for b in e.blocks if b.kind == "toolcall"]
    diff = calls[0].children[0]
    assert diff.kind == "diff" and diff.detail == "line numbers of the file"
    assert [(cls, old, new) for cls, old, new, _html in diff.rows] == [
        ("ctx", "9", "9"),
        ("del", "10", ""),
        ("add", "", "10"),
        ("ctx", "11", "11"),
    ]
    assert [(c.kind, c.title) for c in calls[1].children] == [("diff", "t.ts"), ("json", "other arguments")]
    assert calls[2].children[0].title == "command" and "make" in str(calls[2].children[0].html)
    html = opened(path).window(None)["html"]  # the viewer's window; the export's is the same HTML
    assert '<tr class="d-add">' in html and '<tr class="d-del">' in html
    lone = tool_call_block({"name": "read", "arguments": {"path": "a"}})
    assert [(c.kind, c.title, c.collapsed) for c in lone.children] == [("json", "arguments", False)]


_ARGUMENT_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(alphabet="ab \n"),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
    max_leaves=4,
)


@settings(max_examples=300, deadline=None)
@given(
    arguments=st.dictionaries(
        st.sampled_from(
            ["path", "pattern", "limit", "command", "content", "edits", "oldText", "newText", "x"]
        ),
        _ARGUMENT_VALUES,
        max_size=4,
    )
)
def test_a_call_known_to_be_one_line_is_a_generic_call_of_one_liners(arguments: dict[str, object]) -> None:
    """``show``'s shortcut past the display model agrees with the model whenever it is taken."""
    if is_one_line_call(arguments):
        display = tool_call_display("read", arguments)
        assert display.kind == "generic" and not display.multiline


def test_a_v4a_patch_is_one_change_per_file() -> None:
    patch = (
        "*** Begin Patch\n*** Update File: a.go\n@@ func f() {\n x\n-y\n+z\n\n w\n*** End of File\n"
        "*** Add File: n.md\n+one\n+\n*** Delete File: d.txt\n*** Update File: u.py\n*** Move to: v.py\n"
        "@@\n-a\n+b\n\n*** End Patch\nafter the end"
    )
    for arguments in (
        {"input": patch},
        {"command": ["apply_patch", patch]},
        {"cmd": f"apply_patch <<'EOF'\n{patch}\nEOF"},
    ):
        display = tool_call_display("apply_patch", arguments)
        assert display.kind == "edit" and display.where == "a.go +3 files" and display.language == "go"
        assert [(c.heading, c.action, c.numbered_from_file) for c in display.files] == [
            ("a.go", "update", False),
            ("n.md (new file)", "add", True),
            ("d.txt (deleted)", "delete", False),
            ("u.py → v.py", "update", False),
        ]
        first, added, deleted, moved = display.files
        assert diff_text(first.lines) == "@@ func f() {\n x\n-y\n+z\n \n w\n@@ end of file @@"
        assert [(d.sign, d.text, d.new_line) for d in added.lines] == [("+", "one", 1), ("+", "", 2)]
        assert deleted.lines == [] and deleted.numbering == ""
        assert diff_text(moved.lines) == "@@\n-a\n+b" and moved.language == "python"
        assert first.numbering == "no line numbers in the patch"
    # A command that only prints a patch is a command, not an edit.
    assert tool_call_display("bash", {"command": f"cat <<'EOF'\n{patch}\nEOF"}).kind == "command"
    assert tool_call_display("apply_patch", {"input": "not a patch"}).kind == "generic"


def test_claude_code_results_number_edits_by_the_file() -> None:
    hunks = [
        {
            "oldStart": 7,
            "oldLines": 2,
            "newStart": 8,
            "newLines": 2,
            "lines": [" a", "-b", "+c", "\\ No newline at end of file"],
        }
    ]
    edit = tool_call_display(
        "Edit", {"file_path": "x.ts", "old_string": "b", "new_string": "c"}, {"structuredPatch": hunks}
    )
    assert edit.numbered_from_file
    assert [(d.sign, d.old_line, d.new_line) for d in edit.diff] == [
        ("@", None, None),
        (" ", 7, 8),
        ("-", 8, None),
        ("+", None, 9),
    ]
    placed = tool_call_display(
        "Edit", {"file_path": "x", "old_string": "b\nc", "new_string": "B"}, {"originalFile": "a\nb\nc\n"}
    )
    assert placed.numbered_from_file and [(d.sign, d.old_line, d.new_line) for d in placed.diff] == [
        ("-", 2, None),
        ("-", 3, None),
        ("+", None, 2),
    ]
    missing = tool_call_display(
        "Edit", {"file_path": "x", "old_string": "q", "new_string": "B"}, {"originalFile": "a"}
    )
    assert not missing.numbered_from_file and missing.files[0].numbering == "lines of the replaced text"
    replaced = tool_call_display(
        "Write", {"file_path": "w.py", "content": "c\n"}, {"type": "update", "structuredPatch": hunks}
    )
    assert (
        replaced.kind == "write" and replaced.files[0].action == "update" and replaced.diff[1].old_line == 7
    )
    new = tool_call_display("Write", {"file_path": "w.py", "content": "a\nb\n"})
    assert [(d.sign, d.text, d.new_line) for d in new.diff] == [("+", "a", 1), ("+", "b", 2)]
    assert new.files[0].heading == "w.py"  # a write may replace a file: not called new


def test_results_written_as_json_strings_are_decoded() -> None:
    codex = '{"output":"line 1\\nline 2\\n","metadata":{"exit_code":1,"duration_seconds":0.5}}'
    assert readable_output(codex) == "line 1\nline 2\n[exit_code 1, duration_seconds 0.5]"
    assert readable_output('"quoted\\ntext"') == "quoted\ntext"
    for plain in (
        "plain text",
        "{not json}",
        "[1, 2]",
        "",
        '{"output": 3}x',
        '{"a": [1, 2]}',
        '{"output": 3}',
    ):
        assert readable_output(plain) == plain


def test_the_viewer_highlights_each_side_of_a_diff_as_one_text() -> None:
    """``/**`` and ``*/`` on lines of their own are a comment, not two Pygments error boxes."""
    old = "/**\n * Old.\n */\nconst a = 1;"
    new = "/**\n * New.\n */\nconst a = 2;"
    block = tool_call_block({"name": "edit", "arguments": {"path": "x.ts", "oldText": old, "newText": new}})
    (diff,) = [child for child in block.children if child.kind == "diff"]
    html = [str(row[3]) for row in diff.rows]
    assert "hl-err" not in "".join(html)
    assert all('class="hl-cm"' in line for line in html[:4]), html
    assert html[0].count("<span") == html[0].count("</span>")  # every row is balanced HTML
    patched = tool_call_block(
        {
            "name": "apply_patch",
            "arguments": {
                "input": "*** Begin Patch\n*** Add File: a.py\n+x = '<b>'\n"
                "*** Delete File: b.py\n*** End Patch"
            },
        }
    )
    assert [(c.kind, c.title, c.detail) for c in patched.children] == [
        ("diff", "a.py (new file)", "line numbers of the file"),
        ("diff", "b.py (deleted)", ""),
    ]
    assert "<b>" not in str(patched.children[0].rows[0][3]) and "&lt;b&gt;" in str(
        patched.children[0].rows[0][3]
    )
    assert patched.detail == "a.py +1 file"
