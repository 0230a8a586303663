"""The tree of a session as nodes: what ``get_tree`` returns, and how it is built.

Kept apart from the index (:mod:`omp_session.model.tree`) because building 100k nodes fast takes
its own tricks: C-speed passes over the ids and parent ids, and one Python loop that attaches each
node to its parent's. The rules are omp's ``getTree`` (roots in file order, children sorted by
time) with the cycle and duplicate-id rules of docs/durability.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import eq, not_
from typing import Any

from omp_session.format.ids import iso_to_ms

__all__ = [
    "LazyTreeNode",
    "SessionTreeNode",
    "build_tree",
    "build_tree_with_duplicates",
    "entry_id_of",
    "parent_id_of",
]

Entry = dict[str, Any]


@dataclass(slots=True)  # slots: one node per entry, built 100k at a time by get_tree
class SessionTreeNode:
    """One node of :meth:`SessionIndex.get_tree`: the entry, its sorted children and its label."""

    entry: Entry
    children: list[SessionTreeNode] = field(default_factory=list)
    label: str | None = None

    def walk(self) -> Iterator[tuple[SessionTreeNode, int]]:
        """Pre-order ``(node, depth)`` pairs without recursion (trees can be 100k deep).

        A node already on the current path is not entered again: with duplicate ids one node can
        hang under several parents, which could otherwise form a loop.
        """
        on_path: set[int] = set()
        stack: list[tuple[SessionTreeNode, int, bool]] = [(self, 0, True)]
        while stack:
            node, depth, entering = stack.pop()
            if not entering:
                on_path.discard(id(node))
                continue
            if id(node) in on_path:
                continue
            yield node, depth
            on_path.add(id(node))
            stack.append((node, depth, False))
            stack.extend((child, depth + 1, True) for child in reversed(node.children))


#: The slot that holds a node's entry (a lazy node fills it on first read).
_ENTRY_SLOT: Any = SessionTreeNode.__dict__["entry"]


class LazyTreeNode(SessionTreeNode):
    """A node whose entry is decoded when it is first read: the tree of a session opened through
    its offset index is built from the index's columns (ids, parent positions), and only the
    entries someone looks at (a label, the children of a fork, to sort them) are decoded."""

    __slots__ = ("_load", "_position")

    def __init__(self, load: Callable[[int], Entry], position: int) -> None:
        self.children = []
        self.label = None
        self._load = load
        self._position = position

    @property
    def entry(self) -> Entry:
        try:
            loaded: Entry = _ENTRY_SLOT.__get__(self, LazyTreeNode)
        except AttributeError:
            loaded = self._load(self._position)
            _ENTRY_SLOT.__set__(self, loaded)
        return loaded

    @entry.setter
    def entry(self, value: Entry) -> None:
        _ENTRY_SLOT.__set__(self, value)

    def __eq__(self, other: object) -> bool:  # equal to the eager node of the same entry
        if not isinstance(other, SessionTreeNode):
            return NotImplemented
        return (self.entry, self.children, self.label) == (other.entry, other.children, other.label)

    __hash__ = None  # type: ignore[assignment]


def entry_id_of(entry: Entry) -> str | None:
    """The entry's id if it is a string (an id of any other type names nothing)."""
    value = entry.get("id")
    return value if isinstance(value, str) else None


def parent_id_of(entry: Entry) -> str | None:
    """The entry's parent id; ``None`` for none, an empty one, or one that is not a string."""
    value = entry.get("parentId")
    return value if isinstance(value, str) and value else None


