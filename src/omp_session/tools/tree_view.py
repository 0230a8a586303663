"""The session tree as lines of text: box-drawing connectors, one line per entry, long runs folded.

A linear run (each entry with exactly one child) stays at one indentation, so a 1000-entry
conversation does not walk off the screen; only branch points indent::

    u1 user: Write a sort function
    a1 assistant: def sort(xs): ...
    ├─ u2 user: Make it a bubble sort
    │  a2 assistant: Bubble sort implemented.
    └─ b1 branch summary: Tried bubble sort
       u3 user: Use merge sort instead

Unless ``full`` is set, stretches of at least :data:`FOLD_MIN` consecutive "uninteresting"
entries inside a run become one ``… N entries`` line. Never folded: the first and last entry of a
run (roots, branch points, tips), labelled entries, the current leaf, user messages, compactions
and branch summaries — the landmarks a reader navigates by. An entry reached a second time (a
duplicated id hangs under two parents) is printed as ``<id> (shown above)`` with ``kind="repeat"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from omp_session.manager import SessionManager
from omp_session.model.tree import SessionTreeNode
from omp_session.tools.summary import TREE_KINDS, entry_summary

Entry = dict[str, Any]

__all__ = ["FOLD_MIN", "TreeLine", "render_tree_line", "tree_lines"]

#: The shortest stretch worth folding (folding two lines into one saves nothing).
FOLD_MIN = 3

_LANDMARKS = frozenset({"user", *TREE_KINDS.values()})


@dataclass(frozen=True)
class TreeLine:
    """One printed line: an entry, ``hidden`` folded entries (``kind == "fold"``) or a repeat."""

    prefix: str
    entry_id: str | None
    kind: str
    text: str
    label: str | None = None
    is_leaf: bool = False
    on_current_branch: bool = False
    hidden: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def render_tree_line(line: TreeLine, text: str | None = None) -> str:
    """Plain-text form of a line (the CLI adds colour around the same pieces); ``text`` in place of
    the line's own text, if given."""
    text = line.text if text is None else text
    if line.kind == "fold":
        return f"{line.prefix}… {line.hidden} entries folded"
    if line.kind == "repeat":
        return f"{line.prefix}{line.entry_id} {text}"
    body = text if line.kind == "event" else f"{line.kind}: {text}"
    label = f" [{line.label}]" if line.label else ""
    leaf = "  ◀ leaf" if line.is_leaf else ""
    return f"{line.prefix}{line.entry_id or '?'} {body}{label}{leaf}"


class _Builder:
    def __init__(
        self, current: Sequence[Entry], leaf_id: str | None, full: bool, text_limit: int | None
    ) -> None:
        self.leaf_id = leaf_id
        self.full = full
        self.text_limit = text_limit
        self.current = {str(e.get("id")) for e in current}
        self.seen: set[int] = set()
        self.lines: list[TreeLine] = []

    def line(self, node: SessionTreeNode, prefix: str) -> TreeLine:
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
        )

    def run(self, start: SessionTreeNode) -> list[SessionTreeNode]:
        """``start`` and its single-child descendants, up to a tip or a branch point."""
        nodes = [start]
        self.seen.add(id(start))
        node = start
        while len(node.children) == 1 and id(node.children[0]) not in self.seen:
            node = node.children[0]
            self.seen.add(id(node))
            nodes.append(node)
        return nodes

    def emit_run(self, nodes: list[SessionTreeNode], lead: str, indent: str) -> None:
        lines = [self.line(node, indent) for node in nodes]
        lines[0] = TreeLine(**{**lines[0].to_dict(), "prefix": lead})
        if self.full:
            self.lines.extend(lines)
            return
        stretch: list[TreeLine] = []
        for position, line in enumerate(lines):
            if self._keep(line, position, len(lines)):
                self._flush(stretch, indent)
                self.lines.append(line)
            else:
                stretch.append(line)
        self._flush(stretch, indent)

    @staticmethod
    def _keep(line: TreeLine, position: int, count: int) -> bool:
        edge = position in (0, count - 1)
        return edge or line.is_leaf or line.label is not None or line.kind in _LANDMARKS

    def _flush(self, stretch: list[TreeLine], indent: str) -> None:
        if len(stretch) >= FOLD_MIN:
            self.lines.append(TreeLine(indent, None, "fold", "", hidden=len(stretch)))
        else:
            self.lines.extend(stretch)
        stretch.clear()

    def build(self, roots: Sequence[SessionTreeNode]) -> list[TreeLine]:
        # Several roots are drawn as branches of an invisible common root.
        stack: list[tuple[SessionTreeNode, str, str]] = []
        self._push_children(stack, list(roots), "", branch=len(roots) > 1)
        while stack:
            node, lead, indent = stack.pop()
            if id(node) in self.seen:
                # Duplicate ids hang one node under several parents (§6.4): point back to it.
                self.lines.append(TreeLine(lead, self.line(node, lead).entry_id, "repeat", "(shown above)"))
                continue
            nodes = self.run(node)
            self.emit_run(nodes, lead, indent)
            children = nodes[-1].children
            self._push_children(stack, children, indent, branch=True)
        return self.lines

    @staticmethod
    def _push_children(
        stack: list[tuple[SessionTreeNode, str, str]],
        children: list[SessionTreeNode],
        indent: str,
        branch: bool,
    ) -> None:
        for position in range(len(children) - 1, -1, -1):
            last = position == len(children) - 1
            if branch:
                lead = indent + ("└─ " if last else "├─ ")
                child_indent = indent + ("   " if last else "│  ")
            else:
                lead = child_indent = indent
            stack.append((children[position], lead, child_indent))


def tree_lines(
    session: SessionManager, *, full: bool = False, text_limit: int | None = 200
) -> list[TreeLine]:
    """Every entry of ``session`` as a :class:`TreeLine`, in tree order (children by time).

    The session's leaf is marked and its path flagged ``on_current_branch``; ``full`` disables
    folding; ``text_limit`` cuts each summary (``None``: never).
    """
    leaf = session.get_leaf_id()
    current = session.get_branch(leaf) if leaf is not None else []
    return _Builder(current, leaf, full, text_limit).build(session.get_tree())
