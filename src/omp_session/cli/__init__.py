"""The ``omp-session`` command line: a thin layer over the library (see docs/cli.md).

Every command calls one library function and formats its result; ``--json`` prints the same data
for scripts. Errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import os
import re
from pathlib import Path
from typing import Any

import click

from omp_session import __version__
from omp_session._extras import missing_extra_message
from omp_session.cli._common import (
    WRITING_COMMANDS,
    CliError,
    CliState,
    display_safe_streams,
    is_database_url,
    leave_objects_to_exit,
    open_database,
)
from omp_session.cli._progress import catalog_progress
from omp_session.errors import SessionError
from omp_session.store.paths import sessions_root

__all__ = ["leave_objects_to_exit", "main"]

EXAMPLES = """\b
Examples:
  omp-session list --all --limit 10       newest sessions of every project
  omp-session pick                        choose a session (type to search), resume it in omp
  omp-session show 15d0c6a0               a transcript (id, id prefix or file path)
  omp-session tree 15d0c6a0               the tree of entries, branches and labels
  omp-session context 15d0 --llm          what the model sees at the leaf, as JSON
  omp-session export 15d0 -f md -o s.md   Markdown of the current branch
  omp-session stats --all                 tokens, cost and tool calls of every session
  omp-session usage model --all           tokens and cost by model (or daily, project, ...)
  omp-session sql --all "select ..."      DuckDB SQL over sessions, entries, usage
  omp-session search "merge sort" --all   find text in every session
  omp-session check --all                 report damaged files (exit status 1 if any)
  omp-session secrets scan --all          find credentials in every session (never printed)
  omp-session export 15d0 --redact -f html -o s.html   a page to share, secrets masked
  omp-session repair 15d0c6a0             fix what can be fixed, keeping a backup
  omp-session migrate --all --dry-run     which files are older than version 3
  omp-session fork 15d0 --leaf a0000003   the branch to an entry as a new session file
  omp-session label 15d0 u0000001 start   label an entry
  omp-session serve                       browse sessions in a web browser
  omp-session mcp                         serve the sessions to an agent over MCP (stdio)
  omp-session import claude --all         import Claude Code sessions (also codex, pi)
  omp-session --store postgresql://h/db push   copy your session files into a database
  omp-session --store postgresql://h/db serve  browse the sessions of a database

\b
Exit status: 0 success, 1 problems found (check), 2 usage or other error.
Shell completion (bash; zsh and fish likewise with zsh_source / fish_source):
  eval "$(_OMP_SESSION_COMPLETE=bash_source omp-session)"
"""


_EXIT_HOOK: list[bool] = []


def _no_final_collection() -> None:
    """At exit, leave the objects of the command to the operating system (``gc.freeze``: the
    collection of interpreter shutdown skips them).

    What a command loaded dies with the process, but the last collection walks every object still
    alive: after ``show`` of a 50,000-entry session about 0.16 s of CPU (0.4 s while the lazy index
    still held reference cycles), for memory the operating system takes back anyway (issue 12 #6).
    Objects outside cycles are still freed, and files are closed by their ``with`` blocks first."""
    gc.freeze()


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror and exc.filename:
        text = f"{exc.filename}: {exc.strerror}"
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(text.split())


#: Each command's module and attribute. A command is imported when it runs (or when ``--help``
#: lists them all): a process imports only its own command, not the viewer, the importers and
#: the terminal UI of the others (issue 23's interleaved bench: about 0.1 s of every start).
_COMMANDS: dict[str, tuple[str, str]] = {
    "list": ("listing", "list_command"),
    "pick": ("pick", "pick"),
    "show": ("show", "show"),
    "tree": ("tree", "tree"),
    "context": ("context", "context"),
    "export": ("export", "export"),
    "stats": ("stats", "stats"),
    "usage": ("usage", "usage"),
    "search": ("search", "search"),
    "check": ("maintenance", "check"),
    "repair": ("maintenance", "repair"),
    "migrate": ("maintenance", "migrate"),
    "fork": ("edit", "fork"),
    "label": ("edit", "label"),
    "serve": ("serve", "serve"),
    "mcp": ("mcp_command", "mcp_command"),
    "import": ("import_command", "import_command"),
    "push": ("sync", "push"),
    "pull": ("sync", "pull"),
    "secrets": ("secrets", "secrets"),
    "export-store": ("analytics", "export_store_command"),
    "sql": ("analytics", "sql_command"),
}


class _Group(click.Group):
    """Loads each command when it is used, and turns library and OS errors into one-line
    messages with exit status 2."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in _COMMANDS:
            return None
        if cmd_name not in self.commands:
            module, attribute = _COMMANDS[cmd_name]
            command = getattr(importlib.import_module(f"omp_session.cli.{module}"), attribute)
            assert isinstance(command, click.Command) and command.name == cmd_name, cmd_name
            self.commands[cmd_name] = command
        return self.commands[cmd_name]

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.Abort, click.ClickException, BrokenPipeError):
            raise  # click shows these itself (and handles a closed pipe quietly)
        except re.error as exc:
            raise CliError(f"invalid regular expression: {exc}") from None
        except (SessionError, OSError) as exc:
            raise CliError(_one_line(exc)) from None
        except Exception as exc:
            # An optional dependency of this command (the viewer's, say): name the extra to install.
            command = f"omp-session {ctx.invoked_subcommand}" if ctx.invoked_subcommand else "omp-session"
            if isinstance(exc, ImportError) and (message := missing_extra_message(exc, command)):
                raise CliError(message) from None
            if os.environ.get("OMP_SESSION_DEBUG"):
                raise
            raise CliError(
                f"internal error: {type(exc).__name__}: {_one_line(exc)} "
                "(set OMP_SESSION_DEBUG=1 to see the traceback)"
            ) from None


