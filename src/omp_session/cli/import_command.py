"""``omp-session import``: Claude Code, Codex and pi sessions as omp sessions (docs/importers.md)."""

from __future__ import annotations

import os
import textwrap
from collections import Counter
from datetime import datetime, timezone
from typing import Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from omp_session.cli._cells import cells, clean
from omp_session.cli._common import EXIT_PROBLEMS, console, emit_json, is_terminal, json_option, state
from omp_session.cli._wrap import cut_line
from omp_session.importers import AGENT_NAMES, SOURCES
from omp_session.importers.batch import Failure, import_many, select
from omp_session.importers.persist import ImportOutcome
from omp_session.importers.stores import make_store
from omp_session.tools.content import message_text
from omp_session.tools.listing import session_info
from omp_session.tools.summary import first_prompt, one_line

EPILOG = """\b
Examples:
  omp-session import claude --all                      every Claude Code session (~/.claude)
  omp-session import codex --all --since 2025-10-01    Codex sessions changed since that day
  omp-session import claude ~/.claude/projects/-w/3f.jsonl   one transcript
  omp-session import pi ~/backup/pi-agent --dry-run    what a pi store copy would import
\b
Importing again is safe: an imported session is not imported twice, and a session that grew gets
only its new entries. Exit status 1 when a session could not be imported."""


def _since(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is not an ISO date (YYYY-MM-DD[THH:MM])", param_hint="--since"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp() * 1000


def _outcome_json(outcome: ImportOutcome | Failure) -> dict[str, Any]:
    if isinstance(outcome, Failure):
        return {
            "source": outcome.info.source,
            "sourcePath": outcome.info.path,
            "status": "failed",
            "reason": outcome.reason,
        }
    stats = outcome.converted.stats
    return {
        "source": outcome.info.source,
        "sourcePath": outcome.info.path,
        "status": outcome.status,
        "session": str(outcome.path) if outcome.path else None,
        "entriesWritten": outcome.added,
        "skippedLines": stats.skipped_lines,
        "deviations": outcome.converted.deviations,
        "reason": outcome.reason or None,
        "dryRun": outcome.dry_run,
    }


@click.command("import", epilog=EPILOG)
@click.argument("source", type=click.Choice(SOURCES))
@click.argument("paths", nargs=-1, type=click.Path(exists=True), metavar="[PATH ...]")
@click.option("--all", "all_sessions", is_flag=True, help="Every session of the agent's own store.")
@click.option("--since", metavar="DATE", help="Only sessions modified on or after DATE (ISO 8601, UTC).")
@click.option("--dry-run", is_flag=True, help="Convert and report, write nothing.")
@click.option(
    "--omp-compatible",
    is_flag=True,
    help="Convert exactly as omp 18.2.3 does (drops what omp drops; see docs/importers.md).",
)
@json_option
@click.pass_context
def import_command(
    ctx: click.Context,
    source: str,
    paths: tuple[str, ...],
    all_sessions: bool,
    since: str | None,
    dry_run: bool,
    omp_compatible: bool,
    as_json: bool,
) -> None:
    """Import SOURCE sessions (claude, codex or pi) as omp sessions under the sessions root.

    PATH is a transcript file or a store directory (all its sessions); --all takes the agent's
    own store. Source files are only read, never changed.
    """
    if not paths and not all_sessions:
        raise click.UsageError("give PATH ... or --all")
    selection = select(source, paths, all_sessions=all_sessions, since_ms=_since(since))
    if not selection.sessions and not selection.skipped and not as_json:
        where = make_store(source).root if all_sessions and not paths else ", ".join(paths)
        # An empty table said nothing (issue 30: `import pi --all` without ~/.pi).
        click.echo(f"No {AGENT_NAMES[source]} sessions found in {where}: nothing to import.")
        return
    root = state(ctx).root
    outcomes: list[ImportOutcome | Failure] = []
    out = console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=out, transient=True, disable=as_json or not is_terminal(out.file)) as bar:
        task = bar.add_task(f"Importing {AGENT_NAMES[source]} sessions", total=len(selection.sessions))
        for outcome in import_many(
            selection, root=root, fallback_cwd=os.getcwd(), lossless=not omp_compatible, dry_run=dry_run
        ):
            outcomes.append(outcome)
            bar.advance(task)
    if as_json:
        emit_json(
            {
                "sessions": [_outcome_json(o) for o in outcomes],
                "skipped": [{"sourcePath": i.path, "reason": r} for i, r in selection.skipped],
            }
        )
    else:
        _summary(source, outcomes, selection.skipped, dry_run)
    if any(isinstance(o, Failure) for o in outcomes):
        ctx.exit(EXIT_PROBLEMS)


