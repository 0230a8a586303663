"""``omp-session pick``: choose a session in the terminal, see its transcript, resume it (issue 30 #4).

The Textual app lays out what :mod:`omp_session.tools.picker` computes: a search box (every key
typed narrows the list), the sessions (arrows move, the preview follows), the transcript preview.
Enter prints the chosen session's path on stdout once the screen is restored (so
``omp-session show "$(omp-session pick)"`` works); ``r`` (``ctrl+r`` from the search box) runs
``omp --resume <id>`` when omp is on ``PATH``, else shows that command; Escape quits with nothing.

Internal module (a command of ``omp-session``, which is the interface); not part of the public API.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from typing import Any, ClassVar

import click

from omp_session.cli._common import CliError, is_terminal, state
from omp_session.store import SessionStorage
from omp_session.tools.catalog import Catalog
from omp_session.tools.listing import list_all_sessions
from omp_session.tools.picker import PickRow, matching, pick_rows, preview, resume_command

__all__ = ["pick"]

_KIND_STYLES = {"user": "bold green", "assistant": "bold blue", "tool result": "dim"}


def _matching_in_thread(rows: list[PickRow], query: str, storage: SessionStorage | None) -> list[PickRow]:
    """:func:`matching` with a catalog of this thread's own (SQLite connections stay in the thread
    that made them)."""
    with Catalog(storage=storage) as catalog:
        return matching(rows, query, catalog)


def _app(rows: list[PickRow], storage: SessionStorage | None) -> Any:
    """The picker app (Textual imported here: the rest of the command line never needs it)."""
    from rich.markup import escape
    from rich.text import Text
    from textual import work
    from textual.app import App, ComposeResult
    from textual.binding import Binding, BindingType
    from textual.containers import Horizontal, VerticalScroll
    from textual.widgets import Footer, Input, OptionList, Static
    from textual.widgets.option_list import Option

    class Picker(App[tuple[str, PickRow] | None]):
        CSS = """
        #query { height: 3; width: 1fr; }
        #panes { height: 1fr; }
        #sessions { width: 45%; height: 1fr; }
        #preview-box { width: 1fr; height: 1fr; padding: 0 1; }
        #status { height: 1; color: $warning; }
        """
        BINDINGS: ClassVar[list[BindingType]] = [
            Binding("escape", "quit", "Quit"),
            Binding("enter", "choose", "Print path", priority=True),
            Binding("ctrl+r", "resume", "Resume in omp", priority=True),
            # Not a priority: typed in the search box, "r" is text; on the list (Tab) it resumes.
            Binding("r", "resume", "Resume", show=False),
            Binding("down", "move(1)", "Next", show=False, priority=True),
            Binding("up", "move(-1)", "Previous", show=False, priority=True),
        ]

        def __init__(self) -> None:
            super().__init__()
            self.shown: list[PickRow] = list(rows)

        def compose(self) -> ComposeResult:
            yield Input(placeholder="Type to search sessions (title, cwd, id, text)", id="query")
            with Horizontal(id="panes"):
                yield OptionList(*self._options(), id="sessions")
                with VerticalScroll(id="preview-box"):
                    yield Static(id="preview")
            yield Static(id="status")
            yield Footer()

        def _options(self) -> list[Option]:
            return [
                Option(Text.assemble((row.when, "dim"), "  ", row.title, "\n", (row.cwd, "dim")), id=row.path)
                for row in self.shown
            ]

        def on_mount(self) -> None:
            self.query_one("#query", Input).focus()
            self._highlight(0)

        def _list(self) -> OptionList:
            return self.query_one("#sessions", OptionList)

        def _current(self) -> PickRow | None:
            index = self._list().highlighted
            return self.shown[index] if index is not None and index < len(self.shown) else None

        def _highlight(self, index: int) -> None:
            listing = self._list()
            if self.shown:
                listing.highlighted = max(0, min(index, len(self.shown) - 1))
            self._show_preview()

        def _show_preview(self) -> None:
            row = self._current()
            target = self.query_one("#preview", Static)
            if row is None:
                target.update(Text("No session matches.", style="italic"))
                return
            text = Text()
            text.append(f"{row.title}\n", style="bold")
            text.append(f"{row.session_id} · {row.cwd}\n\n", style="dim")
            try:
                items = preview(row.path, storage=storage)
            except Exception as exc:  # a damaged file: say so in the pane, never crash the picker
                text.append(f"cannot read {row.path}: {exc}", style="red")
                items = []
            for kind, line in items:
                text.append(f"{kind}: ", style=_KIND_STYLES.get(kind, "bold"))
                text.append(line + "\n")
            target.update(text)
            self.query_one("#preview-box", VerticalScroll).scroll_end(animate=False)

        def on_input_changed(self, event: Input.Changed) -> None:
            # In a worker thread: the first full-text query brings the store's catalog up to date,
            # which can take a while on a big store; the screen answers keys meanwhile.
            self.query_one("#status", Static).update("searching…")
            self._search(event.value)

        @work(thread=True, exclusive=True)
        def _search(self, query: str) -> None:
            found = _matching_in_thread(rows, query, storage)
            self.call_from_thread(self._show_rows, query, found)

        def _show_rows(self, query: str, found: list[PickRow]) -> None:
            if query != self.query_one("#query", Input).value:
                return  # an older query's answer, come late
            self.shown = found
            self.query_one("#status", Static).update("")
            listing = self._list()
            listing.clear_options()
            listing.add_options(self._options())
            self._highlight(0)

        def on_option_list_option_highlighted(self, _event: OptionList.OptionHighlighted) -> None:
            self._show_preview()

        def on_option_list_option_selected(self, _event: OptionList.OptionSelected) -> None:
            self.action_choose()

        def action_move(self, step: int) -> None:
            index = self._list().highlighted
            self._highlight((index if index is not None else -1) + step)

        def action_choose(self) -> None:
            row = self._current()
            if row is not None:
                self.exit(("path", row))

        def action_resume(self) -> None:
            row = self._current()
            if row is None:
                return
            if shutil.which("omp") is None:
                command = " ".join(resume_command(row))
                self.query_one("#status", Static).update(escape(f"omp is not on PATH; to resume: {command}"))
                return
            self.exit(("resume", row))

    return Picker()


@contextlib.contextmanager
def _terminal_as_stdout() -> Iterator[None]:
    """While the app runs, file descriptor 1 is the terminal (stderr's) even when stdout is
    captured (``$(omp-session pick)``): Textual draws on stderr but measures the screen, at start
    and on every resize, through stdout (``shutil.get_terminal_size``), and would draw a captured
    picker at 80×24 whatever the terminal. The path is printed after, to the real stdout."""
    if is_terminal(sys.stdout):
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


@click.command(epilog='\b\nExamples:\n  omp-session pick\n  omp-session show "$(omp-session pick)"')
@click.pass_context
def pick(ctx: click.Context) -> None:
    """Pick a session in the terminal: type to search, arrows to move (the transcript preview
    follows), Enter prints its path, r (or ctrl+r) resumes it with `omp --resume <id>`.

    Needs the [tui] extra (Textual) and a terminal.
    """
    if not (is_terminal(sys.stdin) and is_terminal(sys.stderr)):
        raise CliError("pick needs a terminal (stdin and stderr); use `omp-session list` in scripts")
    cli = state(ctx)
    rows = pick_rows(list_all_sessions(cli.root, storage=cli.storage))
    if not rows:
        raise CliError(f"{cli.root}: no sessions to pick from")
    with _terminal_as_stdout():
        result = _app(rows, cli.storage).run()
    if result is None:
        return
    action, row = result
    if action == "path":
        click.echo(row.path)
        return
    command = resume_command(row)
    click.echo(" ".join(command), err=True)
    # omp is interactive: on the terminal, even when our stdout is captured ($(omp-session pick)).
    terminal = None if is_terminal(sys.stdout) else sys.stderr
    ctx.exit(subprocess.run(command, check=False, stdout=terminal).returncode)
