"""``omp-session check``, ``repair`` and ``migrate``: finding and fixing damaged or old files.

Internal module (a command of ``omp-session``, which is the interface); not part of the public API.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from omp_session.cli._common import (
    EXIT_PROBLEMS,
    CliError,
    emit_json,
    json_option,
    report_skipped,
    require_one,
    require_root,
    session_argument,
    state,
)
from omp_session.cli._progress import progress_bar
from omp_session.errors import SessionError
from omp_session.store import SessionStorage
from omp_session.tools.repair import NotASessionError, Problem, migrate_file
from omp_session.tools.repair import check as check_file
from omp_session.tools.repair import repair as repair_file

__all__ = ["check", "migrate", "repair"]


def _problem_line(path: Path, problem: Problem) -> str:
    where = f"{path}:{problem.line}" if problem.line is not None else str(path)
    entry = f" (entry {problem.entry_id})" if problem.entry_id else ""
    note = "" if problem.is_problem else " (information, not a problem)"
    return f"{where}: {problem.kind}: {problem.message}{entry}{note}"


def _targets(ctx: click.Context, session: str | None, all_projects: bool) -> list[Path]:
    require_one(session, all_projects)
    cli = state(ctx)
    if session is not None:
        return [cli.resolve(session)]
    require_root(cli.root)
    return cli.session_files(all_projects=True, cwd=None)


def _check_one(path: Path, storage: SessionStorage | None) -> list[Problem]:
    try:
        return check_file(path, storage=storage)
    except (SessionError, OSError) as exc:  # with --all, one unreadable file must not hide the rest
        return [Problem("unreadable", None, None, " ".join(str(exc).split()))]


@click.command(
    epilog="\b\nExamples:\n  omp-session check 15d0c6a0\n  omp-session check --all --json",
)
@session_argument(required=False)
@click.option("--all", "all_projects", is_flag=True, help="Check every session file of every project.")
@json_option
@click.pass_context
def check(ctx: click.Context, session: str | None, all_projects: bool, as_json: bool) -> None:
    """Report what is wrong with SESSION (or with every file): one line per problem.

    Never writes. Exit status 1 when a problem is found, 0 when everything is fine.
    """
    paths = _targets(ctx, session, all_projects)
    storage = state(ctx).storage
    found: dict[Path, list[Problem]] = {}
    with progress_bar("checking", hidden=session is not None) as advance:
        for number, path in enumerate(paths):
            advance(number, len(paths), path.name)
            found[path] = (
                check_file(path, storage=storage) if session is not None else _check_one(path, storage)
            )
    total = sum(1 for problems in found.values() for problem in problems if problem.is_problem)
    if as_json:
        emit_json({str(p): [vars(x) for x in problems] for p, problems in found.items()})
    else:
        for path, problems in found.items():
            for problem in problems:
                click.echo(_problem_line(path, problem))
        damaged = sum(1 for problems in found.values() if any(p.is_problem for p in problems))
        summary = f"{total} problem{'s' if total != 1 else ''} in {damaged} of {len(paths)} file"
        click.echo(summary + ("s" if len(paths) != 1 else ""), err=True)
    if total:
        ctx.exit(EXIT_PROBLEMS)


def _files_only(ctx: click.Context, command: str) -> None:
    # repair and migrate keep their backups and dropped lines as files beside the session.
    if state(ctx).database is not None:
        raise CliError(f"{command} works on session files: pull, {command}, then push")


@click.command(epilog="\b\nExample:\n  omp-session repair 15d0c6a0")
@session_argument()
@click.option(
    "--force",
    is_flag=True,
    help="Repair even a file in which no line is a session header or entry (every line then goes "
    "to <name>.rejected and a new header is written).",
)
@json_option
@click.pass_context
def repair(ctx: click.Context, session: str, force: bool, as_json: bool) -> None:
    """Fix what can be fixed in SESSION, keeping a backup and the dropped lines.

    The old file stays as <name>.repair.bak; lines that cannot be kept are moved, byte for byte,
    to <name>.rejected. Running it again changes nothing. A file that is not a session at all
    (no line is a session header or entry) is refused, exit status 2, unless --force.
    """
    _files_only(ctx, "repair")
    try:
        report = repair_file(state(ctx).resolve(session), force=force)
    except NotASessionError as exc:
        hint = "--force repairs it anyway: a new header, every line to the sidecar"
        raise CliError(f"{exc} ({hint})") from None
    if as_json:
        data: dict[str, Any] = {
            "path": str(report.path),
            "backup": str(report.backup) if report.backup else None,
            "sidecar": str(report.sidecar) if report.sidecar else None,
            "changes": report.changes,
        }
        emit_json(data)
        return
    if not report.changes:
        click.echo(f"{report.path}: nothing to repair")
        return
    for change in report.changes:
        click.echo(f"{report.path}: {change}")
    if report.backup:
        click.echo(f"backup: {report.backup}")
    if report.sidecar:
        click.echo(f"dropped lines: {report.sidecar}")


@click.command(
    epilog="\b\nExamples:\n  omp-session migrate --all --dry-run\n  omp-session migrate 15d0c6a0",
)
@session_argument(required=False)
@click.option("--all", "all_projects", is_flag=True, help="Migrate every session file of every project.")
@click.option("--dry-run", is_flag=True, help="Only say what would be migrated.")
@click.pass_context
def migrate(ctx: click.Context, session: str | None, all_projects: bool, dry_run: bool) -> None:
    """Upgrade SESSION (or every file) to format version 3, keeping <name>.v<old>.bak.

    omp migrates in memory on every load and rewrites only on the next write; this makes the
    upgrade permanent. Files already at version 3 are left alone.
    """
    _files_only(ctx, "migrate")
    paths = _targets(ctx, session, all_projects)
    changed = 0
    unreadable: list[tuple[object, str]] = []
    lines: list[str] = []  # printed after the bar: stdout stays free of it
    with progress_bar("migrating", hidden=session is not None) as advance:
        for number, path in enumerate(paths):
            advance(number, len(paths), path.name)
            backups = set(path.parent.glob(f"{path.name}.v*.bak*"))
            try:
                old = migrate_file(path, dry_run=dry_run)
            except (SessionError, OSError) as exc:
                if session is not None:
                    raise
                unreadable.append((path, str(exc)))
                continue
            if old is None:
                if session is not None:
                    lines.append(f"{path}: already version 3")
                continue
            changed += 1
            new_backups = sorted(set(path.parent.glob(f"{path.name}.v*.bak*")) - backups)
            backup = f" (backup {new_backups[0].name})" if new_backups else ""
            lines.append(f"{path}: {'would migrate' if dry_run else 'migrated'} v{old} → v3{backup}")
    for line in lines:
        click.echo(line)
    report_skipped(unreadable)
    if session is None:
        action = "would be migrated" if dry_run else "migrated"
        click.echo(f"{changed} of {len(paths)} files {action}", err=True)
