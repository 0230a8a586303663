"""Pygments' regex lexers, run with one regular expression per state instead of one per rule.

A :class:`pygments.lexer.RegexLexer` tries the rules of its current state one by one at each
position of the text, the first rule whose expression matches there wins. In Python that is a
call per rule and position (about fifteen for every character of a Python file), and highlighting
the ``read`` results and commands was a fifth of the HTML export of a big session (issue 30 item
3). Here each run of a state's rules is joined into one alternation, ``(r1)|(r2)|…`` (each
alternative with its own ``i``/``m``/``s`` flags), which the ``re`` engine tries in the same order
at the same position, so its first matching alternative is the rule Pygments would pick, found in
one call; the rule's own expression is matched again only when its action needs its groups
(``bygroups``, callbacks). Everything else (actions, state changes, the error token, the reset at
a line break) is Pygments' loop as it is.

A rule whose expression cannot be an alternative without changing its meaning (back-references,
whose numbers would shift; verbose expressions, where a comment would swallow the joint; other
non-scoped flags than its neighbours'; a join the ``re`` module refuses) is tried alone, in its
place between the joined runs before and after it, as Pygments tries it.
A property test holds :func:`fast_tokens` to ``get_tokens_unprocessed`` on real and generated
texts, for every lexer this module speeds up.

Internal module (shared by the viewer and the export); not part of the public API.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from pygments.lexer import Lexer, RegexLexer
from pygments.token import Error, Whitespace, _TokenType

__all__ = ["fast_tokens", "speed_up", "takes"]

Token = tuple[int, Any, str]
#: A rule of a processed Pygments state: the bound ``match`` of its expression, action, new state.
Rule = tuple[Callable[[str, int], "re.Match[str] | None"], Any, Any]

#: Back-references (``\\1``, ``(?P=name)``) and conditional groups (``(?(4)…)``): the numbers or
#: names they refer to would not survive the join.
_BACK_REFERENCE = re.compile(r"\\[1-9]|\(\?P=|\(\?\(")
#: An expression's leading global flags (``(?i)``): its pattern's flags hold them, and in a
#: joined expression they would no longer be at the start (an error since Python 3.11).
_LEADING_FLAGS = re.compile(r"\A\(\?[aiLmsux]+\)")
#: The flags an alternative can set for itself in a scoped group, ``(?i-ms:…)``.
_SCOPED = {re.IGNORECASE: "i", re.MULTILINE: "m", re.DOTALL: "s"}
_MATCH_FLAGS = re.IGNORECASE | re.MULTILINE | re.DOTALL


def _alternative(pattern: re.Pattern[str]) -> str | None:
    """``pattern`` as a group of a joined expression, with its own flags; ``None`` when it
    cannot be one."""
    if pattern.flags & re.VERBOSE or _BACK_REFERENCE.search(pattern.pattern):
        return None
    on = "".join(letter for flag, letter in _SCOPED.items() if pattern.flags & flag)
    off = "".join(letter for flag, letter in _SCOPED.items() if not pattern.flags & flag)
    scope = f"{on}-{off}" if off else on  # ``(?ims-:…)`` is refused: no flag to turn off
    return f"((?{scope}:{_LEADING_FLAGS.sub('', pattern.pattern)}))"


#: One step of a state: the ``match`` of a joined expression with the rule of each of its
#: wrapping groups, or of one rule alone (``None``) with that rule.
Step = tuple[Callable[[str, int], "re.Match[str] | None"], dict[int, Rule] | None, Rule | None]


def _join(rules: list[Rule]) -> Step | None:
    """One step trying ``rules`` (in order) with one expression, or ``None`` if the ``re``
    module refuses the join or it is not what it should be."""
    patterns: list[re.Pattern[str]] = [rule[0].__self__ for rule in rules]  # type: ignore[attr-defined]
    try:
        joined = re.compile(
            "|".join(_alternative(p) or "" for p in patterns), patterns[0].flags & ~_MATCH_FLAGS
        )
    except (re.error, RecursionError, OverflowError):
        return None
    if joined.groups != sum(p.groups + 1 for p in patterns):
        return None
    rule_of: dict[int, Rule] = {}
    group = 1
    for rule, pattern in zip(rules, patterns, strict=True):
        rule_of[group] = rule
        group += pattern.groups + 1
    return joined.match, rule_of, None


def _steps(rules: Sequence[Rule]) -> list[Step]:
    """A state's rules as steps: each run of rules that can be joined (same non-scoped flags,
    each one a valid alternative) as one expression, any other rule alone, in the rules' order,
    so the first step that matches has the first rule that matches."""
    steps: list[Step] = []
    run: list[Rule] = []

    def flush() -> None:
        joined = _join(run) if len(run) > 1 else None
        steps.extend([joined] if joined is not None else [(rule[0], None, rule) for rule in run])
        run.clear()

    for rule in rules:
        pattern = getattr(rule[0], "__self__", None)
        if (
            not isinstance(pattern, re.Pattern)
            or not isinstance(pattern.pattern, str)
            or _alternative(pattern) is None
        ):
            flush()
            steps.append((rule[0], None, rule))
            continue
        if run and (run[0][0].__self__.flags & ~_MATCH_FLAGS) != (pattern.flags & ~_MATCH_FLAGS):  # type: ignore[attr-defined]
            flush()
        run.append(rule)
    flush()
    return steps


#: The steps of each lexer class's states, by state name (a class's states never change once built).
_STEPS: dict[type, dict[str, list[Step]]] = {}


def _state(lexer: RegexLexer, name: str) -> list[Step]:
    states = _STEPS.setdefault(type(lexer), {})
    steps = states.get(name)
    if steps is None:
        processed: dict[str, list[Rule]] = lexer._tokens  # type: ignore[attr-defined]  # Pygments' own
        steps = states[name] = _steps(processed[name])
    return steps


def fast_tokens(lexer: RegexLexer, text: str, stack: Iterable[str] = ("root",)) -> Iterator[Token]:
    """What ``lexer.get_tokens_unprocessed(text, stack)`` yields (``lexer`` a plain
    :class:`~pygments.lexer.RegexLexer`, one that does not override that method), found with
    one expression per run of joinable rules of a state."""
    pos = 0
    statestack = list(stack)
    steps = _state(lexer, statestack[-1])
    while True:
        rule: Rule | None = None
        found: re.Match[str] | None = None
        end = pos
        for match, rule_of, alone in steps:
            found = match(text, pos)
            if found is None:
                continue
            if rule_of is None:
                rule, end = alone, found.end()
            else:
                group = found.lastindex
                assert group is not None  # every alternative is a group
                rule = rule_of[group]
                end = found.end(group)  # the span of the rule's own match
                # A callback needs the rule's own match (its groups); a token only the span.
                found = (
                    rule[0](text, pos) if rule[1] is not None and type(rule[1]) is not _TokenType else None
                )
            break
        if rule is None:
            # No rule matched here: Pygments' error handling, as it is.
            if pos >= len(text):
                return
            if text[pos] == "\n":
                statestack = ["root"]
                steps = _state(lexer, "root")
                yield pos, Whitespace, "\n"
                pos += 1
                continue
            yield pos, Error, text[pos]
            pos += 1
            continue
        action, new_state = rule[1], rule[2]
        if action is not None:
            if type(action) is _TokenType:
                yield pos, action, text[pos:end]
            else:
                assert found is not None
                yield from action(lexer, found)
        pos = end
        if new_state is not None:
            if isinstance(new_state, tuple):
                for name in new_state:
                    if name == "#pop":
                        if len(statestack) > 1:
                            statestack.pop()
                    elif name == "#push":
                        statestack.append(statestack[-1])
                    else:
                        statestack.append(name)
            elif isinstance(new_state, int):
                # pop, but keep at least one state (as Pygments does)
                if abs(new_state) >= len(statestack):
                    del statestack[1:]
                else:
                    del statestack[new_state:]
            elif new_state == "#push":
                statestack.append(statestack[-1])
            else:
                raise AssertionError(f"wrong state def: {new_state!r}")
            steps = _state(lexer, statestack[-1])


def speed_up(lexer: Lexer) -> Lexer:
    """``lexer``, tokenising with :func:`fast_tokens` when it is a plain regex lexer (its
    ``get_tokens_unprocessed`` Pygments' own); any other lexer as it is. The lexer's other
    methods (``get_tokens``' preprocessing, filters) are untouched."""
    if takes(lexer):
        assert isinstance(lexer, RegexLexer)

        def tokens(text: str, stack: Iterable[str] = ("root",)) -> Iterator[Token]:
            return fast_tokens(lexer, text, stack)

        lexer.get_tokens_unprocessed = tokens  # type: ignore[method-assign]
    return lexer


def takes(lexer: Lexer) -> bool:
    """Whether :func:`speed_up` speeds ``lexer`` up: a regex lexer with Pygments' own loop."""
    return (
        isinstance(lexer, RegexLexer)
        and type(lexer).get_tokens_unprocessed is RegexLexer.get_tokens_unprocessed
    )
