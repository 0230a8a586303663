"""UsageStatistics.add_totals (what a store-wide ``stats`` merges each session's totals with)
gives what counting every entry one after the other gives."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from omp_session.model.usage import UsageStatistics

_KEYS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost")
_VALUE = st.one_of(st.integers(0, 10**6), st.floats(0, 1e6, allow_nan=False), st.none(), st.just("x"))
_USAGE = st.dictionaries(st.sampled_from(_KEYS), _VALUE, max_size=len(_KEYS))
_ENTRY = st.one_of(
    _USAGE.map(lambda usage: {"type": "message", "message": {"role": "assistant", "usage": usage}}),
    _USAGE.map(lambda usage: {"type": "model_usage", "usage": usage}),
)


def _same(state: dict[str, Any], expected: dict[str, Any]) -> None:
    assert state.keys() == expected.keys()
    for key, value in expected.items():
        if key == "side":
            _same(state[key], value)
        elif key == "missing":
            assert state[key] == value  # the keys some usage lacked, in the order first lacked
        else:  # the same numbers added in another order: equal but for rounding
            assert abs(state[key] - value) <= 1e-6 * max(1.0, abs(value)), key


@given(st.lists(st.lists(_ENTRY, max_size=6), max_size=5))
def test_adding_totals_equals_counting_every_entry(sessions: list[list[dict[str, Any]]]) -> None:
    whole = UsageStatistics.of([entry for entries in sessions for entry in entries])
    added = UsageStatistics()
    parts = [UsageStatistics.of(entries) for entries in sessions]
    before = [part.to_state() for part in parts]
    for part in parts:
        added.add_totals(part)
    _same(added.to_state(), whole.to_state())
    assert [part.to_state() for part in parts] == before  # what was added is left as it was