@click.group(
    cls=_Group,
    epilog=EXAMPLES,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--dir",
    "sessions_dir",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="OMP_SESSION_DIR",
    help="Sessions root to use instead of omp's (default: $PI_CODING_AGENT_DIR/sessions, "
    "~/.omp/agent/sessions, or $XDG_DATA_HOME/omp/sessions when that exists).",
)
@click.option(
    "--store",
    "store",
    envvar="OMP_SESSION_STORE",
    metavar="DIR|URL",
    help="Where sessions live: a sessions root directory (like --dir), or a PostgreSQL database "
    "(postgresql://user@host/db) holding omp's omp_session_files table; every command, serve "
    "included, then reads and writes the database (paths under --dir, default omp's root).",
)
@click.option(
    "--table",
    "table",
    envvar="OMP_SESSION_TABLE",
    default="omp_session_files",
    show_default=True,
    help="The table of a database --store.",
)
@click.option(
    "--quiet",
    "-q",
    is_flag=True,
    envvar="OMP_SESSION_QUIET",
    help="Do not report the files a store-wide command skipped (not sessions, unreadable).",
)
@click.version_option(__version__, "-V", "--version", prog_name="omp-session")
@click.pass_context
def main(ctx: click.Context, sessions_dir: Path | None, store: str | None, table: str, quiet: bool) -> None:
    """Find, read, share and check omp coding-agent sessions.

    A SESSION is a session file path, a session id, or a unique prefix of an id or file name
    (matched as omp's --resume does: the current project's sessions first, then all).
    """
    display_safe_streams()
    if not _EXIT_HOOK:  # once per process (tests invoke many commands in one)
        atexit.register(_no_final_collection)
        _EXIT_HOOK.append(True)
    # Each command that reads the store catalog shows its catch-up (the first run over a history);
    # not those that own the terminal or serve for hours (their catalog reads run in threads).
    if ctx.invoked_subcommand not in _NO_CATALOG_BAR:
        ctx.with_resource(catalog_progress())
    root = sessions_dir if sessions_dir is not None else sessions_root()
    if store is not None and is_database_url(store):
        database = open_database(store, table, writes=ctx.invoked_subcommand in WRITING_COMMANDS)
        ctx.call_on_close(database.close)
        ctx.obj = CliState(root, database)  # every command takes its store from here
        return
    ctx.obj = CliState(Path(store) if store is not None else root)


#: Commands that draw no catalog bar: a terminal UI, and servers whose reads run in threads.
_NO_CATALOG_BAR = frozenset({"pick", "serve", "mcp"})
