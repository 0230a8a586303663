"""The ``omp-session`` command line: a thin layer over the library (see docs/cli.md).

Every command calls one library function and formats its result; ``--json`` prints the same data
for scripts. Errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import atexit
import gc
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
    open_database,
)
from omp_session.cli._progress import catalog_progress
from omp_session.cli.analytics import export_store_command, sql_command
from omp_session.cli.context import context
from omp_session.cli.edit import fork, label
from omp_session.cli.export import export
from omp_session.cli.import_command import import_command
from omp_session.cli.listing import list_command
from omp_session.cli.maintenance import check, migrate, repair
from omp_session.cli.mcp_command import mcp_command
from omp_session.cli.pick import pick
from omp_session.cli.search import search
from omp_session.cli.secrets import secrets
from omp_session.cli.serve import serve
from omp_session.cli.show import show
from omp_session.cli.stats import stats
from omp_session.cli.sync import pull, push
from omp_session.cli.tree import tree
from omp_session.cli.usage import usage
from omp_session.errors import SessionError
from omp_session.store.configured import storage_configured
from omp_session.store.paths import sessions_root

__all__ = ["main"]

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


class _Group(click.Group):
    """Turns library and OS errors into one-line messages with exit status 2."""

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
        ctx.with_resource(storage_configured(database))  # every command works on the database
        ctx.obj = CliState(root, database)
        return
    ctx.obj = CliState(Path(store) if store is not None else root)


#: Commands that draw no catalog bar: a terminal UI, and servers whose reads run in threads.
_NO_CATALOG_BAR = frozenset({"pick", "serve", "mcp"})

for _command in (
    list_command,
    pick,
    show,
    tree,
    context,
    export,
    stats,
    usage,
    search,
    check,
    repair,
    migrate,
    fork,
    label,
    serve,
    mcp_command,
    import_command,
    push,
    pull,
    secrets,
    export_store_command,
    sql_command,
):
    main.add_command(_command)
