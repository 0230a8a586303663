"""The session tree as lines of text: the current branch in column 0, side branches indented.

The *trunk* (the current branch: root to leaf, or the branch through an entry a reader asked to
centre on) is drawn in column 0 however many forks it passes, so a 50,000-entry session with 70
forks reads like a conversation; the branches it left behind hang under their fork point, indented
with box-drawing connectors, before the trunk goes on::

    u1 user: Write a sort function
    a1 assistant: def sort(xs): ...
    └─ u2 user: Make it a bubble sort
       a2 assistant: Bubble sort implemented.
    b1 branch summary: Tried bubble sort
    u3 user: Use merge sort instead  ◀ leaf

A linear run stays at one indentation; only forks indent. At most :data:`MAX_INDENT` levels of
side branches are drawn as indentation; a deeper line keeps that width and shows its level in the
prefix instead (``6» ├─ …``), so no line drifts off the screen (issue 30 #1). ``depth`` folds the
side branches below a level into one ``… N entries in K side branches`` line.

Unless ``full`` is set, stretches of at least :data:`FOLD_MIN` consecutive "uninteresting"
entries inside a run become one ``… N entries`` line. Never folded: the first and last entry of a
run (roots, branch points, tips), labelled entries, the current leaf, user messages, compactions
and branch summaries — the landmarks a reader navigates by. An entry reached a second time (a
duplicated id hangs under two parents) is printed as ``<id> (shown above)`` with ``kind="repeat"``.
Import bookkeeping entries (:func:`~omp_session.tools.entry_kinds.is_import_bookkeeping`) are left
out unless ``all_entries`` is set; the leaf marker then sits on the last entry shown of the
current branch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from omp_session.manager import SessionManager
from omp_session.model.tree import SessionTreeNode
from omp_session.tools.entry_kinds import is_import_bookkeeping
from omp_session.tools.summary import TREE_KINDS, entry_summary

Entry = dict[str, Any]

__all__ = ["FOLD_MIN", "MAX_INDENT", "TreeLine", "render_tree_line", "tree_lines"]

#: The shortest stretch worth folding (folding two lines into one saves nothing).
FOLD_MIN = 3
#: Side-branch levels drawn as indentation (3 cells each); deeper levels are written, not shifted.
MAX_INDENT = 4

_LANDMARKS = frozenset({"user", *TREE_KINDS.values()})
_SEGMENT = 3  # cells of one level of indentation


@dataclass(frozen=True)
class TreeLine:
    """One printed line: an entry, ``hidden`` folded entries (``kind == "fold"``) or a repeat.

    ``depth`` is the line's side-branch level: 0 on the trunk (column 0), 1 in a branch leaving it,
    and so on. A fold of whole side branches (``depth`` given) says so in ``text``."""

    prefix: str
    entry_id: str | None
    kind: str
    text: str
    label: str | None = None
    is_leaf: bool = False
    on_current_branch: bool = False
    hidden: int = 0
    depth: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def render_tree_line(line: TreeLine, text: str | None = None) -> str:
    """Plain-text form of a line (the CLI adds colour around the same pieces); ``text`` in place of
    the line's own text, if given."""
    text = line.text if text is None else text
    if line.kind == "fold":
        return f"{line.prefix}{fold_text(line)}"
    if line.kind == "repeat":
        return f"{line.prefix}{line.entry_id} {text}"
    body = text if line.kind == "event" else f"{line.kind}: {text}"
    label = f" [{line.label}]" if line.label else ""
    leaf = "  ◀ leaf" if line.is_leaf else ""
    return f"{line.prefix}{line.entry_id or '?'} {body}{label}{leaf}"


def fold_text(line: TreeLine) -> str:
    """What a fold line says after its prefix: ``… 5 entries folded``, or for folded side branches
    ``… 12 entries in 2 side branches``."""
    entries = "entry" if line.hidden == 1 else "entries"
    return f"… {line.hidden} {entries} {line.text}" if line.text else f"… {line.hidden} {entries} folded"


def _prefix(parts: Sequence[str]) -> str:
    """The connectors of a line from its per-level parts; beyond :data:`MAX_INDENT` levels the
    middle ones become the level number (``6» ``), so the prefix never grows wider."""
    if len(parts) <= MAX_INDENT:
        return "".join(parts)
    marker = f"{len(parts)}»".ljust(_SEGMENT)
    return "".join(parts[: MAX_INDENT - 2]) + marker + parts[-1]


