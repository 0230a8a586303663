"""The import graph of ``src/``: no circle anywhere (issue 23 item 5), type-only imports included.

The layer contracts themselves are import-linter's (``pyproject.toml``, ``lint-imports`` in
``make lint`` and ``.ci/run``); this test adds what a layers contract does not see: a circle of
modules inside one package.
"""

from __future__ import annotations

import grimp
import pytest


def _circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(graph.find_modules_directly_imported_by(root)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, pending = work[-1]
            if pending:
                child = pending.pop()
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, sorted(graph.find_modules_directly_imported_by(child))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("omp_session", exclude_type_checking_imports=False)


def test_no_module_of_the_package_is_in_an_import_circle(graph: grimp.ImportGraph) -> None:
    assert _circles(graph) == []


def test_the_circle_finder_finds_a_circle(graph: grimp.ImportGraph) -> None:
    # The check above can fail: an import from the bottom of the store back up to its file backend
    # closes a circle it reports (members named), as one from a module to itself does not.
    graph.add_import(importer="omp_session.store.blobs", imported="omp_session.store.file")
    try:
        circles = _circles(graph)
    finally:
        graph.remove_import(importer="omp_session.store.blobs", imported="omp_session.store.file")
    assert any({"omp_session.store.blobs", "omp_session.store.file"} <= set(circle) for circle in circles)
    assert _circles(graph) == []
