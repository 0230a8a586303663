"""The one progress bar of the commands that can run for seconds (issue 30 item 3): ``export``,
``check --all``, ``migrate --all``, ``push`` and ``pull``.

A rich bar on stderr, drawn only when stderr is a terminal and gone when the work ends (a pipe, a
log file or ``--json`` output never sees it), so what a command prints stays the same.

Internal module (a part of the command line, which is the interface); not part of the public API.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from omp_session.cli._common import console, is_terminal

__all__ = ["Advance", "progress_bar"]

#: ``advance(done, total, what)``: ``done`` of ``total`` steps, the step now at work named ``what``.
Advance = Callable[[int, int, str], None]


@contextmanager
def progress_bar(verb: str, *, hidden: bool = False) -> Iterator[Advance]:
    """A bar ``<verb> <what> ━━━━ done/total 0:00:03`` on stderr while the block runs; ``hidden``
    (``--json``) or a stderr that is not a terminal draws nothing."""
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