def _short(path: str) -> str:
    """``path`` with the home directory as ``~`` (``--json`` has full paths)."""
    home = os.path.expanduser("~")
    return "~" + path[len(home) :] if home != "~" and path.startswith(home + os.sep) else path


def _described(outcome: ImportOutcome) -> tuple[str, str]:
    """The new session's id (what ``omp --resume`` takes; ``-`` on a dry run) and what it is about,
    read back from the file (written, or there already) as ``list`` reads it: the title, else the first prompt
    (environment context and slash commands skipped)."""
    info = session_info(outcome.path) if outcome.path is not None and outcome.path.is_file() else None
    if info is not None:
        shown = info.title or info.first_prompt or info.first_message
        return info.id, one_line(clean(shown or "")) or "(untitled)"
    title = outcome.info.title or outcome.converted.title
    if not title:  # a dry run of a new session: its first prompt, when the conversion kept entries
        title = first_prompt(
            message_text(entry["message"])
            for entry in outcome.converted.entries
            if entry.get("type") == "message"
            and isinstance(entry.get("message"), dict)
            and entry["message"].get("role") == "user"
        )
    return "-", one_line(clean(title or outcome.info.first_message or "")) or "(untitled)"


def _fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` cells, ending in ``…`` when cut: one line per session whatever the
    terminal (the table it replaces wrapped each path over 3–4 lines)."""
    if cells(text) <= width:
        return text
    _start, end, _tail = cut_line(text, max(width - 1, 1))
    return text[:end].rstrip() + "…"


def _fit_path(text: str, width: int) -> str:
    """``text`` (a path) cut in the middle to ``width`` cells, so that its file name stays."""
    if cells(text) <= width:
        return text
    keep = max(width - 1, 2)
    head, tail = keep // 3, keep - keep // 3
    return text[:head] + "…" + text[len(text) - tail :]


def _summary(source: str, outcomes: list[ImportOutcome | Failure], skipped: list[Any], dry_run: bool) -> None:
    """One line per session (status, new session id, title), then the files not imported and why
    (issue 30 #5), then the counts."""
    out = console()
    width = out.width
    counts: Counter[str] = Counter()
    described = {id(o): _described(o) for o in outcomes if not isinstance(o, Failure)}
    id_width = max((len(session_id) for session_id, _ in described.values()), default=1)
    for outcome in outcomes:
        if isinstance(outcome, Failure):
            counts["failed"] += 1
            continue
        counts[outcome.status] += 1
        session_id, title = described[id(outcome)]
        line = f"{outcome.status:<10} {session_id:<{id_width}}  {title}"
        out.print(_fit(line, width), overflow="ignore", crop=False)
        lines = outcome.converted.stats.skipped_lines
        note = outcome.reason
        if lines:
            shown = ", ".join(str(number) for number in lines[:5]) + (", …" if len(lines) > 5 else "")
            note = f"{len(lines)} unreadable line(s) skipped (line {shown})"
        if note:  # under its session, which the line names
            out.print(_fit(f"{'':<10} {_short(outcome.info.path)}: {note}", width), crop=False)
    failures = [o for o in outcomes if isinstance(o, Failure)]
    left = [(o.info.path, o.reason) for o in failures] + [(info.path, reason) for info, reason in skipped]
    counts["not imported"] = len(skipped)
    if left:
        out.print(f"Not imported ({len(left)} file{'' if len(left) == 1 else 's'}):")
        for path, reason in left:
            said = " ".join(str(reason).split()).replace(path, _short(path))
            line = f"  {_short(path)}: {said}"
            if cells(line) <= width:
                out.print(line, crop=False)
                continue
            # The why matters most: on lines of its own, wrapped rather than cut.
            out.print(_fit_path(f"  {_short(path)}:", width), crop=False)
            for part in textwrap.wrap(said, max(width - 4, 16)):
                out.print(_fit(f"    {part}", width), crop=False)
    order = ("imported", "updated", "unchanged", "reimported", "failed", "not imported")
    total = ", ".join(f"{counts[k]} {k}" for k in order if counts[k]) or "nothing to import"
    suffix = " (dry run: nothing written)" if dry_run else ""
    out.print(f"{AGENT_NAMES[source]} → omp: {total}{suffix}")


__all__ = ["EPILOG", "import_command"]
