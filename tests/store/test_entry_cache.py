"""omp_session.store._indexed.entry_cache: the decoded entries a lazily opened session keeps."""

from __future__ import annotations

from collections import OrderedDict

from hypothesis import given
from hypothesis import strategies as st

from omp_session.store._indexed.entry_cache import EntryCache


@given(
    lengths=st.lists(st.integers(1, 50), min_size=1, max_size=40),
    batches=st.lists(st.tuples(st.integers(0, 39), st.integers(1, 10)), max_size=8),
    budget=st.integers(0, 400),
)
def test_a_budget_set_after_unbounded_puts_drops_the_oldest_first(
    lengths: list[int], batches: list[tuple[int, int]], budget: int
) -> None:
    # A writable session keeps everything (nothing counted); bounding it later must count what
    # it holds and drop the earliest put first until the rest fits.
    cache = EntryCache(lengths)
    order: list[int] = []  # positions in the order they were first put
    for start, size in batches:
        positions = range(min(start, len(lengths) - 1), min(start + size, len(lengths)))
        cache.put_many(positions, [{"at": position} for position in positions])
        order += [position for position in positions if position not in order]
    assert len(cache) == len(order)
    cache.bound(budget)
    expected = list(order)
    while sum(lengths[position] for position in expected) > budget:
        del expected[0]
    assert [position for position in order if position in cache] == expected
    assert all(cache.peek(position) == {"at": position} for position in expected)


def test_an_unbounded_cache_hands_out_what_it_was_given() -> None:
    cache = EntryCache([10, 10, 10])
    first = {"id": "a"}
    cache.put_many([0, 2], [first, {"id": "c"}])
    assert cache.get(0) is first and cache.get(1) is None and len(cache) == 2
    cache.bound(10)  # room for one line: the oldest goes
    assert 0 not in cache and cache.get(2) == {"id": "c"}
    cache.bound(None)
    cache.put_many([1], [{"id": "b"}])
    assert len(cache) == 2


class _OneByOne:
    """The bounded cache's rule, entry by entry: least recently used first, a position put again
    keeps its place, the oldest dropped until the rest fits."""

    def __init__(self, lengths: list[int], budget: int) -> None:
        self.lengths, self.budget, self.entries = lengths, budget, OrderedDict[int, dict[str, int]]()

    def put_many(self, positions: list[int], entries: list[dict[str, int]]) -> None:
        for position, entry in zip(positions, entries, strict=True):
            self.entries[position] = entry
        while sum(map(self.lengths.__getitem__, self.entries)) > self.budget:
            self.entries.popitem(last=False)

    def get(self, position: int) -> None:
        if position in self.entries:
            self.entries.move_to_end(position)


@given(
    lengths=st.lists(st.integers(0, 50), min_size=1, max_size=40),
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("put"), st.lists(st.integers(0, 39), max_size=30)),
            st.tuples(st.just("get"), st.lists(st.integers(0, 39), max_size=3)),
        ),
        max_size=10,
    ),
    budget=st.integers(0, 300),
)
def test_a_bounded_cache_keeps_what_putting_one_by_one_would(
    lengths: list[int], steps: list[tuple[str, list[int]]], budget: int
) -> None:
    # Batches larger than the budget (a walk through a big session) are cut from the end at once;
    # the result must be what caching each entry and then evicting leaves, order of use included.
    cache, reference = EntryCache(lengths, budget), _OneByOne(lengths, budget)
    for serial, (kind, raw) in enumerate(steps):
        positions = [position % len(lengths) for position in raw]
        if kind == "put":
            entries = [{"at": position, "put": serial} for position in positions]
            cache.put_many(positions, entries)
            reference.put_many(positions, entries)
        else:
            for position in positions:
                cache.get(position)
                reference.get(position)
        # The same entries, in the same order of use (which decides what goes next).
        assert list(cache._entries.items()) == list(reference.entries.items())
