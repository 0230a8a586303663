"""``omp-session secrets scan|scrub`` and the redaction options ``export`` and ``serve`` share
(docs/sharing.md).

Internal module (a command of ``omp-session``, which is the interface); not part of the public API.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from omp_session.cli._common import CliError, emit_json, json_option, require_root, state
from omp_session.errors import SessionChangedError, SessionLockedError
from omp_session.store.paths import agent_dir
from omp_session.tools.redaction import FLOOR_WARNING, RedactionReport
from omp_session.tools.session_redaction import (
    RedactionOptions,
    ScanFinding,
    make_redactor,
    scan_file,
    scrub_file,
    session_cwds,
)

__all__ = ["print_report", "redaction_options", "secrets", "with_redaction_options"]

F = TypeVar("F", bound=Callable[..., Any])


def with_redaction_options(func: F) -> F:
    """The options every redacting command takes: --anonymize-paths and --no-omp-config."""
    func = click.option(
        "--no-omp-config",
        "no_omp_config",
        is_flag=True,
        help="Skip your omp secrets.yml files and secret-shaped environment variables "
        "(omp's built-in patterns and ours still apply).",
    )(func)
    func = click.option(
        "--anonymize-paths",
        is_flag=True,
        help="Map home and project directories to stable fake ones (/home/user, /project).",
    )(func)
    return func


def redaction_options(*, anonymize_paths: bool = False, no_omp_config: bool = False) -> RedactionOptions:
    """The redaction of this process: omp's agent directory and environment, as omp reads them."""
    return RedactionOptions(
        agent_dir=agent_dir(),
        environ=dict(os.environ),
        use_omp_config=not no_omp_config,
        anonymize_paths=anonymize_paths,
    )


def print_report(report: RedactionReport, warnings: list[str] = ()) -> None:  # type: ignore[assignment]
    """What a redacted output masked, on stderr, ending with the warning that it is a floor."""
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    for line in report.summary_lines():
        click.echo(line, err=True)


@click.group()
def secrets() -> None:
    """Find secrets in sessions, and scrub them out in place."""


def _targets(
    ctx: click.Context, session: str | None, all_sessions: bool, foreign: bool
) -> list[tuple[Path, str]]:
    if session is not None and all_sessions:
        raise CliError("give a SESSION or --all, not both")
    if session is None and not all_sessions:
        raise CliError("give a SESSION or --all")
    if session is not None:
        return [(state(ctx).resolve(session), "omp")]
    root = state(ctx).root
    require_root(root)
    from omp_session.tools.listing import session_files

    targets = [(path, "omp") for path in session_files(root, storage=state(ctx).storage)]
    if foreign:
        from omp_session.importers import SOURCES
        from omp_session.importers.stores import make_store

        for source in SOURCES:
            try:
                infos = make_store(source).list()
            except Exception:
                click.echo(f"warning: could not list the {source} sessions", err=True)
                continue
            targets.extend((Path(info.path), source) for info in infos)
    return targets


