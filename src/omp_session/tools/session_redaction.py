"""Redaction of whole session files: redacted copies for sharing, the secret scan, scrubbing in
place (internal; the public name is `omp_session.redact`, docs/sharing.md).

- :func:`redact_session_bytes` turns a session file's bytes into a redacted session file's bytes:
  every line through one :class:`~omp_session.tools.redaction.Redactor`, opaque payloads dropped,
  lines that are not JSON redacted as text. Every export and the viewer's ``--redact`` read this.
- :func:`scan_file` lists the findings of one file (omp sessions and other agents' JSONL files
  alike) without changing anything.
- :func:`scrub_file` replaces the found values in place: only the strings that hold a finding
  change, every other line is kept byte for byte, and the file is replaced through the file
  store's crash-safe rewrite (temp file, fsync, rename) under the writer lock, so a live writer
  makes it refuse and a crash leaves the old file or the new one.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omp_session.format.codec import decode_line, encode_line
from omp_session.format.title_slot import TitleSlot, encode_slot, slot_from_value
from omp_session.tools.omp_secrets import SecretEntry, build_omp_entries, builtin_credential_entries
from omp_session.tools.redaction import (
    PathAnonymizer,
    RedactionReport,
    Redactor,
    iter_strings,
)
from omp_session.tools.secret_rules import Confidence

__all__ = [
    "RedactionOptions",
    "ScanFinding",
    "ScrubResult",
    "make_redactor",
    "plan_scrub",
    "redact_session_bytes",
    "redact_tree",
    "redacted_copy",
    "scan_file",
    "scrub_file",
    "session_cwds",
]


@dataclass(frozen=True)
class RedactionOptions:
    """How to build a redactor: whose omp configuration, which environment, which tiers.

    ``agent_dir`` is omp's agent directory (its ``secrets.yml`` and ``secret-placeholder.key``);
    ``environ`` the environment whose secret-shaped variables omp would redact (``None``: none);
    ``use_omp_config`` False applies only omp's built-in patterns and ours."""

    agent_dir: Path | None = None
    environ: Mapping[str, str] | None = None
    use_omp_config: bool = True
    min_confidence: Confidence = "low"
    anonymize_paths: bool = False
    home: str | None = None


def session_cwds(data: bytes) -> list[str]:
    """The cwd of the header of a session file (first JSON lines), if any."""
    cwds = []
    for line in data.split(b"\n", 3)[:3]:
        try:
            value = decode_line(line)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("type") == "session" and isinstance(value.get("cwd"), str):
            cwds.append(value["cwd"])
    return cwds


def _placeholder_key(agent_dir: Path | None, environ: Mapping[str, str] | None) -> str | None:
    candidates = []
    env = environ or {}
    if env.get("XDG_STATE_HOME"):
        candidates.append(Path(env["XDG_STATE_HOME"]) / "omp" / "secret-placeholder.key")
    if agent_dir is not None:
        candidates.append(agent_dir / "secret-placeholder.key")
    for candidate in candidates:
        try:
            value = candidate.read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if len(value) == 43:
            return value
    return None


def make_redactor(
    options: RedactionOptions, cwds: Iterable[str] = (), warnings: list[str] | None = None
) -> Redactor:
    """A redactor for one output over sessions of the projects ``cwds`` (their ``.omp/secrets.yml``
    apply, as omp applies a project's file in that project)."""
    entries: list[SecretEntry]
    if options.use_omp_config:
        entries = []
        seen: set[tuple[str, str]] = set()
        cwd_list: list[str | None] = [*dict.fromkeys(cwds)] or [None]
        for cwd in cwd_list:
            for entry in build_omp_entries(cwd, options.agent_dir, options.environ, warnings)[
                : -len(builtin_credential_entries())
            ]:
                if (entry.type, entry.content) not in seen:
                    seen.add((entry.type, entry.content))
                    entries.append(entry)
        entries.extend(builtin_credential_entries())
    else:
        entries = builtin_credential_entries()
    paths = None
    if options.anonymize_paths:
        home = options.home if options.home is not None else os.path.expanduser("~")
        paths = PathAnonymizer(projects=cwds, homes=[home] if home and home != "/" else [])
    return Redactor(
        omp_entries=entries,
        omp_key=_placeholder_key(options.agent_dir, options.environ) if options.use_omp_config else None,
        min_confidence=options.min_confidence,
        paths=paths,
    )


