"""Tool calls as a person reads them (issue 13 #1): an edit as a diff, a write as the file, a command
as a command, every other argument with its real line breaks.

Part of the display model: ``show``, the Markdown export, the viewer and the HTML export all render
a :class:`ToolCallDisplay`, each in its own medium. Recognised by the shape of the arguments, not only
the tool's name, so omp's, pi's and Claude Code's spellings all work:

* **edit**: ``oldText``/``newText`` (omp, pi), ``old_string``/``new_string`` (Claude Code),
  ``edits: [{…}, …]`` (multi-edit), a ready ``previewDiff``/``diff``, or a Codex ``apply_patch``
  (its V4A patch text in ``input``, ``patch`` or a command: one :class:`FileChange` per file it
  adds, updates, deletes or moves). When the tool's result carries a diff (``details.diff``: pi's
  numbered form ``"+ 12 text"`` or omp's unified hunks; ``details.structuredPatch``: Claude Code's
  hunks), that one is shown, with the file's line numbers; otherwise the diff is computed from the
  texts, numbered from where the old text sits in ``details.originalFile`` when Claude Code kept
  the file, else from the start of the replaced text (the file position is not known). A V4A
  update names no line numbers, so none are shown.
* **write**: ``content`` with a ``path``/``file_path``: the file as added lines numbered from 1, in
  the language of its extension (or the result's ``structuredPatch`` when it replaced a file).
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
    "FileChange",
    "ToolCallDisplay",
    "diff_text",
    "is_one_line_call",
    "language_for_path",
    "parse_patch",
    "readable_output",
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
        "input",
        "patch",
        "cmd",
    }
)
#: The keys a Codex ``apply_patch`` call holds its V4A patch in (a string, or a command's words).
_PATCH_KEYS = ("input", "patch", "command", "cmd")
_PATCH_BEGIN = "*** Begin Patch"
_PATCH_END = "*** End Patch"
_PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.*)$")
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
class FileChange:
    """What an edit or a write did to one file: ``action`` is ``update``, ``add`` (a new file),
    ``write`` (the whole file written: new or replaced, the call does not say) or ``delete``;
    ``moved_to`` names the new path of a renamed file."""

    path: str | None
    action: str
    lines: list[DiffLine]
    #: The line numbers are the file's (from the tool's result, or a whole written file), not
    #: counted from the start of the replaced text; ``False`` too when there are none (V4A).
    numbered_from_file: bool = False
    moved_to: str | None = None

    @property
    def language(self) -> str | None:
        return language_for_path(self.moved_to or self.path)

    @property
    def named_apart(self) -> bool:
        """The change says more than its path does on the call's line (a new, deleted or moved
        file), so views name it above its lines even when it is the only one."""
        return self.action in ("add", "delete") or self.moved_to is not None

    @property
    def heading(self) -> str:
        """The file as every view names it: ``a.py``, ``a.py (new file)``, ``a.py (deleted)``,
        ``a.py → b.py``."""
        name = self.path or "(no path)"
        if self.moved_to:
            return f"{name} → {self.moved_to}"
        return name + {"add": " (new file)", "delete": " (deleted)"}.get(self.action, "")

    @property
    def numbering(self) -> str:
        """What the line numbers count, in words (the viewer's caption)."""
        if not self.lines:
            return ""
        if self.numbered_from_file:
            return "line numbers of the file"
        if any(line.old_line is not None or line.new_line is not None for line in self.lines):
            return "lines of the replaced text"
        return "no line numbers in the patch"


@dataclass
class ToolCallDisplay:
    """How to show one tool call. ``kind``: ``edit``, ``write``, ``command`` or ``generic``."""

    kind: str
    path: str | None = None
    #: Language of ``code`` or of the edited file (from the extension), e.g. ``python``.
    language: str | None = None
    #: The files an edit or a write changed, each with its diff (one for most calls).
    files: list[FileChange] = field(default_factory=list)
    #: The written file, or the command.
    code: str | None = None
    #: The remaining arguments as ``(name, text)``: strings as they are, other values as JSON.
    arguments: list[tuple[str, str]] = field(default_factory=list)
    #: The argument names the readable form (diff, file, command, multi-line text) shows.
    shown: frozenset[str] = frozenset()

    @property
    def multiline(self) -> bool:
        """True when an argument needs more than one line (else a one-line JSON form reads fine)."""
        return any("\n" in text for _name, text in self.arguments)

    @property
    def where(self) -> str:
        """The files an edit or a write changed, as the line naming the call shows them:
        ``a.py``, ``a.py +2 files``; ``""`` for other calls."""
        named = [change.path for change in self.files if change.path]
        if not named:
            return ""
        more = len(named) - 1
        return named[0] + (f" +{more} file{'s' if more > 1 else ''}" if more else "")

    @property
    def diff(self) -> list[DiffLine]:
        """The lines of every file's diff, in order (a one-file call's diff)."""
        return [line for change in self.files for line in change.lines]

    @property
    def numbered_from_file(self) -> bool:
        """Every file's line numbers are the file's own."""
        return bool(self.files) and all(change.numbered_from_file for change in self.files)


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


def _computed_diff(pairs: Sequence[tuple[str, str]], first_line: int = 1) -> list[DiffLine]:
    """The diff of each ``(old, new)`` pair; a single pair numbered from ``first_line``."""
    lines: list[DiffLine] = []
    for number, (old, new) in enumerate(pairs, start=1):
        if len(pairs) > 1:
            lines.append(DiffLine("@", f"edit {number} of {len(pairs)}"))
        old_line = new_line = first_line if len(pairs) == 1 else 1
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


def _line_of(original: Any, old: str) -> int | None:
    """The file line ``old`` starts on in ``original`` (Claude Code's ``originalFile``), when the
    text is found there."""
    if not isinstance(original, str) or not old:
        return None
    found = original.find(old)
    return original.count("\n", 0, found) + 1 if found >= 0 else None


def _file_lines(content: str) -> list[DiffLine]:
    """A whole file as added lines numbered from 1 (its final line break ends the last line)."""
    body = content[:-1] if content.endswith("\n") else content
    return [DiffLine("+", text, None, number) for number, text in enumerate(body.split("\n"), 1)]


def parse_patch(text: str) -> list[FileChange]:
    """A Codex V4A patch (``*** Begin Patch`` … ``*** End Patch``) as one change per file: an
    ``Add File`` is the new file numbered from 1, an ``Update File`` its hunks (``@@`` with an
    optional context hint; V4A names no line numbers), a ``Delete File`` no lines, a ``Move to``
    the new name. Lines outside any file section are ignored; a line of a hunk with no sign is
    shown as context (models write such lines, and ``apply_patch`` accepts some)."""
    changes: list[FileChange] = []
    current: FileChange | None = None
    for raw in text.replace("\r\n", "\n").split("\n"):
        if raw.startswith(_PATCH_END):
            break
        header = _PATCH_FILE.match(raw)
        if header:
            action = header.group(1).lower()
            current = FileChange(header.group(2).strip(), action, [], numbered_from_file=action == "add")
            changes.append(current)
        elif current is None or raw.startswith(_PATCH_BEGIN):
            continue
        elif raw.startswith("*** Move to: "):
            current.moved_to = raw.removeprefix("*** Move to: ").strip()
        elif raw.startswith("*** End of File"):
            current.lines.append(DiffLine("@", "end of file"))
        elif raw.startswith("@@"):
            current.lines.append(DiffLine("@", raw.rstrip()))
        elif current.action == "add":
            number = len(current.lines) + 1
            current.lines.append(DiffLine("+", raw[1:] if raw.startswith("+") else raw, None, number))
        elif raw.startswith(("+", "-")):
            current.lines.append(DiffLine(raw[0], raw[1:]))
        elif raw or current.lines:  # a blank line inside a hunk is an empty context line
            current.lines.append(DiffLine(" ", raw[1:] if raw.startswith(" ") else raw))
    for change in changes:  # a blank line before the next header or the end is not context
        while change.lines and change.lines[-1] == DiffLine(" ", ""):
            change.lines.pop()
    return changes


def _patch_of(arguments: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(key, V4A patch text)`` of a Codex ``apply_patch`` call: the ``input`` of the custom tool,
    a ``patch`` argument, or a shell command that runs ``apply_patch`` with the patch."""
    for key in _PATCH_KEYS:
        value = arguments.get(key)
        words = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        texts = [word for word in words if isinstance(word, str)]
        if key in ("command", "cmd") and not any("apply_patch" in word for word in texts):
            continue
        for text in texts:
            start = text.find(_PATCH_BEGIN)
            if start >= 0:
                end = text.find(_PATCH_END, start)
                return key, text[start : end + len(_PATCH_END)] if end >= 0 else text[start:]
    return None


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


def _structured_patch(hunks: Any) -> list[DiffLine]:
    """Claude Code's ``structuredPatch`` (``[{oldStart, oldLines, newStart, newLines, lines}]``,
    each line signed ``" "``, ``"-"`` or ``"+"``) as numbered diff lines."""
    lines: list[DiffLine] = []
    for hunk in hunks if isinstance(hunks, list) else ():
        if not isinstance(hunk, Mapping):
            continue
        body, old, new = hunk.get("lines"), hunk.get("oldStart"), hunk.get("newStart")
        if not (isinstance(body, list) and isinstance(old, int) and isinstance(new, int)):
            continue
        counts = f"-{old},{hunk.get('oldLines', '?')} +{new},{hunk.get('newLines', '?')}"
        lines.append(DiffLine("@", f"@@ {counts} @@"))
        for text in body:
            if not isinstance(text, str) or text.startswith("\\"):  # "\ No newline at end of file"
                continue
            sign, rest = (text[0], text[1:]) if text[:1] in ("+", "-", " ") else (" ", text)
            lines.append(DiffLine(sign, rest, old if sign != "+" else None, new if sign != "-" else None))
            old, new = old + (sign != "+"), new + (sign != "-")
    return lines


def _result_diff(details: Any) -> list[DiffLine]:
    """The diff a tool's result reports, with the file's line numbers: omp's and pi's
    ``details.diff``, Claude Code's ``details.structuredPatch``."""
    if not isinstance(details, Mapping):
        return []
    diff = details.get("diff")
    if isinstance(diff, str) and diff.strip():
        return parse_diff(diff)
    return _structured_patch(details.get("structuredPatch"))


def _edit_files(
    path: str | None, pairs: list[tuple[str, str]], preview: str | None, details: Any
) -> list[FileChange]:
    from_result = _result_diff(details)
    if from_result:
        return [FileChange(path, "update", from_result, numbered_from_file=True)]
    if not pairs:
        return [FileChange(path, "update", parse_diff(preview or ""), numbered_from_file=True)]
    original = None
    if isinstance(details, Mapping):
        original = details.get("originalFile", details.get("originalFileContents"))
    first = _line_of(original, pairs[0][0]) if len(pairs) == 1 else None
    return [FileChange(path, "update", _computed_diff(pairs, first or 1), numbered_from_file=bool(first))]


def tool_call_display(name: str, arguments: Any, result_details: Any = None) -> ToolCallDisplay:
    """How to show a call of tool ``name`` with ``arguments``; ``result_details`` is the ``details``
    of its result when known (for the file's own diff and line numbers)."""
    if not isinstance(arguments, Mapping):
        listed = [] if arguments in (None, "") else [("arguments", _text(arguments))]
        return ToolCallDisplay("generic", arguments=listed)
    path = _path_of(arguments)
    if arguments.keys().isdisjoint(_SHAPING_KEYS):  # most calls (read, grep, …): checked at once
        return _generic(path, arguments)
    patch = _patch_of(arguments)
    if patch is not None:
        key, text = patch
        files = parse_patch(text)
        if files:
            rest = [(k, _text(v)) for k, v in arguments.items() if k != key]
            first = files[0]
            shown = frozenset({key})
            return ToolCallDisplay("edit", first.path, first.language, files, None, rest, shown)
    pairs = _edit_pairs(arguments)
    preview = next((arguments[k] for k in ("previewDiff", "diff") if isinstance(arguments.get(k), str)), None)
    if pairs or preview:
        files = _edit_files(path, pairs, preview, result_details)
        used = {*_PATH_KEYS, "edits", "previewDiff", "diff", *(k for pair in _EDIT_PAIRS for k in pair)}
        rest = [(k, _text(v)) for k, v in arguments.items() if k not in used]
        bulky = frozenset(arguments) & (used - set(_PATH_KEYS))
        return ToolCallDisplay("edit", path, language_for_path(path), files, None, rest, bulky)
    content = arguments.get("content")
    if (
        isinstance(content, str)
        and path is not None
        and (name.lower() in _WRITE_TOOLS or len(arguments) == 2)
    ):
        rest = [(k, _text(v)) for k, v in arguments.items() if k not in (*_PATH_KEYS, "content")]
        language = language_for_path(path)
        replaced = _result_diff(result_details)
        change = (
            FileChange(path, "update", replaced, numbered_from_file=True)
            if replaced
            else FileChange(path, "write", _file_lines(content), numbered_from_file=True)
        )
        return ToolCallDisplay("write", path, language, [change], content, rest, shown=frozenset({"content"}))
    for key, language in (("command", "bash"), ("code", "python")):
        if isinstance(arguments.get(key), str):
            rest = [(k, _text(v)) for k, v in arguments.items() if k != key]
            code = arguments[key]
            return ToolCallDisplay(
                "command", path, language, code=code, arguments=rest, shown=frozenset({key})
            )
    return _generic(path, arguments)


def readable_output(text: str) -> str:
    """A tool's output as a person reads it: a result written as a JSON string (Codex's
    ``{"output": "…", "metadata": {"exit_code": 0}}``, a quoted string) decoded, so its line
    breaks are real; the output first, then the other fields on one line. Other text, other JSON
    included (a ``read`` of a ``.json`` file), as it is.
    Only what is shown changes: the stored result is never touched."""
    stripped = text.strip()
    if len(stripped) < 2 or stripped[0] not in '{"' or stripped[-1] not in '}"':
        return text
    try:
        value = json.loads(stripped)
    except ValueError:
        return text
    if isinstance(value, str):
        return value
    output = value.get("output") if isinstance(value, dict) else None
    if not isinstance(output, str):  # other JSON (a read of a .json file) is shown as written
        return text
    facts: list[str] = []
    for key, fact in value.items():
        if key == "output":
            continue
        members = fact.items() if isinstance(fact, dict) else [(key, fact)]
        facts.extend(f"{name} {_one_line_value(member)}" for name, member in members)
    return output.rstrip("\n") + (f"\n[{', '.join(facts)}]" if facts else "")


def _one_line_value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


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