class _Builder:
    def __init__(
        self,
        current: Sequence[Entry],
        leaf_id: str | None,
        *,
        full: bool,
        text_limit: int | None,
        depth: int | None,
        all_entries: bool,
        keep_id: str | None,
    ) -> None:
        self.leaf_id = leaf_id
        self.full = full
        self.text_limit = text_limit
        self.depth_limit = depth
        self.all_entries = all_entries
        self.keep_id = keep_id
        self.current = {str(e.get("id")) for e in current}
        self.seen: set[int] = set()
        self.trunk: set[int] = set()
        self.lines: list[TreeLine] = []

    def shown(self, node: SessionTreeNode) -> bool:
        return self.all_entries or not is_import_bookkeeping(node.entry)

    def line(self, node: SessionTreeNode, prefix: str, depth: int) -> TreeLine:
        entry_id = node.entry.get("id")
        entry_id = entry_id if isinstance(entry_id, str) else None
        summary = entry_summary(node.entry, self.text_limit)
        return TreeLine(
            prefix=prefix,
            entry_id=entry_id,
            kind=summary.kind,
            text=summary.text,
            label=node.label,
            is_leaf=entry_id is not None and entry_id == self.leaf_id,
            on_current_branch=entry_id in self.current,
            depth=depth,
        )

    def run(self, start: SessionTreeNode) -> list[SessionTreeNode]:
        """``start`` and its single-child descendants, up to a tip, a branch point or the trunk."""
        nodes = [start]
        self.seen.add(id(start))
        node = start
        seen, trunk = self.seen, self.trunk
        while (
            len(node.children) == 1 and id(node.children[0]) not in seen and id(node.children[0]) not in trunk
        ):
            node = node.children[0]
            self.seen.add(id(node))
            nodes.append(node)
        return nodes

    def emit_run(self, nodes: Sequence[SessionTreeNode], lead: str, indent: str, depth: int) -> bool:
        """The lines of one run (the first with ``lead``, the others with ``indent``), folded;
        False when every entry of it is hidden."""
        lines = [self.line(node, indent, depth) for node in nodes if self.shown(node)]
        if not lines:
            return False
        lines[0] = TreeLine(**{**lines[0].to_dict(), "prefix": lead})
        if self.full:
            self.lines.extend(lines)
            return True
        stretch: list[TreeLine] = []
        for position, line in enumerate(lines):
            if self._keep(line, position, len(lines)):
                self._flush(stretch, indent, depth)
                self.lines.append(line)
            else:
                stretch.append(line)
        self._flush(stretch, indent, depth)
        return True

    def _keep(self, line: TreeLine, position: int, count: int) -> bool:
        edge = position in (0, count - 1)
        return (
            edge
            or line.is_leaf
            or line.label is not None
            or line.kind in _LANDMARKS
            or (self.keep_id is not None and line.entry_id == self.keep_id)
        )

    def _flush(self, stretch: list[TreeLine], indent: str, depth: int) -> None:
        if len(stretch) >= FOLD_MIN:
            self.lines.append(TreeLine(indent, None, "fold", "", hidden=len(stretch), depth=depth))
        else:
            self.lines.extend(stretch)
        stretch.clear()

    def build(self, roots: Sequence[SessionTreeNode], trunk: Sequence[SessionTreeNode]) -> list[TreeLine]:
        self.trunk = {id(node) for node in trunk}
        if not trunk:  # no leaf: every root is a side branch of an invisible common root
            self.side(list(roots), (), 1 if len(roots) > 1 else 0)
            return self.lines
        self.side([root for root in roots if root is not trunk[0]], (), 1)
        start = 0
        for position, node in enumerate(trunk):
            following = trunk[position + 1] if position + 1 < len(trunk) else None
            others = [child for child in node.children if child is not following]
            if others or following is None:
                for member in trunk[start : position + 1]:
                    self.seen.add(id(member))
                self.emit_run(trunk[start : position + 1], "", "", 0)
                self.side(others, (), 1)
                start = position + 1
        return self.lines

    def side(self, children: list[SessionTreeNode], parts: tuple[str, ...], depth: int) -> None:
        """The branches ``children`` (and everything under them) at side-branch level ``depth``,
        below the connectors ``parts`` of their parent; level 0 (a single root without a leaf) is
        drawn in column 0."""
        stack: list[tuple[SessionTreeNode, tuple[str, ...], tuple[str, ...], int]] = []
        self._push(stack, children, parts, depth)
        while stack:
            node, lead, indent, level = stack.pop()
            if id(node) in self.seen or id(node) in self.trunk:
                # Duplicate ids hang one node under several parents (§6.4): point back to it.
                where = "(on the current branch)" if id(node) in self.trunk else "(shown above)"
                entry_id = self.line(node, "", level).entry_id
                self.lines.append(TreeLine(_prefix(lead), entry_id, "repeat", where, depth=level))
                continue
            nodes = self.run(node)
            if self.emit_run(nodes, _prefix(lead), _prefix(indent), level):
                self._push(stack, nodes[-1].children, indent, level + 1)
            else:  # all hidden: its branches take its place
                self._push(stack, nodes[-1].children, lead[:-1], level)

    def _push(
        self,
        stack: list[tuple[SessionTreeNode, tuple[str, ...], tuple[str, ...], int]],
        children: list[SessionTreeNode],
        parts: tuple[str, ...],
        depth: int,
    ) -> None:
        if not children:
            return
        if depth == 0:  # one root and no leaf: column 0, no connector
            stack.extend((child, (), (), 0) for child in reversed(children))
            return
        if self.depth_limit is not None and depth > self.depth_limit:
            self._fold_branches(children, parts, depth)
            return
        for position in range(len(children) - 1, -1, -1):
            last = position == len(children) - 1
            lead = (*parts, "└─ " if last else "├─ ")
            indent = (*parts, "   " if last else "│  ")
            stack.append((children[position], lead, indent, depth))

    def _fold_branches(self, children: list[SessionTreeNode], parts: tuple[str, ...], depth: int) -> None:
        """One line for the branches deeper than the ``depth`` asked for: how many entries."""
        count = 0
        todo = list(children)
        while todo:
            node = todo.pop()
            if id(node) in self.seen or id(node) in self.trunk:
                continue
            self.seen.add(id(node))
            count += self.shown(node)
            todo.extend(node.children)
        branches = "side branch" if len(children) == 1 else "side branches"
        text = f"in {len(children)} {branches}"
        self.lines.append(TreeLine(_prefix((*parts, "└─ ")), None, "fold", text, hidden=count, depth=depth))