def _lines(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def _slot_title_source(records: list[Any]) -> str | None:
    for record in records[:3]:
        if (
            isinstance(record, dict)
            and record.get("type") == "session"
            and isinstance(record.get("title"), str)
        ):
            return str(record["title"])
    return None


def _redact_slot(slot: TitleSlot, full_title: str | None, redactor: Redactor) -> bytes | None:
    """The slot line with its title redacted, or ``None`` when its title holds no secret.

    The slot holds a cut copy of the title; a secret cut at the edge would escape a pattern, so a
    slot title that is a proper prefix of the header's title is redacted as that full title and cut
    again. An empty slot title (which removes the header's title) stays empty."""
    source = slot.title
    if slot.title and full_title is not None and full_title.startswith(slot.title):
        source = full_title
    redacted = redactor.redact_text(source)
    if redacted == source:
        return None
    return encode_slot(TitleSlot(redacted, slot.updated_at, slot.source))


def redact_session_bytes(data: bytes, redactor: Redactor) -> bytes:
    """A redacted copy of a session file: each JSON line redacted by ``redactor`` (opaque payloads
    dropped), each other line redacted as text, omp 18's title slot re-cut from the redacted
    title. The result is a session file of the same layout and dialect."""
    lines = _lines(data)
    decoded: list[Any] = []
    for line in lines:
        try:
            decoded.append(decode_line(line))
        except ValueError:
            decoded.append(None)
    full_title = _slot_title_source(decoded)
    out: list[bytes] = []
    for index, (line, value) in enumerate(zip(lines, decoded, strict=True)):
        if index == 0 and value is not None:
            slot = slot_from_value(value)
            if slot is not None:
                redacted_slot = _redact_slot(slot, full_title, redactor)
                out.append(redacted_slot if redacted_slot is not None else line + b"\n")
                continue
        if isinstance(value, dict):
            out.append(encode_line(redactor.redact_entry(value)))
        elif value is None:
            text = line.decode("utf-8", "replace")
            out.append(redactor.redact_text(text).encode("utf-8", "surrogatepass") + b"\n")
        else:
            out.append(encode_line(redactor.redact_value(value)))
    return b"".join(out)


# ── scan ──────────────────────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class ScanFinding:
    """One secret in one field of one entry of one session (never the value itself)."""

    session: str
    line: int
    entry_id: str | None
    field: str
    kind: str
    rule: str
    confidence: str
    on_branch: bool | None
    preview: str
    fingerprint: str
    source: str = "omp"
    project: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "source": self.source,
            "project": self.project,
            "line": self.line,
            "entry_id": self.entry_id,
            "field": self.field,
            "kind": self.kind,
            "rule": self.rule,
            "confidence": self.confidence,
            "on_branch": self.on_branch,
            "preview": self.preview,
            "fingerprint": self.fingerprint,
        }


def _branch_ids(records: list[Any]) -> set[str] | None:
    """The ids on the path from the leaf (omp resumes at the last entry) to the root."""
    parents: dict[str, Any] = {}
    leaf: str | None = None
    for record in records:
        if not isinstance(record, dict) or record.get("type") in ("session", "title"):
            continue
        entry_id = record.get("id")
        if isinstance(entry_id, str):
            parents[entry_id] = record.get("parentId")
            leaf = entry_id
    if leaf is None:
        return None
    branch: set[str] = set()
    current: Any = leaf
    while isinstance(current, str) and current not in branch:
        branch.add(current)
        current = parents.get(current)
    return branch


def _entry_id(record: Any) -> str | None:
    if not isinstance(record, dict):
        return None
    for key in ("id", "uuid"):
        if isinstance(record.get(key), str):
            return str(record[key])
    return None


def scan_file(
    path: Path, redactor: Redactor, *, source: str = "omp", data: bytes | None = None
) -> list[ScanFinding]:
    """Every secret in the file at ``path``: each string of each JSON line (other lines as text).
    ``on_branch`` says whether the entry is on the current branch (omp sessions only)."""
    raw = data if data is not None else path.read_bytes()
    lines = _lines(raw)
    records: list[Any] = []
    for line in lines:
        try:
            records.append(decode_line(line))
        except ValueError:
            records.append(None)
    branch = _branch_ids(records) if source == "omp" else None
    cwds = session_cwds(raw)
    project = cwds[0] if cwds else None
    if project is None:
        for record in records[:20]:
            if isinstance(record, dict) and isinstance(record.get("cwd"), str):
                project = record["cwd"]
                break
    # A report names the session and its project; a secret in a path must not reach it either.
    masker = Redactor()
    session_name = masker.redact_text(str(path))
    project = masker.redact_text(project) if project is not None else None
    findings: list[ScanFinding] = []
    for number, (line, record) in enumerate(zip(lines, records, strict=True), start=1):
        if record is None:
            strings: Iterable[tuple[str, str]] = [("(line)", line.decode("utf-8", "replace"))]
        else:
            strings = iter_strings(record)
        entry_id = _entry_id(record)
        for field_path, text in strings:
            for finding in redactor.find(text):
                findings.append(
                    ScanFinding(
                        session=session_name,
                        line=number,
                        entry_id=entry_id,
                        field=field_path or "(value)",
                        kind=finding.kind,
                        rule=finding.rule,
                        confidence=finding.confidence,
                        on_branch=(entry_id in branch)
                        if branch is not None and entry_id is not None
                        else None,
                        preview=finding.preview,
                        fingerprint=finding.fingerprint,
                        source=source,
                        project=project,
                    )
                )
    return findings


