"""``show`` and the Markdown export draw every agent's edits as diffs (issue 30 item 2): imported
Claude Code ``Edit``/``MultiEdit``/``Write`` calls and a Codex ``apply_patch``, captured at 80 and
120 columns; Codex's JSON string results shown decoded."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.cells import cell_len

from omp_session.cli import main
from omp_session.export.markdown import export_markdown
from tests.foreign_edits import import_foreign_edits


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return import_foreign_edits(tmp_path_factory.mktemp("foreign"))


def _show(path: Path, columns: int) -> list[str]:
    result = CliRunner().invoke(
        main, ["show", str(path), "--no-pager"], env={"COLUMNS": str(columns), "NO_COLOR": "1"}
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.split("\n")
    # The second line is the session's path, printed whole so it can be copied.
    assert all(cell_len(line) <= columns for line in lines[:1] + lines[2:]), result.stdout
    return lines


@pytest.mark.parametrize("columns", [80, 120])
def test_a_codex_patch_is_a_diff_per_file(imported: dict[str, Path], columns: int) -> None:
    lines = _show(imported["codex"], columns)
    text = "\n".join(lines)
    assert "→ apply_patch src/server.go +3 files" in text
    start = lines.index("  src/server.go")
    assert lines[start : start + 6] == [
        "  src/server.go",
        "  @@ func main() {",
        '        log.Println("starting")',
        "  -     port := 8080",
        "  +     port := 9090",
        "        serve(port)",
    ]
    added = lines.index("  docs/PORT.md (new file)")
    assert lines[added + 1 : added + 4] == ["  1 + # Port", "  2 + ", "  3 + The server listens on 9090."]
    assert "  old/notes.txt (deleted)" in lines and "  src/util.go → src/helpers.go" in lines
    assert "*** Begin Patch" not in text
    # The result, a JSON string in the file, is shown decoded: real line breaks, no quotes.
    result = lines.index("  ⎿ result")
    assert lines[result + 1 : result + 4] == [
        "    Success. Updated the following files:",
        "    M src/server.go",
        "    [exit_code 0, duration_seconds 0.1]",
    ]
    assert "\\n" not in text


@pytest.mark.parametrize("columns", [80, 120])
def test_claude_code_edits_are_diffs_numbered_by_the_file(imported: dict[str, Path], columns: int) -> None:
    lines = _show(imported["claude"], columns)
    edit = lines.index("→ Edit /home/alice/work/app/src/router.ts")
    # The result's structuredPatch gives the file's own line numbers.
    assert lines[edit + 1 : edit + 7] == [
        "  @@ -5,2 +5,4 @@",
        "  5    */",
        "  6 - export const routes = [];",
        "  6 + export const routes = [",
        "  7 +   '/home',",
        "  8 + ];",
    ]
    multi = lines.index("→ MultiEdit /home/alice/work/app/src/app.py")
    assert lines[multi + 1 : multi + 4] == ["  edit 1 of 2", "  1 - DEBUG = True", "  1 + DEBUG = False"]
    write = lines.index("→ Write /home/alice/work/app/src/new_module.py")
    assert lines[write + 1 : write + 4] == ['  1 + """A new module."""', "  2 + ", "  3 + VALUE = 1"]
    # No structuredPatch, but the kept originalFile places the old text at line 3.
    second = [i for i, line in enumerate(lines) if line == "→ Edit /home/alice/work/app/src/router.ts"][1]
    assert lines[second + 1 : second + 5] == [
        "  3   /**",
        "  4 -  * Routes.",
        "  4 +  * The routes of the app.",
        "  5    */",
    ]


def test_markdown_has_a_diff_block_per_patched_file(imported: dict[str, Path]) -> None:
    text = export_markdown(imported["codex"])
    assert "`docs/PORT.md (new file)`\n\n```diff\n+# Port\n+\n+The server listens on 9090.\n```" in text
    assert "`old/notes.txt (deleted)`" in text and "`src/util.go → src/helpers.go`" in text
    assert "```diff\n@@ func main() {\n \tlog.Println" in text
    assert "Success. Updated the following files:\nM src/server.go\n" in text
    claude = export_markdown(imported["claude"])
    assert "```diff\n@@ -5,2 +5,4 @@\n  */\n-export const routes = [];\n+export const routes = [\n" in claude
    assert '```python\n"""A new module."""\n\nVALUE = 1\n```' in claude  # a new file in its language
