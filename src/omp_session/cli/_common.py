"""What every command shares: the sessions root, SESSION arguments, consoles, JSON output, errors."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
import orjson
from click.shell_completion import CompletionItem

from omp_session.format.codec import DISPLAY_ERRORS, escape_lone_surrogates
from omp_session.manager.runtime import Runtime
from omp_session.store import SessionStorage
from omp_session.store.paths import blobs_dir_near, sessions_root
from omp_session.tools.listing import session_files
from omp_session.tools.resolve import project_dir, resolve_session, session_candidates

if TYPE_CHECKING:
    from rich.console import Console

    from omp_session.store.postgres import PostgresStorage

__all__ = [
    "EXIT_ERROR",
    "EXIT_PROBLEMS",
    "WRITING_COMMANDS",
    "CliError",
    "CliState",
    "console",
    "emit_json",
    "human_size",
    "is_database_url",
    "is_terminal",
    "json_option",
    "leaf_option",
    "leave_objects_to_exit",
    "leave_to_exit",
    "open_database",
    "report_skipped",
    "require_one",
    "session_argument",
    "state",
    "write_stdout_bytes",
]

F = TypeVar("F", bound=Callable[..., Any])

#: Exit status of ``check`` when it found problems.
EXIT_PROBLEMS = 1
#: Exit status of every error: bad usage, a SESSION that cannot be found or read, an I/O failure.
EXIT_ERROR = 2


class CliError(click.ClickException):
    """An error shown as one line on stderr, exit status 2."""

    exit_code = EXIT_ERROR

    def show(self, file: Any = None) -> None:
        click.echo(f"omp-session: error: {self.format_message()}", err=True)


def is_database_url(store: str) -> bool:
    """Whether a ``--store`` value names a PostgreSQL database rather than a directory."""
    return store.startswith(("postgresql://", "postgres://"))


#: The commands that write to a database ``--store``: only they create its table when missing.
WRITING_COMMANDS = frozenset({"push", "fork", "label"})


def open_database(url: str, table: str, *, writes: bool = True) -> PostgresStorage:
    """The PostgreSQL store at ``url`` (connected now, so a bad URL fails before any command).
    Unless ``writes``, nothing is created: a missing table is an error (issue 25)."""
    from omp_session.store.postgres import PostgresStorage

    try:
        return PostgresStorage(url, table, create_table=writes)
    except ValueError as exc:
        raise CliError(str(exc)) from None


@dataclass
class CliState:
    """Global options, available to every command as ``ctx.obj``: the one object a command
    takes its store from (nothing configures a store for the whole process)."""

    root: Path
    #: The database of ``--store postgresql://...`` (then every command reads and writes it).
    database: PostgresStorage | None = None
    #: What the commands' sessions are opened with: its store is :attr:`database` (else files).
    runtime: Runtime = field(init=False)

    def __post_init__(self) -> None:
        self.runtime = Runtime(store=self.database)

    @property
    def storage(self) -> SessionStorage | None:
        """Where the sessions live: the ``--store`` database, else ``None`` (session files)."""
        return self.runtime.store

    def require_database(self, command: str) -> PostgresStorage:
        if self.database is None:
            raise CliError(f"{command} needs a database: --store postgresql://... (or OMP_SESSION_STORE)")
        return self.database

    @property
    def blobs(self) -> Path:
        """The blob store beside the sessions root (see :func:`omp_session.store.paths.blobs_dir_near`)."""
        return blobs_dir_near(self.root)

    def resolve(self, session: str) -> Path:
        """A SESSION argument (path, id or unique prefix) → an existing file."""
        return resolve_session(session, self.root, storage=self.storage)

    def project_dir(self, cwd: str | None) -> Path:
        """The session directory of ``cwd`` (default: the process cwd) under the root."""
        return project_dir(cwd if cwd is not None else os.getcwd(), self.root)

    def session_files(self, *, all_projects: bool, cwd: str | None) -> list[Path]:
        """Files for ``--all`` (every project) or for one project (``--cwd``, default here)."""
        if all_projects:
            return list(session_files(self.root, storage=self.storage))
        return list(session_files(directory=self.project_dir(cwd), storage=self.storage))


def state(ctx: click.Context) -> CliState:
    """The :class:`CliState` of the running command (created on first use)."""
    found = ctx.find_object(CliState)
    if found is None:
        found = CliState(sessions_root())
        ctx.find_root().obj = found
    return found


def _complete_session(ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Shell completion of SESSION: ids of the sessions under the root (file paths when typing one)."""
    if "/" in incomplete or incomplete.startswith("."):
        return [CompletionItem(incomplete, type="file")]
    root_dir = ctx.find_root().params.get("sessions_dir")
    root = Path(root_dir) if root_dir else sessions_root()
    # (completion runs before the --store callback: it offers the files' ids)
    candidates = session_candidates(session_files(root, storage=None), storage=None)
    return [
        CompletionItem(c.id, help=c.path.parent.name)
        for c in candidates
        if c.id.lower().startswith(incomplete.lower())
    ]