# ── scrub ─────────────────────────────────────────────────────────────────────────────────────────


@dataclass
class ScrubResult:
    """What a scrub of one file changed (or, in a dry run, would change)."""

    path: Path
    changed_lines: list[int] = field(default_factory=list)
    report: RedactionReport = field(default_factory=RedactionReport)
    applied: bool = False
    backup: Path | None = None
    new_data: bytes | None = None

    @property
    def values(self) -> Counter[str]:
        return self.report.values


def _scrub_value(value: Any, redactor: Redactor) -> Any:
    """``value`` with only the found secrets replaced: structure, key order, opaque payloads and
    everything else unchanged (scrub keeps the session what it was, minus the values)."""
    return redactor.redact_value(value)


def plan_scrub(data: bytes, redactor: Redactor) -> tuple[bytes, list[int]]:
    """The scrubbed bytes of a session file and the (1-based) numbers of the lines that change.
    A line without a finding is copied byte for byte."""
    lines = data.split(b"\n")
    trailing = lines[-1] == b""
    if trailing:
        lines.pop()
    decoded: list[Any] = []
    for line in lines:
        try:
            decoded.append(decode_line(line))
        except ValueError:
            decoded.append(None)
    full_title = _slot_title_source(decoded)
    out: list[bytes] = []
    changed: list[int] = []
    for index, (line, value) in enumerate(zip(lines, decoded, strict=True)):
        new_line = line
        if index == 0 and value is not None and slot_from_value(value) is not None:
            slot = slot_from_value(value)
            assert slot is not None
            scrubbed_slot = _redact_slot(slot, full_title, redactor)
            if scrubbed_slot is not None:
                new_line = scrubbed_slot[:-1]
        elif value is None:
            text = line.decode("utf-8", "surrogateescape")
            scrubbed = redactor.redact_text(text)
            if scrubbed != text:
                new_line = scrubbed.encode("utf-8", "surrogateescape")
        else:
            scrubbed_value = _scrub_value(value, redactor)
            if scrubbed_value != value:
                new_line = encode_line(scrubbed_value)[:-1]
        if new_line != line:
            changed.append(index + 1)
        out.append(new_line)
    if not changed:
        return data, changed
    return b"\n".join(out) + (b"\n" if trailing else b""), changed


def scrub_file(path: Path, redactor: Redactor, *, apply: bool = False, backup: bool = False) -> ScrubResult:
    """Scrub ``path`` in place (``apply``) or say what would change (the default, a dry run).

    Applying takes the session's writer lock (``SessionLockedError`` when a live writer holds it),
    refuses when the file changed since it was read (``SessionChangedError``), and replaces the
    file atomically; ``backup`` keeps the old file beside it as ``<name>.scrub.bak`` — which still
    holds every secret."""
    from omp_session.store.blobs import MemoryBlobStore
    from omp_session.store.file import FileStorage

    result = ScrubResult(path, report=redactor.report)
    storage = FileStorage(path, MemoryBlobStore())
    try:
        if apply:
            storage.lock()
        data = storage.read()
        new_data, changed = plan_scrub(data, redactor)
        result.changed_lines = changed
        result.new_data = new_data
        if apply and changed:
            storage.rewrite([new_data], backup_suffix=".scrub.bak" if backup else None)
            result.applied = True
            if backup:
                candidates = sorted(
                    path.parent.glob(path.name + ".scrub.bak*"), key=lambda p: p.stat().st_mtime_ns
                )
                result.backup = candidates[-1] if candidates else None
    finally:
        storage.close()
    return result


# ── redacted copies for the views ─────────────────────────────────────────────────────────────────


def redacted_copy(
    path: Path, directory: Path, options: RedactionOptions, warnings: list[str] | None = None
) -> tuple[Path, RedactionReport]:
    """Write the redacted copy of the session file ``path`` into ``directory`` (same file name)
    and return it with what was masked; the views export or serve the copy, so every output path
    goes through this one engine. ``path`` is only read."""
    data = path.read_bytes()
    redactor = make_redactor(options, session_cwds(data), warnings)
    target = directory / path.name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(redact_session_bytes(data, redactor))
    return target, redactor.report


def redact_tree(
    root: Path, target_root: Path, options: RedactionOptions, warnings: list[str] | None = None
) -> tuple[RedactionReport, int]:
    """Redacted copies of every ``*.jsonl`` session under ``root`` into ``target_root`` (same
    relative paths; each session one output with its own placeholders), for ``serve --redact``.
    Returns the summed report and the number of sessions."""
    total = RedactionReport()
    count = 0
    for path in sorted(root.rglob("*.jsonl")):
        if not path.is_file():
            continue
        relative = path.relative_to(root)
        _copy, report = redacted_copy(path, target_root / relative.parent, options, warnings)
        total.values.update(report.values)
        total.occurrences.update(report.occurrences)
        total.dropped.update(report.dropped)
        total.paths += report.paths
        count += 1
    return total, count
