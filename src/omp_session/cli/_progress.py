"""The one progress bar of the commands that can run for seconds (issue 30 item 3): ``export``,
``check --all``, ``migrate --all``, ``push`` and ``pull``, and the store catalog's catch-up
(``catalog_progress``: every command that reads it).

A rich bar on stderr, drawn only when stderr is a terminal and gone when the work ends (a pipe, a
log file or ``--json`` output never sees it), so what a command prints stays the same.

Internal module (a part of the command line, which is the interface); not part of the public API.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager

from omp_session.cli._common import console, is_terminal

__all__ = ["Advance", "catalog_progress", "progress_bar"]

#: ``advance(done, total, what)``: ``done`` of ``total`` steps, the step now at work named ``what``.
Advance = Callable[[int, int, str], None]


@contextmanager
def progress_bar(verb: str, *, hidden: bool = False) -> Iterator[Advance]:
    """A bar ``<verb> <what> ━━━━ done/total 0:00:03`` on stderr while the block runs; ``hidden``
    (``--json``) or a stderr that is not a terminal draws nothing."""
    # (Imported here: every command enters ``catalog_progress``, few draw a bar; 36 ms.)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    out = console(stderr=True)
    columns = (
        TextColumn(f"{verb} {{task.description}}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    shown = not hidden and is_terminal(out.file)
    # redirect_stdout off: rich would send what the command prints to stdout through the bar's
    # console, to stderr; the commands print their results after the bar instead.
    with Progress(*columns, console=out, transient=True, disable=not shown, redirect_stdout=False) as bar:
        task = bar.add_task("", total=None)

        def advance(done: int, total: int, what: str) -> None:
            bar.update(task, completed=done, total=total, description=what)

        yield advance


#: A catalog catch-up of fewer sessions than this draws no bar (it takes well under a second).
_CATALOG_BAR_FROM = 20


@contextmanager
def catalog_progress() -> Iterator[None]:
    """While the block runs, a store catalog that reads the sessions changed since it last looked
    (:data:`~omp_session.tools.catalog.REFRESH_PROGRESS`) shows a ``cataloguing`` bar, when there
    are enough of them to take a while (the first run over a whole history)."""
    from omp_session.tools.catalog import REFRESH_PROGRESS

    with ExitStack() as stack:
        drawn: list[Advance] = []

        def report(done: int, total: int, name: str) -> None:
            if not drawn:
                if total < _CATALOG_BAR_FROM or done:
                    return
                drawn.append(stack.enter_context(progress_bar("cataloguing")))
            drawn[0](done, total, name)

        token = REFRESH_PROGRESS.set(report)
        try:
            yield
        finally:
            REFRESH_PROGRESS.reset(token)
