"""Pygments' regex lexers run with joined expressions (:mod:`omp_session.rendering.lexing`) against
Pygments' own loop: the same tokens, at the same positions, for every lexer the fast path takes, on
real files of this repository, on texts made to reach the lexers' odd corners, and on generated
ones (issue 30 item 3: the HTML export highlights thousands of ``read`` results)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer, RegexLexer
from pygments.lexers import get_all_lexers, get_lexer_by_name

from omp_session.rendering import lexing, markdown
from omp_session.rendering.lexing import fast_tokens, speed_up, takes

SOURCE = Path(__file__).resolve().parents[2] / "src" / "omp_session"

#: A text with a bit of most languages' syntax: strings with escapes, comments of both kinds,
#: markup, template and shell expansions, numbers, tabs, other scripts, CRLF and a line joined by
#: a backslash (where many lexers' rules disagree on what comes next).
MIXED = (
    'x = "a\\"b" # c\n/* d */ <e f="g">\'h\' `i` ${j} @k 12.5e3 0x1F\n\tfoo(bar[1]) {baz;}\n'
    "数 café ﬁ\r\n\\\nend <<EOF\nbody\nEOF\n'''unclosed\n"
)


def _plain_regex_lexer(alias: str) -> RegexLexer | None:
    lexer = get_lexer_by_name(alias, stripnl=False, ensurenl=False)
    return lexer if isinstance(lexer, RegexLexer) and takes(lexer) else None


def _reference(lexer: Lexer, text: str) -> list[tuple[int, object, str]]:
    return list(type(lexer).get_tokens_unprocessed(lexer, text))


ALL = sorted(aliases[0] for _name, aliases, _files, _mimes in get_all_lexers() if aliases)


@pytest.mark.parametrize("alias", ALL)
def test_every_plain_regex_lexer_gives_pygments_tokens(alias: str) -> None:
    lexer = _plain_regex_lexer(alias)
    if lexer is None:  # a lexer with its own loop is left as it is
        assert "get_tokens_unprocessed" not in vars(speed_up(get_lexer_by_name(alias)))
        return
    assert "get_tokens_unprocessed" in vars(speed_up(get_lexer_by_name(alias)))
    for text in (MIXED, "", "\x00\x7f\n"):
        assert list(fast_tokens(lexer, text)) == _reference(lexer, text)


@pytest.mark.parametrize(
    ("alias", "pattern"),
    [
        ("python", "**/*.py"),
        ("javascript", "rendering/static/*.js"),
        ("css", "rendering/static/*.css"),
        ("html", "rendering/templates/*.html"),
    ],
)
def test_real_files_give_pygments_tokens(alias: str, pattern: str) -> None:
    lexer = get_lexer_by_name(alias, stripnl=False, ensurenl=False)
    files = sorted(SOURCE.glob(pattern))
    assert files
    for path in files[:40]:
        text = path.read_text(encoding="utf-8")
        if isinstance(lexer, RegexLexer) and takes(lexer):
            assert list(fast_tokens(lexer, text)) == _reference(lexer, text), path
        sped = speed_up(get_lexer_by_name(alias, stripnl=False, ensurenl=False))
        formatter = HtmlFormatter(nowrap=True, classprefix="hl-")
        assert highlight(text, sped, formatter) == highlight(text, lexer, formatter), path


_CODE = st.lists(
    st.sampled_from(
        [*"ab_1 \n\t#'\"\\`$({[]})<>=*/.,;:!?@%&|~-+^", "é", "数", "\r", "EOF", "<<", '"""', "f'"]
    )
    | st.characters(codec="utf-8"),
    max_size=80,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(
        ["python", "bash", "javascript", "typescript", "rust", "go", "toml", "sql", "css", "html"]
    ),
    _CODE,
)
def test_generated_texts_give_pygments_tokens(alias: str, text: str) -> None:
    lexer = _plain_regex_lexer(alias)
    assert lexer is not None
    assert list(fast_tokens(lexer, text)) == _reference(lexer, text)


def test_the_hot_lexers_are_joined_and_a_back_reference_stays_alone() -> None:
    # The fast path is real for the languages the export highlights most: Python's root state
    # (about sixty rules) is a handful of steps, not one per rule.
    python = _plain_regex_lexer("python")
    assert python is not None
    steps = lexing._state(python, "root")
    assert len(steps) < len(python._tokens["root"]) // 4  # type: ignore[attr-defined]
    # Bash's here-document rule refers to its own group (``\2``): numbered groups would shift in a
    # joined expression, so that rule is tried alone, in its place among the others.
    bash = _plain_regex_lexer("bash")
    assert bash is not None
    alone = [rule for _match, rule_of, rule in lexing._state(bash, "root") if rule_of is None]
    patterns = [getattr(rule[0], "__self__", None) for rule in alone if rule is not None]
    assert any(isinstance(p, re.Pattern) and lexing._BACK_REFERENCE.search(p.pattern) for p in patterns)
    text = "cat <<-'END'\nline $x\nEND\necho done\n"
    assert list(fast_tokens(bash, text)) == _reference(bash, text)


def test_the_renderer_highlights_with_the_sped_up_lexers() -> None:
    code = 'def f(x):\n    """doc\n    more"""\n    return x  # done\n'
    lexer = markdown._lexer("python")
    assert lexer is not None and "get_tokens_unprocessed" in vars(lexer)
    reference = get_lexer_by_name("python", stripnl=False, ensurenl=False)
    assert str(markdown.highlight_code(code, "python")) == highlight(code, reference, markdown._FORMATTER)


def test_a_conditional_group_stays_alone() -> None:
    # Evoque's rules test an earlier group of their own (``(?(4)%)``): in a joined expression the
    # number would name another rule's group (an extra token ``b%}`` came out of these texts).
    evoque = _plain_regex_lexer("evoque")
    assert evoque is not None
    for text in ("$begin{%a}b%}", "${%a}b%}", "x $if{y} z $fi"):
        assert list(fast_tokens(evoque, text)) == _reference(evoque, text)


def test_rules_with_every_flag_are_joined_too() -> None:
    # PowerShell's rules are case-insensitive, multi-line and dot-all: a scoped group with no
    # flag to turn off is ``(?ims:...)`` (``(?ims-:...)`` is refused, which left every rule alone).
    shell = _plain_regex_lexer("powershell")
    assert shell is not None
    rules = shell._tokens["root"]  # type: ignore[attr-defined]
    assert len(lexing._state(shell, "root")) < len(rules) // 2
    text = 'function Get-X { param($a) ; Write-Host "a $a" } # done\n<# block #>\n'
    assert list(fast_tokens(shell, text)) == _reference(shell, text)
