"""``tools/string_table.StringTable`` numbers strings exactly as a dict would (item 14's id store)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omp_session.tools.string_table import StringTable

# Any Python string, lone surrogates included (a cut emoji in an id, issue 11 item 5).
TEXTS = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=12)


@settings(max_examples=300, deadline=None)
@given(st.lists(TEXTS, max_size=200), st.lists(TEXTS, max_size=20))
def test_numbers_like_a_dict(added: list[str], probed: list[str]) -> None:
    table = StringTable(2)  # the smallest table: every example grows it and probes past collisions
    reference: dict[str, int] = {}
    for text in added:
        assert table.add(text) == reference.setdefault(text, len(reference))
    assert len(table) == len(reference)
    for text, number in reference.items():
        assert table.string(number) == text
        assert table.find(text) == number
    for text in probed:
        assert table.find(text) == reference.get(text, -1)


def test_many_similar_ids_stay_distinct() -> None:
    table = StringTable()
    lower = [f"{n:08x}" for n in range(0, 200_000, 7)]
    ids = lower + [i.upper() for i in lower if i.upper() != i]
    numbers = [table.add(i) for i in ids]
    assert numbers == list(range(len(ids)))  # upper and lower case hex are different ids
    assert [table.add(i) for i in ids] == numbers
    assert table.string(numbers[-1]) == ids[-1]


@pytest.mark.parametrize("slots", [0, 1, 3, 12])
def test_table_size_must_be_a_power_of_two(slots: int) -> None:
    with pytest.raises(ValueError):
        StringTable(slots)
