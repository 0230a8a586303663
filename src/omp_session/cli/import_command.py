"""``omp-session import``: Claude Code, Codex and pi sessions as omp sessions (docs/importers.md)."""

from __future__ import annotations

import os
from collections import Counter
from datetime import datetime, timezone
from typing import Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from omp_session.cli._common import EXIT_PROBLEMS, console, emit_json, is_terminal, json_option, state
from omp_session.importers import AGENT_NAMES, SOURCES
from omp_session.importers.batch import Failure, import_many, select
from omp_session.importers.persist import ImportOutcome

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
    """``<parent dir>/<file>``: enough to recognise a session (``--json`` has full paths)."""
    return os.path.join(os.path.basename(os.path.dirname(path)), os.path.basename(path))


def _summary(source: str, outcomes: list[ImportOutcome | Failure], skipped: list[Any], dry_run: bool) -> None:
    out = console()
    table = Table(title=f"{AGENT_NAMES[source]} → omp{' (dry run: nothing written)' if dry_run else ''}")
    for name in ("Status", "Source", "omp session", "Entries", "Note"):
        table.add_column(name, overflow="fold")
    counts: Counter[str] = Counter()
    kept: Counter[str] = Counter()
    bad_lines = 0
    for outcome in outcomes:
        if isinstance(outcome, Failure):
            counts["failed"] += 1
            table.add_row("failed", _short(outcome.info.path), "", "", outcome.reason)
            continue
        counts[outcome.status] += 1
        kept.update(outcome.converted.deviations)
        lines = outcome.converted.stats.skipped_lines
        bad_lines += len(lines)
        note = outcome.reason or (f"{len(lines)} unreadable line(s) skipped: {lines[:5]}" if lines else "")
        target = _short(str(outcome.path)) if outcome.path else ""
        table.add_row(outcome.status, _short(outcome.info.path), target, str(outcome.added), note)
    for info, reason in skipped:
        counts["skipped"] += 1
        table.add_row("skipped", _short(info.path), "", "", reason)
    out.print(table)
    order = ("imported", "updated", "unchanged", "reimported", "skipped", "failed")
    out.print(", ".join(f"{counts[k]} {k}" for k in order if counts[k]) or "nothing to import")
    if bad_lines:
        out.print(f"{bad_lines} unreadable source line(s) skipped (listed per session above)")
    if kept:
        out.print("kept beyond omp: " + ", ".join(f"{name} ×{n}" for name, n in sorted(kept.items())))


__all__ = ["EPILOG", "import_command"]
