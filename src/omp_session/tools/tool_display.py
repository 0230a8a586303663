"""Tool calls as a person reads them (issue 13 #1): an edit as a diff, a write as the file, a command
as a command, every other argument with its real line breaks.

Part of the display model: ``show``, the Markdown export, the viewer and the HTML export all render
a :class:`ToolCallDisplay`, each in its own medium. Recognised by the shape of the arguments, not only
the tool's name, so omp's, pi's and Claude Code's spellings all work:

* **edit**: ``oldText``/``newText`` (omp, pi), ``old_string``/``new_string`` (Claude Code),
  ``edits: [{…}, …]`` (multi-edit), or a ready ``previewDiff``/``diff``. When the tool's result
  carries a diff (``details.diff``: pi's numbered form ``"+ 12 text"`` or omp's unified hunks), that
  one is shown, with the file's line numbers; otherwise the diff is computed from the texts and
  numbered from the start of the replaced text (the file position is not known).
* **write**: ``content`` with a ``path``/``file_path``: the file, in the language of its extension.
* **command**: ``command`` (bash) or ``code`` (python): the command, then the other arguments.
* anything else: the arguments; strings keep their line breaks.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DiffLine",
    "ToolCallDisplay",
    "diff_text",
    "is_one_line_call",
    "language_for_path",
    "tool_call_display",
]

_EDIT_PAIRS = (("oldText", "newText"), ("old_string", "new_string"), ("old_str", "new_str"))
_PATH_KEYS = ("path", "file_path", "filePath", "filename")
_WRITE_TOOLS = frozenset({"write", "write_file", "create_file", "create"})
#: The argument names that make a call an edit, a write or a command: without any, it is generic.
_SHAPING_KEYS = frozenset(
    {
        *(key for pair in _EDIT_PAIRS for key in pair),
        "edits",
        "previewDiff",
        "diff",
        "content",
        "command",
        "code",
    }
)
#: pi's numbered diff line: sign, right-aligned line number, one space, the text.
_NUMBERED = re.compile(r"^([+\- ])\s*(\d+) (.*)$", re.DOTALL)
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")

#: File extension → language name (a Markdown fence info string and a Pygments alias).
_LANGUAGES = {
    "py": "python", "pyi": "python", "ts": "typescript", "tsx": "tsx", "js": "javascript",
    "jsx": "jsx", "mjs": "javascript", "cjs": "javascript", "json": "json", "jsonl": "json",
    "md": "markdown", "sh": "bash", "bash": "bash", "zsh": "bash", "rs": "rust", "go": "go",
    "java": "java", "kt": "kotlin", "c": "c", "h": "c", "cc": "cpp", "cpp": "cpp", "hpp": "cpp",
    "cs": "csharp", "rb": "ruby", "php": "php", "swift": "swift", "css": "css", "scss": "scss",
    "html": "html", "xml": "xml", "yml": "yaml", "yaml": "yaml", "toml": "toml", "sql": "sql",
    "lua": "lua", "zig": "zig", "ini": "ini", "dockerfile": "docker", "makefile": "make",
}  # fmt: skip


@dataclass
class DiffLine:
    """One line of a diff: ``sign`` is ``+``, ``-``, `` `` (context) or ``@`` (a hunk start)."""

    sign: str
    text: str
    old_line: int | None = None
    new_line: int | None = None


@dataclass
class ToolCallDisplay:
    """How to show one tool call. ``kind``: ``edit``, ``write``, ``command`` or ``generic``."""

    kind: str
    path: str | None = None
    #: Language of ``code`` or of the edited file (from the extension), e.g. ``python``.
    language: str | None = None
    diff: list[DiffLine] = field(default_factory=list)
    #: The written file, or the command.
    code: str | None = None
    #: The remaining arguments as ``(name, text)``: strings as they are, other values as JSON.
    arguments: list[tuple[str, str]] = field(default_factory=list)
    #: The diff's line numbers are the file's (from the tool's result), not relative ones.
    numbered_from_file: bool = False
    #: The argument names the readable form (diff, file, command, multi-line text) shows.
    shown: frozenset[str] = frozenset()

    @property
    def multiline(self) -> bool:
        """True when an argument needs more than one line (else a one-line JSON form reads fine)."""
        return any("\n" in text for _name, text in self.arguments)


def language_for_path(path: str | None) -> str | None:
    """The language of a file from its extension (or its name: ``Makefile``, ``Dockerfile``)."""
    if not path:
        return None
    name = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return _LANGUAGES.get(name.rsplit(".", 1)[-1] if "." in name else name)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _path_of(arguments: Mapping[str, Any]) -> str | None:
    for key in _PATH_KEYS:
        value = arguments.get(key)
        if isinstance(value, str):
            return value
    return None


def _edit_pairs(arguments: Mapping[str, Any]) -> list[tuple[str, str]]:
    sources: list[Any] = [arguments]
    edits = arguments.get("edits")
    if isinstance(edits, list):
        sources = [edit for edit in edits if isinstance(edit, Mapping)]
    pairs = []
    for source in sources:
        for old_key, new_key in _EDIT_PAIRS:
            old, new = source.get(old_key), source.get(new_key)
            if isinstance(old, str) and isinstance(new, str):
                pairs.append((old, new))
                break
    return pairs


def _computed_diff(pairs: Sequence[tuple[str, str]]) -> list[DiffLine]:
    lines: list[DiffLine] = []
    for number, (old, new) in enumerate(pairs, start=1):
        if len(pairs) > 1:
            lines.append(DiffLine("@", f"edit {number} of {len(pairs)}"))
        old_line = new_line = 1
        old_lines, new_lines = old.split("\n"), new.split("\n")
        matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                for text in old_lines[i1:i2]:
                    lines.append(DiffLine(" ", text, old_line, new_line))
                    old_line, new_line = old_line + 1, new_line + 1
                continue
            for text in old_lines[i1:i2]:
                lines.append(DiffLine("-", text, old_line, None))
                old_line += 1
            for text in new_lines[j1:j2]:
                lines.append(DiffLine("+", text, None, new_line))
                new_line += 1
    return lines


def _unified(lines: Sequence[str]) -> Iterator[DiffLine]:
    old = new = 0
    for line in lines:
        hunk = _HUNK.match(line)
        if hunk:
            old, new = int(hunk.group(1)), int(hunk.group(2))
            yield DiffLine("@", line)
        elif line.startswith(("---", "+++")) and old == 0:
            continue  # file headers
        elif line.startswith("-"):
            yield DiffLine("-", line[1:], old, None)
            old += 1
        elif line.startswith("+"):
            yield DiffLine("+", line[1:], None, new)
            new += 1
        else:
            yield DiffLine(" ", line[1:] if line.startswith(" ") else line, old, new)
            old, new = old + 1, new + 1


def parse_diff(text: str) -> list[DiffLine]:
    """A tool's own diff: omp's unified hunks, or pi's numbered lines (``"- 12 old"``, ``"+ 12 new"``,
    ``"  13 same"``, ``"     ..."`` for a gap)."""
    raw = text.rstrip("\n").split("\n")
    if any(_HUNK.match(line) for line in raw):
        return list(_unified(raw))
    lines = []
    for line in raw:
        numbered = _NUMBERED.match(line)
        if numbered is None:
            lines.append(DiffLine("@", line.strip() or "…"))
            continue
        sign, number, body = numbered.group(1), int(numbered.group(2)), numbered.group(3)
        lines.append(DiffLine(sign, body, number if sign != "+" else None, number if sign != "-" else None))
    return lines


def _result_diff(details: Any) -> list[DiffLine]:
    diff = details.get("diff") if isinstance(details, Mapping) else None
    return parse_diff(diff) if isinstance(diff, str) and diff.strip() else []


def tool_call_display(name: str, arguments: Any, result_details: Any = None) -> ToolCallDisplay:
    """How to show a call of tool ``name`` with ``arguments``; ``result_details`` is the ``details``
    of its result when known (for the file's own diff and line numbers)."""
    if not isinstance(arguments, Mapping):
        listed = [] if arguments in (None, "") else [("arguments", _text(arguments))]
        return ToolCallDisplay("generic", arguments=listed)
    path = _path_of(arguments)
    if arguments.keys().isdisjoint(_SHAPING_KEYS):  # most calls (read, grep, …): checked at once
        return _generic(path, arguments)
    pairs = _edit_pairs(arguments)
    preview = next((arguments[k] for k in ("previewDiff", "diff") if isinstance(arguments.get(k), str)), None)
    if pairs or preview:
        from_result = _result_diff(result_details)
        diff = from_result or (_computed_diff(pairs) if pairs else parse_diff(preview or ""))
        used = {*_PATH_KEYS, "edits", "previewDiff", "diff", *(k for pair in _EDIT_PAIRS for k in pair)}
        rest = [(k, _text(v)) for k, v in arguments.items() if k not in used]
        numbered = bool(from_result) or (not pairs and bool(preview))
        bulky = frozenset(arguments) & (used - set(_PATH_KEYS))
        return ToolCallDisplay("edit", path, language_for_path(path), diff, None, rest, numbered, bulky)
    content = arguments.get("content")
    if (
        isinstance(content, str)
        and path is not None
        and (name.lower() in _WRITE_TOOLS or len(arguments) == 2)
    ):
        rest = [(k, _text(v)) for k, v in arguments.items() if k not in (*_PATH_KEYS, "content")]
        language = language_for_path(path)
        return ToolCallDisplay(
            "write", path, language, code=content, arguments=rest, shown=frozenset({"content"})
        )
    for key, language in (("command", "bash"), ("code", "python")):
        if isinstance(arguments.get(key), str):
            rest = [(k, _text(v)) for k, v in arguments.items() if k != key]
            code = arguments[key]
            return ToolCallDisplay(
                "command", path, language, code=code, arguments=rest, shown=frozenset({key})
            )
    return _generic(path, arguments)


def is_one_line_call(arguments: Any) -> bool:
    """True when :func:`tool_call_display` would give a generic call whose every argument is one
    line (which ``show`` prints as one JSON line), known without building the display: most calls
    (read, grep, …) of a long session. ``False`` may still be such a call."""
    # ``dict`` first: the ABC check alone costs more than the rest for the usual small call.
    if not isinstance(arguments, (dict, Mapping)) or not arguments.keys().isdisjoint(_SHAPING_KEYS):
        return False
    for value in arguments.values():
        if isinstance(value, str):
            if "\n" in value:
                return False
        elif not (value is None or isinstance(value, (bool, int, float))):  # JSON of one line
            return False
    return True


def _generic(path: str | None, arguments: Mapping[str, Any]) -> ToolCallDisplay:
    texts = [(k, _text(v)) for k, v in arguments.items()]
    multiline = frozenset(k for k, v in arguments.items() if isinstance(v, str) and "\n" in v)
    return ToolCallDisplay("generic", path, arguments=texts, shown=multiline)


def diff_text(lines: Sequence[DiffLine]) -> str:
    """The diff as text for a ```` ```diff ```` block: ``+``/``-``/`` `` then the line; hunks as ``@@``."""
    return "\n".join(_diff_line_text(line) for line in lines)


def _diff_line_text(line: DiffLine) -> str:
    if line.sign != "@":
        return line.sign + line.text
    return line.text if line.text.startswith("@@") else f"@@ {line.text} @@"
