"""The fast paths of the rendering module against the reference each one stands in for (issue 30
item 3: the HTML export renders 50,000 entries): prose rendered without the Markdown parser, and
JSON highlighted while walking the value instead of indenting it and lexing the text. Where a fast
path takes a text, its HTML must be the reference's, byte for byte; the property tests generate
the inputs, mostly of the kind the fast path takes."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from omp_session.rendering import markdown
from omp_session.rendering.markdown import highlight_code, highlight_json, render_markdown


def _reference_markdown(text: str) -> str:
    return str(markdown._cleaner().clean(markdown._parser().render(text)))


def _reference_json(value: Any) -> str:
    return str(highlight_code(json.dumps(value, indent=2, ensure_ascii=False, default=str), "json"))


#: Words of prose (letters, digits, the punctuation prose has, other scripts), in lines and
#: paragraphs: nearly all take the fast path.
_LETTER = st.sampled_from([*"abcXYZ", "é", "数", "ñ", "ß"])
_WORD = st.tuples(
    _LETTER, st.text(st.sampled_from([*"abz09.,;:!?'\"()-+=#>%$@^{}/", "é", "数"]), max_size=7)
).map("".join)
_PROSE = st.lists(
    st.tuples(
        st.lists(_WORD, min_size=1, max_size=6).map(" ".join), st.sampled_from(["\n", "\n\n", "\n\n\n"])
    ),
    max_size=8,
).map(lambda lines: "".join(line + end for line, end in lines))
#: Any text, with the characters Markdown gives a meaning to and the whitespace and control
#: characters it treats specially: mostly the parser's, and the fast path must know which.
_ANY = st.text(
    st.sampled_from([*"ab1 \n.>'\"", "é", "\u00a0", "\t", "\x0b", "\r", "\x00", *"*_`[]<&~|\\"])
    | st.characters(codec="utf-8"),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(_PROSE)
def test_prose_renders_as_the_parser_renders_it(text: str) -> None:
    if text.strip():
        assert markdown._MARKUP.search(text) is None  # the fast path's, this one
    assert str(render_markdown(text)) == _reference_markdown(text)


@settings(max_examples=400, deadline=None)
@given(_ANY)
def test_any_text_renders_as_the_parser_renders_it(text: str) -> None:
    assert str(render_markdown(text)) == _reference_markdown(text)


def test_the_prose_path_is_taken_for_prose_and_not_for_markup() -> None:
    prose = 'Shell session cargo compaction string. The number 42 > 7 "quoted" 数据 café.\n\nNext one.'
    assert markdown._MARKUP.search(prose) is None
    assert str(render_markdown(prose)) == _reference_markdown(prose)
    for marked in (
        "a *b*",
        "a_b_",
        "`x`",
        "[a](b)",
        "- item",
        "1. one",
        "# head",
        "> quote",
        "x  \ny",
        "a &amp; b",
    ):
        assert markdown._MARKUP.search(marked) is not None, marked
        assert str(render_markdown(marked)) == _reference_markdown(marked)


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
    | st.text(st.characters(codec="utf-8"), max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_JSON)
def test_json_is_highlighted_as_the_lexer_highlights_its_text(value: Any) -> None:
    assert str(highlight_json(value)) == _reference_json(value)


def test_json_the_walk_leaves_to_the_reference() -> None:
    for odd in ({1: "int key"}, {"t": (1, 2)}, {"s": {1, 2}}, [float("nan")], {"big": "x" * 250_000}):
        assert str(highlight_json(odd)) == _reference_json(odd)
    assert "<span" not in str(highlight_json({"big": "x" * 250_000}))  # too long to highlight