@secrets.command(
    epilog="\b\nExamples:\n  omp-session secrets scan 15d0c6a0\n"
    "  omp-session secrets scan --all --by-fingerprint\n"
    "  omp-session secrets scan --all --json > findings.json",
)
@click.argument("session", required=False)
@click.option("--all", "all_sessions", is_flag=True, help="Every session of the store.")
@click.option(
    "--agents/--no-agents",
    default=True,
    show_default=True,
    help="With --all: also Claude Code, Codex and pi sessions (~/.claude, ~/.codex, ~/.pi).",
)
@click.option("--by-fingerprint", is_flag=True, help="One line per distinct value: where it appears.")
@json_option
@click.pass_context
def scan(
    ctx: click.Context,
    session: str | None,
    all_sessions: bool,
    agents: bool,
    by_fingerprint: bool,
    as_json: bool,
) -> None:
    """List the secrets in SESSION (or every session with --all), never printing a value.

    Each finding names its rule, confidence, session, entry id, field, whether the entry is on
    the current branch, a masked preview and a fingerprint. Exit status 1 when anything is found.
    """
    options = redaction_options()
    findings: list[ScanFinding] = []
    warnings: list[str] = []
    for path, source in _targets(ctx, session, all_sessions, agents):
        try:
            data = path.read_bytes()
        except OSError as exc:
            click.echo(f"warning: {path}: {exc.strerror or exc}", err=True)
            continue
        redactor = make_redactor(options, session_cwds(data), warnings)
        findings.extend(scan_file(path, redactor, source=source, data=data))
    for warning in dict.fromkeys(warnings):
        click.echo(f"warning: {warning}", err=True)
    if by_fingerprint:
        groups: dict[str, list[ScanFinding]] = defaultdict(list)
        for finding in findings:
            groups[finding.fingerprint].append(finding)
        rows: list[dict[str, Any]] = []
        for fp, items in sorted(groups.items(), key=lambda kv: (-len({f.session for f in kv[1]}), kv[0])):
            rows.append(
                {
                    "fingerprint": fp,
                    "kind": items[0].kind,
                    "confidence": items[0].confidence,
                    "preview": items[0].preview,
                    "occurrences": len(items),
                    "sessions": sorted({f.session for f in items}),
                    "projects": sorted({f.project or "?" for f in items}),
                }
            )
        if as_json:
            emit_json(rows)
        else:
            for row in rows:
                click.echo(
                    f"{row['fingerprint']}  {row['kind']} ({row['confidence']}) {row['preview']}: "
                    f"{row['occurrences']} times in {len(row['sessions'])} session"
                    f"{'s' if len(row['sessions']) != 1 else ''} of {len(row['projects'])} project"
                    f"{'s' if len(row['projects']) != 1 else ''}"
                )
    elif as_json:
        emit_json([finding.to_dict() for finding in findings])
    else:
        for f in findings:
            branch = {True: "on branch", False: "off branch", None: "-"}[f.on_branch]
            source = "" if f.source == "omp" else f" [{f.source}]"
            click.echo(
                f"{f.session}{source}:{f.line} entry {f.entry_id or '-'} {f.field}: "
                f"{f.kind} ({f.confidence}, {branch}) {f.preview} fp {f.fingerprint}"
            )
        sessions = len({f.session for f in findings})
        click.echo(
            f"{len(findings)} finding{'s' if len(findings) != 1 else ''} in {sessions} "
            f"session{'s' if sessions != 1 else ''}; {FLOOR_WARNING}",
            err=True,
        )
    if findings:
        ctx.exit(1)


@secrets.command(
    epilog="\b\nExamples:\n  omp-session secrets scrub 15d0c6a0            what would change (a dry run)\n"
    "  omp-session secrets scrub 15d0c6a0 --apply    rewrite the file in place\n"
    "  omp-session secrets scrub --all --apply",
)
@click.argument("session", required=False)
@click.option("--all", "all_sessions", is_flag=True, help="Every session of the store (omp's files only).")
@click.option(
    "--apply", "apply", is_flag=True, help="Rewrite the files (default: a dry run that changes nothing)."
)
@click.option(
    "--backup", is_flag=True, help="Keep the old file as <name>.scrub.bak (it still holds the secrets)."
)
@click.option(
    "--no-omp-config",
    "no_omp_config",
    is_flag=True,
    help="Skip your omp secrets.yml files and secret-shaped environment variables.",
)
@click.pass_context
def scrub(
    ctx: click.Context,
    session: str | None,
    all_sessions: bool,
    apply: bool,
    backup: bool,
    no_omp_config: bool,
) -> None:
    """Replace the secrets found in SESSION (or every session with --all) in place.

    Only the strings holding a finding change; every other line stays byte for byte. The file is
    replaced atomically under the writer lock: a session with a live writer is refused.
    """
    if backup:
        click.echo(
            "warning: --backup keeps a copy of every secret beside the scrubbed file; "
            "delete it once you have checked the result",
            err=True,
        )
    options = redaction_options(no_omp_config=no_omp_config)
    refused = 0
    total_files = 0
    total = RedactionReport()
    for path, _source in _targets(ctx, session, all_sessions, False):
        redactor = make_redactor(options, session_cwds(path.read_bytes()))
        try:
            result = scrub_file(path, redactor, apply=apply, backup=backup)
        except SessionLockedError as exc:
            click.echo(f"refused: {exc}", err=True)
            refused += 1
            continue
        except SessionChangedError as exc:
            click.echo(f"refused: {exc}", err=True)
            refused += 1
            continue
        if not result.changed_lines:
            continue
        total_files += 1
        total.values.update(result.report.values)
        total.occurrences.update(result.report.occurrences)
        verb = "scrubbed" if result.applied else "would scrub"
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(result.report.values.items()))
        click.echo(
            f"{verb} {path}: {len(result.changed_lines)} line"
            f"{'s' if len(result.changed_lines) != 1 else ''} ({kinds})"
        )
        if result.backup is not None:
            click.echo(f"backup (holds the secrets): {result.backup}", err=True)
    if not apply and total_files:
        click.echo("dry run: nothing was changed; add --apply to rewrite", err=True)
    click.echo(FLOOR_WARNING, err=True)
    if refused:
        ctx.exit(1)