def _trunk(roots: Sequence[SessionTreeNode], branch: Sequence[Entry]) -> list[SessionTreeNode]:
    """The tree nodes of ``branch`` (entries from a root down), matched by id level by level (a
    duplicated id elsewhere in the tree is not mistaken for one of them)."""
    nodes: list[SessionTreeNode] = []
    candidates: Sequence[SessionTreeNode] = roots
    for entry in branch:
        entry_id = entry.get("id")
        found = next((node for node in candidates if node.entry.get("id") == entry_id), None)
        if found is None:
            break
        nodes.append(found)
        candidates = found.children
    return nodes


def tree_lines(
    session: SessionManager,
    *,
    full: bool = False,
    text_limit: int | None = 200,
    depth: int | None = None,
    around: str | None = None,
    all_entries: bool = False,
) -> list[TreeLine]:
    """Every entry of ``session`` as a :class:`TreeLine`, in tree order (children by time).

    The session's leaf is marked and its path flagged ``on_current_branch``; that path is the trunk,
    or, with ``around`` (an entry id), the branch through that entry (down to the leaf when the
    entry is on the current branch, else following its newest children). ``full`` disables
    folding; ``text_limit`` cuts each summary (``None``: never); ``depth`` folds side branches
    deeper than that many levels (0: only the trunk); ``all_entries`` shows import bookkeeping.
    """
    leaf = session.get_leaf_id()
    current = session.get_branch(leaf) if leaf is not None else []
    roots = session.get_tree()
    trunk_entries: Sequence[Entry] = current
    if around is not None and around not in {str(e.get("id")) for e in current}:
        trunk_entries = session.get_branch(around)
    trunk = _trunk(roots, trunk_entries)
    if around is not None and trunk_entries is not current and trunk:
        node = trunk[-1]
        on_path = {id(n) for n in trunk}
        while node.children and id(node.children[-1]) not in on_path:  # newest child: sorted by time
            node = node.children[-1]
            on_path.add(id(node))
            trunk.append(node)
    marked = leaf
    if not all_entries and current:
        # The leaf of an import is its bookkeeping entry: mark the last entry shown instead.
        marked = next((str(e.get("id")) for e in reversed(current) if not is_import_bookkeeping(e)), leaf)
    builder = _Builder(
        current,
        marked,
        full=full,
        text_limit=text_limit,
        depth=depth,
        all_entries=all_entries,
        keep_id=around,
    )
    return builder.build(roots, trunk)
