"""Post-render clean-up of prompt templates (omp's ``formatPromptContent``, post-render phase).

omp renders its prompt templates (for example the branch and compaction summary wrappers that
:mod:`omp_session.model.llm` builds) and then normalises the text line by line. The rules are reproduced
here so that the text we hand to a model is identical to the text omp would hand to it, which keeps
provider prompt caches warm when a session moves between the two implementations.

The original runs on JavaScript strings, so "whitespace" below means the JavaScript definition (what
``String.prototype.trim`` and the regex class ``\\s`` accept), not Python's ``str.isspace``: the two
disagree on a handful of characters (U+FEFF is whitespace only in JavaScript; U+001C..U+001F and
U+0085 only in Python).

Internal module (used by :mod:`omp_session.model.llm`); not part of the public API.
"""

from __future__ import annotations

import re

__all__ = ["format_prompt_content"]

# JavaScript WhiteSpace + LineTerminator code points (ECMA-262), i.e. what trim() removes.
_JS_WS = (
    " \t\n\v\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_WS = f"[{re.escape(_JS_WS)}]"

# A whole line that is an opening tag such as `<summary>` or `<file path="x">` (lower-case names only,
# like the original). Self-closing forms with attributes also match; the original does the same.
_OPENING_TAG = re.compile(rf"<[a-z_-]+(?:{_WS}+[^>]*)?>")
_CLOSING_TAG = re.compile(r"</[a-z_-]+>")
_LIST_ITEM = re.compile(rf"(?:[-*]{_WS}|[0-9]+\.{_WS})")
# JavaScript's `.` does not match line terminators, so the table-row pattern excludes them too.
_TABLE_ROW = re.compile(r"\|[^\n\r\u2028\u2029]*\|")
_TABLE_SEPARATOR = re.compile(rf"\|(?:[-:|]|{_WS})+\|")
_CODE_FENCE = "```"


def _trim(text: str) -> str:
    return text.strip(_JS_WS)


def _compact_table_row(row: str) -> str:
    """``| a  |  b |`` → ``|a|b|``: only the padding inside cells goes."""
    return "|".join(_trim(cell) for cell in row.split("|"))


def _compact_table_separator(row: str) -> str:
    """``| :--- | ---: |`` → ``|:---|---:|``: every dash run becomes exactly three dashes."""
    cells = [_trim(cell) for cell in row.split("|") if _trim(cell)]
    normalized = []
    for cell in cells:
        left, right = cell.startswith(":"), cell.endswith(":")
        normalized.append((":" if left else "") + "---" + (":" if right else ""))
    return "|" + "|".join(normalized) + "|"


def _compact_table_line(line: str) -> str:
    """Apply the table rules to one (right-trimmed) line, keeping its indentation."""
    body = line.lstrip(_JS_WS)
    indent = line[: len(line) - len(body)]
    if _TABLE_SEPARATOR.fullmatch(body):
        return indent + _compact_table_separator(body)
    if _TABLE_ROW.fullmatch(body):
        return indent + _compact_table_row(body)
    return line


def _drop_blank(result: list[str], next_line: str) -> bool:
    """Whether a blank line (outside fences) is redundant given its neighbours.

    ``result`` holds the lines kept so far; ``next_line`` is the trimmed raw line that follows.
    Blank lines at the very start go too, because "previous line" is then empty.
    """
    previous = _trim(result[-1]) if result else ""
    return (
        _LIST_ITEM.match(next_line) is not None
        or _OPENING_TAG.fullmatch(previous) is not None
        or _CLOSING_TAG.fullmatch(next_line) is not None
        or previous == ""
    )


def _drop_trailing_blanks(result: list[str]) -> None:
    while result and _trim(result[-1]) == "":
        result.pop()


def format_prompt_content(text: str) -> str:
    """Normalise rendered prompt text the way omp's post-render formatter does.

    Every line loses its trailing whitespace. Outside ```` ``` ```` fences: runs of blank lines
    collapse to one; a blank line is dropped before a list item (``- ``, ``* ``, ``1. ``), after an
    opening tag line (``<tag …>``) and before a closing tag line (``</tag>``); markdown table rows
    lose their cell padding and separator rows are normalised to ``---``/``:---``/``---:``/``:---:``.
    Blank lines at the start and the end are removed. Fenced lines are kept verbatim (minus trailing
    whitespace).
    """
    lines = text.split("\n")
    result: list[str] = []
    in_fence = False
    for index, raw in enumerate(lines):
        line = raw.rstrip(_JS_WS)
        if line.lstrip(_JS_WS).startswith(_CODE_FENCE):
            in_fence = not in_fence
            result.append(line)
            continue
        if in_fence:
            result.append(line)
            continue
        line = _compact_table_line(line)
        trimmed = _trim(line)
        if trimmed == "":
            next_line = _trim(lines[index + 1]) if index + 1 < len(lines) else ""
            if _drop_blank(result, next_line):
                continue
        if _CLOSING_TAG.fullmatch(trimmed):
            # A blank run kept earlier (its first line) must not separate content from its end tag.
            _drop_trailing_blanks(result)
        result.append(line)
    _drop_trailing_blanks(result)
    return "\n".join(result)
