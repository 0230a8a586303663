"""The README's Python example runs as written and prints what the README says it prints."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_example_runs_and_prints_the_documented_output() -> None:
    text = README.read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", text, re.S)
    assert code is not None
    source = code.group(1)
    expected = re.search(r"^\s*# (\[.*?\}) ", source, re.M)
    assert expected is not None
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, str(README), "exec"), {})
    assert out.getvalue().strip() == expected.group(1)