def build_tree(
    entries: list[Entry],
    unique_ids: list[Any] | None,
    labels: dict[str, str],
    parent_positions: Sequence[int] | None,
    cycle_roots: Callable[[], set[str]],
    nodes_made: list[SessionTreeNode] | None = None,
) -> list[SessionTreeNode] | None:
    """The roots of the tree of ``entries``, whose string ids are unique (``unique_ids``: each
    entry's id when known to be a string or ``None``, else ``None``; ``labels``: target id ->
    label; ``parent_positions``: each first entry's parent position, when a bulk build knew them;
    ``cycle_roots``: the ids whose parent link is ignored, asked for only when needed;
    ``nodes_made``: one node per entry made by the caller, lazy ones, with ``parent_positions``
    for every entry: ``entries`` is then not read); ``None`` when an id or a parent id is neither
    a string nor ``None`` (a damaged file: the caller builds node by node,
    ``build_tree_with_duplicates``).

    One node per entry, with C-speed passes and one Python loop that attaches each node to its
    parent's. The parent of each node comes from ``parent_positions`` when known, else from
    comparing the list of parent ids with the list of ids shifted by one (a session grows one entry
    after the other); only the other entries (roots, the first entry of a branch, entries added
    since) look their parent up by id."""
    ids: list[Any] = unique_ids if unique_ids is not None else list(map(dict.get, entries, repeat("id")))
    known = parent_positions
    start = 0 if known is None else len(known)  # parent ids needed from here on
    parents: list[Any] = list(map(dict.get, entries[start:] if start else entries, repeat("parentId")))
    if not (unique_ids is not None or _only_strings(ids)) or not _only_strings(parents):
        return None  # odd ids or parents: the caller builds node by node
    if "" in parents:  # an empty parent id means "no parent" (``parent_id_of``)
        parents = [parent or None for parent in parents]
    roots = cycle_roots()
    if roots:  # their parent link is ignored (a self-parent is one of them)
        parents = [None if entry_id in roots else p for entry_id, p in zip(ids[start:], parents, strict=True)]
    node = SessionTreeNode
    nodes: list[Any] = nodes_made if nodes_made is not None else [node(entry, []) for entry in entries]
    if known is not None:
        nodes.append(None)  # the parent of position -1: none
        targets: list[SessionTreeNode | None] = list(map(nodes.__getitem__, known))
        nodes.pop()
        targets.extend(repeat(None, len(parents)))  # entries added since: by id
        others = [start + at for at, parent in enumerate(parents) if parent is not None]
    else:
        targets = [None, *nodes[:-1]] if nodes else []
        # parents[i] == ids[i - 1] (an entry without an id is nobody's parent, not even of one
        # without a parent)
        plain = ids if None not in ids else [_NO_ID if i is None else i for i in ids]
        others = list(compress(range(1, len(nodes)), map(not_, map(eq, parents[1:], plain))))
        if nodes and parents[0] is not None:
            others.insert(0, 0)
    wanted = [parents[position - start] for position in others]
    find = _nodes_by_id(ids, nodes, [*wanted, *labels]).get
    for position, parent in zip(others, wanted, strict=True):
        targets[position] = find(parent)
    for target, label in labels.items():
        if (labelled := find(target)) is not None:
            labelled.label = label
    return _attached(nodes, targets)


def build_tree_with_duplicates(
    entries: list[Entry], by_id: dict[str, Entry], labels: dict[str, str], cycle_roots: set[str]
) -> list[SessionTreeNode]:
    # The general rules: omp attaches the node of a duplicated id once per occurrence (§6.4).
    nodes: dict[str, SessionTreeNode] = {}
    for indexed_id, indexed in by_id.items():
        nodes[indexed_id] = SessionTreeNode(indexed, [], labels.get(indexed_id))
    roots: list[SessionTreeNode] = []
    for entry in entries:
        entry_id: str | None = entry_id_of(entry)
        node = nodes[entry_id] if entry_id is not None else SessionTreeNode(entry)
        parent = parent_id_of(entry)
        if parent is None or parent == entry_id or entry_id in cycle_roots or parent not in nodes:
            roots.append(node)
        else:
            nodes[parent].children.append(node)
    for node in nodes.values():
        if len(node.children) > 1:
            _sort_by_timestamp(node.children)
    return roots


def _attached(nodes: list[SessionTreeNode], targets: list[SessionTreeNode | None]) -> list[SessionTreeNode]:
    # Each node appended to its target's children (None: a root) in file order, then the
    # children of each node with several sorted by time (omp's getTree); the roots returned.
    roots: list[SessionTreeNode] = []
    several: list[SessionTreeNode] = []  # parents given a second (third ...) child
    add_root = roots.append
    for child, parent_node in zip(nodes, targets, strict=True):
        if parent_node is None:
            add_root(child)
        elif parent_node.children:
            parent_node.children.append(child)
            several.append(parent_node)
        else:
            parent_node.children.append(child)
    for parent_node in {id(n): n for n in several}.values():
        _sort_by_timestamp(parent_node.children)
    return roots


def _nodes_by_id(ids: list[Any], nodes: list[Any], wanted: list[Any]) -> dict[Any, SessionTreeNode]:
    """The nodes of the ``wanted`` ids (unique ids, strings or ``None``), found by one C-speed
    pass of set membership over the ids: cheaper than a map of every id when few are wanted
    (the parents of branch points, labelled entries)."""
    wanted_ids = set(wanted)
    wanted_ids.discard(None)  # an entry without an id is nobody's parent
    if len(wanted_ids) * 8 > len(ids):
        found = dict(zip(ids, nodes, strict=True))
        found.pop(None, None)
        return found
    return {ids[at]: nodes[at] for at in compress(range(len(ids)), map(wanted_ids.__contains__, ids))}


_NO_ID = object()  # stands for a missing id where ``None`` would equal a missing parent


def _only_strings(values: list[Any]) -> bool:
    """Every value a string or ``None`` (what the fast tree build relies on), checked in C."""
    return set(map(type, values)) <= {str, type(None)}


def _sort_by_timestamp(children: list[SessionTreeNode]) -> None:
    # Stable sort by Date.parse(timestamp). An unparseable timestamp keeps its place next to the
    # sibling before it (JS compares NaN as "equal", leaving the order implementation-defined).
    keys: list[float] = []
    previous = float("-inf")
    for child in children:
        ms = iso_to_ms(child.entry.get("timestamp"))
        previous = float(ms) if ms is not None else previous
        keys.append(previous)
    if all(map(float.__le__, keys, keys[1:])):
        return  # already in order (the usual case: children are appended as time goes on)
    order = sorted(range(len(children)), key=keys.__getitem__)
    children[:] = [children[i] for i in order]