def session_argument(name: str = "session", **kwargs: Any) -> Callable[[F], F]:
    """The SESSION argument: a path, a session id or a unique id prefix, with shell completion."""
    return click.argument(name, metavar="SESSION", shell_complete=_complete_session, **kwargs)


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
leaf_option = click.option(
    "--leaf", "leaf_id", metavar="ID", help="Use the branch ending at this entry (id or unique prefix)."
)


#: orjson hands these to ``default`` (``str``), as ``json.dumps(default=str)`` treats them.
_JSON_OPTIONS = (
    orjson.OPT_INDENT_2
    | orjson.OPT_NON_STR_KEYS
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
)


def emit_json(value: Any) -> None:
    """Print ``value`` as indented JSON (non-ASCII kept as is)."""
    try:
        # orjson: the stdlib's indented encoder is pure Python (0.25 s for a 1.5 MB context).
        # The text is the same but for the spelling of some small floats (2.5e-05 as 0.000025).
        encoded = orjson.dumps(value, default=str, option=_JSON_OPTIONS | orjson.OPT_APPEND_NEWLINE)
    except TypeError:  # orjson.JSONEncodeError: a lone surrogate, an integer beyond 64 bits
        # Lone surrogates stay exact, as the \\udxxx escapes omp writes (issue 11 item 5).
        text = escape_lone_surrogates(json.dumps(value, indent=2, ensure_ascii=False, default=str))
        encoded = (text + "\n").encode()
    write_stdout_bytes(encoded)
    leave_to_exit(value)


#: What commands printed, kept alive until the process ends, once the console script has said it
#: ends through ``os._exit`` (``_launcher``; ``None`` in any other process: tests, the viewer).
_LEFT_TO_EXIT: list[object] | None = None


def leave_objects_to_exit() -> None:
    """From now on keep what ``leave_to_exit`` is given: the process ends without tearing it down."""
    global _LEFT_TO_EXIT
    if _LEFT_TO_EXIT is None:
        _LEFT_TO_EXIT = []


def leave_to_exit(value: object) -> None:
    """Keep ``value`` until the process ends, where it ends through ``os._exit`` (issue 26 item 4).

    Freezing the collector at exit skips the last collection, but what a command built is still
    freed one object at a time as soon as its last reference goes, which for the output of
    ``context`` is when the command returns: about 0.12 s of CPU for the 100,000 messages of a
    50 MB session, for memory the operating system takes back anyway. Elsewhere (a test's
    ``CliRunner``, a long-lived server) nothing is kept."""
    if _LEFT_TO_EXIT is not None:
        _LEFT_TO_EXIT.append(value)


