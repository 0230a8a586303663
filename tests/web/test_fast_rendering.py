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
from markupsafe import Markup, escape

from omp_session.rendering import entry_html, markdown
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


_TEXTS = st.lists(
    st.sampled_from(["plain words", "a *b*", "a *b* ", "<b>x</b>", "x = 1", "x = 1\n", "", "数"])
    | st.text(st.sampled_from([*"ab *_<&\n`"]), max_size=12),
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(_TEXTS, st.sampled_from([None, "python", "bash", "nosuchlanguage"]))
def test_remembered_results_are_each_texts_own(texts: list[str], language: str | None) -> None:
    # The results of short texts are cached: whatever came before, each text (and each language
    # of a code text) gets what rendering it afresh gives, never another text's result.
    for text in texts + texts[::-1]:
        assert str(render_markdown(text)) == str(markdown._markdown(text))
        assert str(highlight_code(text, language)) == str(markdown._highlight(text, language))
        assert str(highlight_code(text, "json")) == str(markdown._highlight(text, "json"))


def test_a_markup_text_is_not_given_its_plain_twins_result() -> None:
    plain = "<b>bold</b> & co"
    assert str(highlight_code(plain, None)) == "&lt;b&gt;bold&lt;/b&gt; &amp; co"  # now remembered
    assert str(highlight_code(Markup(plain), None)) == plain  # Markup is left as it is
    assert str(highlight_code(plain, None)) == "&lt;b&gt;bold&lt;/b&gt; &amp; co"
    assert markdown._highlight_cached.cache_info().currsize >= 1
    long = "x = 1\n" * (markdown._CACHED_CHARS // 6 + 1)  # too long to remember: rendered each time
    before = markdown._highlight_cached.cache_info()
    assert str(highlight_code(long, "python")) == str(markdown._highlight(long, "python"))
    assert markdown._highlight_cached.cache_info()[:2] == before[:2]


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from([*"ab <>&'\"\n", "é", "\ud800"]) | st.characters(), max_size=40))
def test_entry_text_is_escaped_as_markupsafe_escapes_it(text: str) -> None:
    assert entry_html._text(text) == str(escape(text))
    assert entry_html._text(Markup(text)) == text  # a block's HTML stays as it is
    assert entry_html._text(42) == "42"
