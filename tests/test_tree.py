"""omp_session.model.tree (spec §6.4) and tree navigation through SessionManager (checklist 49–53)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from omp_session import EntryNotFoundError, SessionError, SessionManager
from omp_session.model.tree import SessionIndex, SessionTreeNode
from omp_session.model.tree_nodes import build_tree_with_duplicates
from tests.helpers import assistant, entry, ids, user, within


def t(second: int) -> str:
    return f"2025-06-02T14:00:{second:02d}.000Z"


def flat(roots: list[SessionTreeNode]) -> list[tuple[Any, int]]:
    return [(node.entry.get("id"), depth) for root in roots for node, depth in root.walk()]


def label(target: str, text: str | None, entry_id: str, parent: str | None = None) -> dict[str, Any]:
    fields: dict[str, Any] = {"targetId": target}
    if text is not None:
        fields["label"] = text
    return entry(entry_id, parent, "label", **fields)


# -- SessionIndex: ids, children, branches -------------------------------------------------------


def test_index_by_id_children_and_branch() -> None:
    index = SessionIndex([entry("a", None), entry("b", "a"), entry("c", "a"), entry("d", "b")])
    assert list(index.by_id) == ["a", "b", "c", "d"]
    assert ids(index.children("a")) == ["b", "c"]
    assert index.children("d") == [] and index.children("zzz") == []
    assert ids(index.branch("d")) == ["a", "b", "d"]
    assert ids(index.branch("c")) == ["a", "c"]


@pytest.mark.parametrize("start", [None, "", "unknown"])
def test_branch_of_unknown_or_empty_start_is_empty(start: str | None) -> None:
    assert SessionIndex([entry("a", None)]).branch(start) == []


def test_children_are_in_file_order_not_sorted() -> None:
    index = SessionIndex(
        [
            entry("r", None, timestamp=t(0)),
            entry("late", "r", timestamp=t(9)),
            entry("early", "r", timestamp=t(1)),
        ]
    )
    assert ids(index.children("r")) == ["late", "early"]
    (root,) = index.get_tree()
    assert ids(child.entry for child in root.children) == ["early", "late"]


def test_get_returns_none_for_empty_ids() -> None:
    index = SessionIndex([entry("a", None)])
    assert index.get("a") is index.entries[0]
    assert index.get(None) is None and index.get("") is None and index.get("b") is None


# -- get_tree ------------------------------------------------------------------------------------


def test_roots_null_self_and_orphan_parents_in_file_order() -> None:
    entries = [
        entry("orphan", "missing", timestamp=t(1)),
        entry("self", "self", timestamp=t(0)),
        entry("root", None, timestamp=t(5)),
        entry("child", "root", timestamp=t(6)),
        entry("empty-parent", "", timestamp=t(3)),
    ]
    roots = SessionIndex(entries).get_tree()
    assert [r.entry["id"] for r in roots] == ["orphan", "self", "root", "empty-parent"]
    assert flat(roots) == [("orphan", 0), ("self", 0), ("root", 0), ("child", 1), ("empty-parent", 0)]


def test_self_parent_with_a_child() -> None:
    roots = SessionIndex([entry("s", "s"), entry("c", "s")]).get_tree()
    assert flat(roots) == [("s", 0), ("c", 1)]


def test_children_sorted_by_timestamp_stable_for_ties() -> None:
    entries = [
        entry("r", None, timestamp=t(0)),
        entry("c3", "r", timestamp=t(3)),
        entry("c1a", "r", timestamp=t(1)),
        entry("c2", "r", timestamp=t(2)),
        entry("c1b", "r", timestamp=t(1)),
        entry("c0", "r", timestamp="2025-06-02T13:59:59.999Z"),
    ]
    (root,) = SessionIndex(entries).get_tree()
    assert [c.entry["id"] for c in root.children] == ["c0", "c1a", "c1b", "c2", "c3"]


def test_timestamps_with_offsets_are_compared_as_instants() -> None:
    entries = [
        entry("r", None),
        entry("later", "r", timestamp="2025-06-02T15:00:00.000+02:00"),  # 13:00Z
        entry("earlier", "r", timestamp="2025-06-02T12:30:00.000Z"),
    ]
    (root,) = SessionIndex(entries).get_tree()
    assert [c.entry["id"] for c in root.children] == ["earlier", "later"]


def test_unparseable_timestamps_do_not_crash_the_sort() -> None:
    entries = [
        entry("r", None),
        entry("b", "r", timestamp=t(2)),
        entry("bad", "r", timestamp="not a date"),
        entry("none", "r", timestamp=None),  # type: ignore[arg-type]
        entry("a", "r", timestamp=t(1)),
    ]
    (root,) = SessionIndex(entries).get_tree()
    order = [c.entry["id"] for c in root.children]
    assert sorted(order) == ["a", "b", "bad", "none"]
    assert order.index("a") < order.index("b")


def test_labels_on_tree_nodes_and_label_entries_are_nodes() -> None:
    entries = [
        entry("a", None),
        entry("b", "a"),
        label("a", "start", "l1", "b"),
        label("l1", "meta", "l2", "l1"),
    ]
    index = SessionIndex(entries)
    nodes = {node.entry["id"]: node for root in index.get_tree() for node, _ in root.walk()}
    assert nodes["a"].label == "start" and nodes["b"].label is None
    assert nodes["l1"].entry["type"] == "label" and nodes["l1"].label == "meta"
    assert flat(index.get_tree()) == [("a", 0), ("b", 1), ("l1", 2), ("l2", 3)]


def test_label_resolution_last_wins_and_clears() -> None:
    entries = [
        entry("a", None),
        entry("b", "a"),
        label("a", "one", "l1", "b"),
        label("b", "x", "l2", "l1"),
        label("a", "two", "l3", "l2"),  # last wins, keeps its insertion position
        label("b", "", "l4", "l3"),  # "" clears
        label("b", "y", "l5", "l4"),
        label("b", None, "l6", "l5"),  # absent clears
        label("zzz", "ghost", "l7", "l6"),  # unknown target is still indexed
        entry("n", "l7", "label", targetId=7, label="ignored"),  # non-string target ignored
    ]
    index = SessionIndex(entries)
    assert index.labels == {"a": "two", "zzz": "ghost"}
    assert list(index.labels) == ["a", "zzz"]


def test_label_written_on_another_branch_applies() -> None:
    entries = [entry("a", None), entry("b", "a"), entry("side", "a"), label("b", "L", "l", "side")]
    index = SessionIndex(entries)
    assert index.labels == {"b": "L"}
    assert "l" not in ids(index.branch("b"))


def test_entries_without_string_ids_do_not_crash() -> None:
    entries = [entry("a", None), {"type": "mystery"}, {"type": "message", "id": 5, "parentId": "a"}]
    roots = SessionIndex(entries).get_tree()
    assert [r.entry.get("id") for r in roots] == ["a", None]
    assert [c.entry.get("id") for c in roots[0].children] == [5]  # a non-string id still has a parent


# -- duplicate ids -------------------------------------------------------------------------------


def test_duplicate_ids_last_wins_in_index_node_per_occurrence() -> None:
    first = entry("dup", "a", timestamp=t(1), message=user("first"))
    second = entry("dup", "b", timestamp=t(3), message=user("second"))
    entries = [entry("a", None, timestamp=t(0)), entry("b", "a", timestamp=t(2)), first, second]
    index = SessionIndex(entries)
    assert index.by_id["dup"] is second
    assert len(index.entries) == 4
    roots = index.get_tree()
    visited = [node for root in roots for node, _ in root.walk()]
    dups = [node for node in visited if node.entry.get("id") == "dup"]
    assert len(dups) == 2 and dups[0] is dups[1] and dups[0].entry is second
    # children are sorted by the indexed entry's timestamp (t3 for both occurrences of "dup")
    assert flat(roots) == [("a", 0), ("b", 1), ("dup", 2), ("dup", 1)]
    assert ids(index.children("a")) == ["b"]  # the index's entry for "dup" hangs under b
    assert ids(index.children("b")) == ["dup"]
    assert ids(index.branch("dup")) == ["a", "b", "dup"]


def test_duplicate_id_that_closes_a_loop_terminates() -> None:
    # a <- b <- a(again): the last "a" points at b, so a and b form a cycle via the duplicate.
    entries = [entry("a", None), entry("b", "a"), entry("a", "b")]
    index = within(5, lambda: SessionIndex(entries))
    assert ids(within(5, lambda: index.branch("b"))) == ["a", "b"]
    roots = within(5, index.get_tree)
    assert within(5, lambda: flat(roots)) == [("a", 0), ("b", 1), ("a", 0), ("b", 1)]


# -- parent cycles -------------------------------------------------------------------------------


def test_two_cycle_first_member_in_file_order_is_the_root() -> None:
    index = SessionIndex([entry("x", "y", timestamp=t(1)), entry("y", "x", timestamp=t(2))])
    assert within(5, index.cycle_roots) == {"x"}
    assert ids(within(5, lambda: index.branch("y"))) == ["x", "y"]
    assert ids(within(5, lambda: index.branch("x"))) == ["x"]
    assert within(5, lambda: flat(index.get_tree())) == [("x", 0), ("y", 1)]


def test_cycle_where_the_first_member_is_added_last() -> None:
    # File order decides, not the order of the walk: "p" is first although "r" closes the loop.
    entries = [entry("root", None), entry("p", "r"), entry("q", "p"), entry("r", "q"), entry("tail", "q")]
    index = SessionIndex(entries)
    assert within(5, index.cycle_roots) == {"p"}
    assert ids(within(5, lambda: index.branch("tail"))) == ["p", "q", "tail"]
    assert ids(within(5, lambda: index.branch("r"))) == ["p", "q", "r"]
    roots = within(5, index.get_tree)
    assert [r.entry["id"] for r in roots] == ["root", "p"]
    assert within(5, lambda: flat(roots)) == [("root", 0), ("p", 0), ("q", 1), ("r", 2), ("tail", 2)]


def test_several_cycles_and_a_self_parent() -> None:
    entries = [
        entry("s", "s"),
        entry("a", "b"),
        entry("b", "a"),
        entry("c", "d"),
        entry("d", "e"),
        entry("e", "c"),
        entry("leaf", "e"),
    ]
    index = SessionIndex(entries)
    assert within(5, index.cycle_roots) == {"s", "a", "c"}
    assert ids(within(5, lambda: index.branch("leaf"))) == ["c", "e", "leaf"]  # e -> c, c is the root
    assert [r.entry["id"] for r in within(5, index.get_tree)] == ["s", "a", "c"]


def test_cycle_added_incrementally_is_detected() -> None:
    index = SessionIndex([entry("a", "b")])
    assert ids(index.branch("a")) == ["a"]  # b unknown: a is an orphan root
    index.add(entry("b", "a"))
    assert ids(within(5, lambda: index.branch("b"))) == ["a", "b"]
    assert ids(within(5, lambda: index.branch("a"))) == ["a"]


def test_parent_of() -> None:
    index = SessionIndex([entry("a", None), entry("b", "a"), entry("s", "s"), entry("o", "gone")])
    assert index.parent_of(index.by_id["b"]) is index.by_id["a"]
    assert index.parent_of(index.by_id["a"]) is None
    assert index.parent_of(index.by_id["s"]) is None
    assert index.parent_of(index.by_id["o"]) is None


# -- walk ----------------------------------------------------------------------------------------


def test_walk_is_pre_order_with_depth() -> None:
    entries = [
        entry("r", None, timestamp=t(0)),
        entry("a", "r", timestamp=t(1)),
        entry("a1", "a", timestamp=t(2)),
        entry("b", "r", timestamp=t(3)),
        entry("a2", "a", timestamp=t(4)),
    ]
    (root,) = SessionIndex(entries).get_tree()
    assert [(n.entry["id"], d) for n, d in root.walk()] == [
        ("r", 0),
        ("a", 1),
        ("a1", 2),
        ("a2", 2),
        ("b", 1),
    ]


def test_very_deep_chain_without_recursion() -> None:
    depth = 100_000
    entries = [entry("e0", None)] + [entry(f"e{i}", f"e{i - 1}") for i in range(1, depth)]
    index = SessionIndex(entries)
    assert len(index.branch(f"e{depth - 1}")) == depth
    (root,) = index.get_tree()
    walked = list(root.walk())
    assert len(walked) == depth and walked[-1][1] == depth - 1


def test_walk_does_not_loop_on_a_node_reachable_from_itself() -> None:
    node = SessionTreeNode({"id": "n"})
    node.children.append(node)
    assert [(n.entry["id"], d) for n, d in within(5, lambda: list(node.walk()))] == [("n", 0)]


# -- SessionManager navigation (checklist 49–53) -------------------------------------------------


@pytest.fixture
def session() -> SessionManager:
    return SessionManager.in_memory("/proj")


def test_get_branch_empty_single_full_and_from_entry(session: SessionManager) -> None:
    """Checklist 49."""
    assert session.get_branch() == []
    u1 = session.append_message(user("1"))
    assert ids(session.get_branch()) == [u1]
    a1 = session.append_message(assistant("1"))
    u2 = session.append_message(user("2"))
    assert ids(session.get_branch()) == [u1, a1, u2]
    assert ids(session.get_branch(a1)) == [u1, a1]
    assert session.get_branch("nope") == []


def test_get_tree_shapes(session: SessionManager) -> None:
    """Checklist 50: empty, linear single root, siblings, three branches, deep branching."""
    assert session.get_tree() == []
    u1 = session.append_message(user("1"))
    a1 = session.append_message(assistant("1"))
    (root,) = session.get_tree()
    assert root.entry["id"] == u1 and [c.entry["id"] for c in root.children] == [a1]
    branches = []
    for text in ("x", "y", "z"):
        session.branch(a1)
        branches.append(session.append_message(user(text)))
    (root,) = session.get_tree()
    (a_node,) = root.children
    assert [c.entry["id"] for c in a_node.children] == branches
    session.branch(branches[1])
    deep = session.append_message(assistant("deep"))
    deeper = session.append_message(user("deeper"))
    session.branch(deep)
    sibling = session.append_message(user("sibling"))
    depth_of = {n.entry["id"]: d for n, d in session.get_tree()[0].walk()}
    assert depth_of[deeper] == depth_of[sibling] == 4 and depth_of[deep] == 3


def test_branch_moves_leaf_and_next_append_is_a_child(session: SessionManager) -> None:
    """Checklist 51."""
    u1 = session.append_message(user("1"))
    session.append_message(assistant("1"))
    session.branch(u1)
    assert session.get_leaf_id() == u1
    new = session.append_message(assistant("other"))
    assert session.get_entry(new)["parentId"] == u1  # type: ignore[index]
    assert len(session.get_children(u1)) == 2
    with pytest.raises(EntryNotFoundError, match=r"^Entry nonexistent not found$") as info:
        session.branch("nonexistent")
    assert isinstance(info.value, SessionError) and info.value.entry_id == "nonexistent"
    assert session.get_leaf_id() == new


def test_branch_with_summary_is_a_child_of_the_target(session: SessionManager) -> None:
    """Checklist 52."""
    u1 = session.append_message(user("1"))
    session.append_message(assistant("1"))
    summary_id = session.branch_with_summary(u1, "what happened", {"files": ["a"]}, True)
    summary = session.get_entry(summary_id)
    assert summary is not None and session.get_leaf_id() == summary_id
    assert list(summary) == [
        "type",
        "id",
        "parentId",
        "timestamp",
        "fromId",
        "summary",
        "details",
        "fromExtension",
    ]
    assert (summary["parentId"], summary["fromId"], summary["summary"]) == (u1, u1, "what happened")
    with pytest.raises(EntryNotFoundError, match="Entry missing not found"):
        session.branch_with_summary("missing", "s")
    assert session.get_leaf_id() == summary_id


def test_leaf_and_entry_lookups(session: SessionManager) -> None:
    """Checklist 53."""
    assert session.get_leaf_entry() is None and session.get_entry("x") is None
    u1 = session.append_message(user("1"))
    assert session.get_leaf_entry() is session.get_entry(u1)
    assert session.get_entry(u1)["message"] == user("1")  # type: ignore[index]
    assert session.get_entry("unknown") is None


def test_get_children_and_labels_through_the_manager(session: SessionManager) -> None:
    u1 = session.append_message(user("1"))
    a1 = session.append_message(assistant("1"))
    session.append_label_change(u1, "start")
    assert ids(session.get_children(u1)) == [a1]
    assert session.get_children("unknown") == []
    (root,) = session.get_tree()
    assert root.label == "start"
    assert session.get_labels() == {u1: "start"}
    session.get_labels()[u1] = "mutated"
    assert session.get_label(u1) == "start"  # get_labels returns a copy


def _shape(nodes: list[SessionTreeNode]) -> list[Any]:
    # The whole tree, pre-order (``walk`` stops at a node already on the path: duplicates can loop).
    return [
        [(id(node.entry), node.label, depth, len(node.children)) for node, depth in root.walk()]
        for root in nodes
    ]


_ODD_IDS = ["a", "b", "c", "d", "", None, 7]


@given(
    links=st.lists(
        st.tuples(st.sampled_from(_ODD_IDS), st.sampled_from([*_ODD_IDS, "zz"]), st.integers(0, 3)),
        max_size=12,
    ),
    labels=st.lists(st.tuples(st.sampled_from(_ODD_IDS), st.sampled_from(["L", ""])), max_size=3),
)
def test_fast_tree_build_equals_the_general_one(links: list[tuple[Any, Any, int]], labels: list[Any]) -> None:
    # get_tree's C-speed build (parent = previous entry when the ids say so) against the general
    # node-by-node rules, on ids and parents of every odd kind: empty, missing, not strings,
    # self-parents, forward links, cycles, duplicates, same and out-of-order timestamps.
    entries: list[dict[str, Any]] = []
    for entry_id, parent, minute in links:
        entries.append(
            {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": f"2025-01-01T00:0{minute}:00Z",
            }
        )
    for target, label in labels:
        entries.append({"type": "label", "id": None, "parentId": None, "targetId": target, "label": label})
    index = SessionIndex(entries)
    fast = index.get_tree()
    assert _shape(fast) == _shape(
        build_tree_with_duplicates(index.entries, index.by_id, index.labels, index.cycle_roots())
    )


# -- bulk builds (the index of a session read through its offset index) -----------------------


@given(st.lists(st.one_of(st.just(-1), st.integers(0, 2**31 - 1), st.sampled_from([255, 0xFFFF, 0xFFFFFF]))))
def test_roots_of_a_parent_column_are_its_minus_ones(parents: list[int]) -> None:
    # The column of an offset index is searched as bytes; any other sequence element by element.
    from array import array

    from omp_session.model.tree import _roots

    expected = [position for position, parent in enumerate(parents) if parent == -1]
    assert _roots(memoryview(array("i", parents))) == expected
    assert _roots(parents) == expected


def test_bulk_built_index_equals_entry_by_entry() -> None:
    entries = [
        entry("a", None, timestamp=t(1)),
        entry("b", "a", timestamp=t(2)),
        entry("c", "a", timestamp=t(3)),
        {"type": "custom", "id": 7, "parentId": "c"},  # an id that is not a string
        entry("d", "d", timestamp=t(4)),  # its own parent: a root
        label("b", "here", "e", "d"),
    ]
    ids = ["a", "b", "c", None, "d", "e"]
    bulk = SessionIndex.of_unique(list(entries), ids, [-1, 0, 0, 2, -1, 4], [], [entries[5]])
    one_by_one = SessionIndex(entries)
    assert flat(bulk.get_tree()) == flat(one_by_one.get_tree())
    assert bulk.labels == one_by_one.labels == {"b": "here"}
    # ``by_id`` is built when first asked for, and an entry added after the bulk build joins it.
    later = entry("f", "b", timestamp=t(5))
    bulk.add(later)
    one_by_one.add(later)
    assert list(bulk.by_id) == list(one_by_one.by_id) == ["a", "b", "c", "d", "e", "f"]
    assert flat(bulk.get_tree()) == flat(one_by_one.get_tree())
    assert bulk.branch("f") == one_by_one.branch("f")


def test_bulk_build_needs_one_id_per_entry() -> None:
    with pytest.raises(ValueError):
        SessionIndex.of_unique([entry("a", None)], ["a", "b"], [-1], [], [])