def write_stdout_bytes(data: bytes) -> None:
    """Write UTF-8 ``data`` to stdout's binary buffer as it is.

    Not through ``click.echo``: that decodes nothing but scans the whole text for escape codes to
    strip (none can be in JSON, which escapes control characters) and encodes it again, 15 ms of
    ``context``'s 1.5 MB (issue 12 #6)."""
    stream = sys.stdout
    buffer = getattr(stream, "buffer", None)
    if buffer is None:  # a text-only stream (a test's, say)
        stream.write(data.decode())
        return
    stream.flush()  # what was written as text comes first
    buffer.write(data)
    buffer.flush()


def display_safe_streams() -> None:
    """Let stdout and stderr show lone surrogates as U+FFFD instead of failing to encode them."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors=DISPLAY_ERRORS)


def console(*, stderr: bool = False) -> Console:
    """A rich console on stdout (or stderr). Colours only on a terminal; no markup or emoji codes
    are interpreted, because session text is data, not rich markup."""
    from rich.console import Console  # (imported by the commands that print through it: 25 ms)

    return Console(stderr=stderr, highlight=False, markup=False, emoji=False, soft_wrap=False)


def is_terminal(stream: Any = None) -> bool:
    """True when ``stream`` (default stdout) is an interactive terminal."""
    stream = stream if stream is not None else sys.stdout
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def human_size(size: float) -> str:
    """``1536`` → ``1.5 KB`` (powers of 1024)."""
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


def _reason_alone(path: object, reason: str) -> str:
    """``reason`` without the path (and line number) it often starts with."""
    text = " ".join(str(reason).split())
    name = str(path)
    if text.startswith(name):
        text = re.sub(r"^:(\d+:)?\s*", "", text[len(name) :])
    return text


def _quiet() -> bool:
    context = click.get_current_context(silent=True)
    return bool(context is not None and context.find_root().params.get("quiet"))


#: File names shown per reason in a summary of skipped files.
_NAMES_SHOWN = 3


def skipped(path: object, reason: str) -> None:
    """Report one file that was skipped (see :func:`report_skipped`)."""
    report_skipped([(path, reason)])


def report_skipped(files: Iterable[tuple[object, str]]) -> None:
    """Say on stderr which files a command skipped, once and summarized (issue 30: a store-wide
    command printed the same seven lines each time): one line per file when there are few, else
    one line per reason naming a few files and how many more. Nothing under ``--quiet``."""
    items = list(files)
    if not items or _quiet():
        return
    if len(items) <= _NAMES_SHOWN:
        for path, reason in items:
            text = " ".join(str(reason).split())
            named = text if text.startswith(str(path)) else f"{path}: {text}"  # "path:line: reason" as is
            click.echo(f"omp-session: skipped {named}", err=True)
        return
    by_reason: dict[str, list[str]] = {}
    for path, reason in items:
        by_reason.setdefault(_reason_alone(path, reason), []).append(str(path))
    for reason, paths in by_reason.items():
        names = ", ".join(os.path.basename(path) for path in paths[:_NAMES_SHOWN])
        more = f" and {len(paths) - _NAMES_SHOWN} more" if len(paths) > _NAMES_SHOWN else ""
        count = f"{len(paths)} file{'s' if len(paths) != 1 else ''}"
        click.echo(f"omp-session: skipped {count} ({reason}): {names}{more}", err=True)
    click.echo("omp-session: (--quiet hides these notes; check --all gives every file's problem)", err=True)


def require_root(root: Path) -> None:
    """A sessions root that does not exist is an error for commands that scan it (issue 13 #7),
    not an empty result."""
    if not root.is_dir():
        raise CliError(f"{root}: no such sessions directory (see --dir)")


def require_one(session: str | None, all_flag: bool, what: str = "a SESSION or --all") -> None:
    """Usage check for commands that take a SESSION or ``--all`` but not both."""
    if (session is None) == (not all_flag):
        raise click.UsageError(f"give {what}, not both" if session else f"give {what}")
