"""Which agent wrote a JSONL file: each importer checks its input is its own agent's format.

A Claude Code transcript, a Codex rollout and a pi (or omp) session are all JSON lines, and each
converter skips what it does not know, so a file of the wrong agent used to import "successfully"
as a session of unknown records (issue 25). :func:`require_format` looks at the first records and
refuses a file that is recognisably another agent's, naming it. A file that looks like nothing
known is left to the converter, whose own errors ("contains no readable records") say why.

Reads at most :data:`SNIFF_BYTES` of the file, opened by the special-file rule (never blocking).
"""

from __future__ import annotations

import os
import stat
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from omp_session.errors import CorruptSessionError, ForeignSessionError
from omp_session.importers.codex import state_database
from omp_session.store.regular import open_regular

__all__ = ["SNIFF_BYTES", "STORE_LAYOUTS", "left_out", "looks_like", "require_format", "why_not_listed"]

#: How much of a file is looked at (the first records say which agent wrote it).
SNIFF_BYTES = 65536
_CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
_CLAUDE_KEYS = ("uuid", "parentUuid", "sessionId", "leafUuid")
#: What each format is called in a message, and the command that imports it.
_NAMES = {
    "claude": ("a Claude Code transcript", "omp-session import claude"),
    "codex": ("a Codex rollout", "omp-session import codex"),
    "pi": ("a pi or omp session", "omp-session import pi (an omp session needs no import)"),
}


def _format_of(record: dict[str, Any]) -> str | None:
    kind = record.get("type")
    # (a damaged file's type may be any JSON value: a list or an object is not hashable)
    if isinstance(kind, str) and kind in _CODEX_TYPES and "payload" in record:
        return "codex"
    if any(key in record for key in _CLAUDE_KEYS):
        return "claude"
    if kind == "session" and isinstance(record.get("id"), str):
        return "pi"  # pi's header, which omp's extends
    if isinstance(record.get("id"), str) and "parentId" in record:
        return "pi"
    return None


def looks_like(path: str | Path) -> Counter[str]:
    """How many of the first records of ``path`` look like each format (``claude``, ``codex``,
    ``pi``); empty for a file of no known records. Raises ``OSError`` or
    :class:`CorruptSessionError` (a FIFO, a device, a directory) when it cannot be read."""
    with os.fdopen(open_regular(path), "rb") as handle:
        head = handle.read(SNIFF_BYTES)
    lines = head.split(b"\n")
    if len(head) == SNIFF_BYTES:
        lines.pop()  # the last line may be cut
    votes: Counter[str] = Counter()
    for line in lines:
        line = line.strip()
        if not line.startswith(b"{"):
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(record, dict):
            found = _format_of(record)
            if found is not None:
                votes[found] += 1
    return votes


def require_format(source: str, path: str) -> None:
    """Raise :class:`ForeignSessionError` when ``path`` is recognisably not ``source``'s format:
    none of its first records is ``source``'s, and some are another agent's (named, with the
    command that imports it)."""
    try:
        votes = looks_like(path)
    except CorruptSessionError as error:
        raise ForeignSessionError(path, str(error)) from None
    if votes[source] or not votes:
        return
    other = votes.most_common(1)[0][0]
    what, command = _NAMES[other]
    expected = _NAMES[source][0]
    raise ForeignSessionError(path, f"{path}: looks like {what}, not {expected}; try {command}")


#: Where each agent's store keeps its transcripts (relative to the store's root).
STORE_LAYOUTS: dict[str, tuple[str, ...]] = {
    "claude": ("projects/*/*.jsonl", ".projects/*/*.jsonl"),
    "codex": ("sessions/**/*.jsonl", ".sessions/**/*.jsonl", "archived_sessions/**/*.jsonl"),
    "pi": ("sessions/*/*.jsonl",),
}
_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
}


def why_not_listed(source: str, path: Path, root: Path | None = None) -> str:
    """Why a ``*.jsonl`` file in ``source``'s store (at ``root``) is not one of its sessions (never
    blocks: special files are told apart by ``stat``, regular ones read by :func:`looks_like`)."""
    try:
        mode = path.stat().st_mode
    except OSError as error:
        return f"cannot be read: {error.strerror or error}"
    if not stat.S_ISREG(mode):
        return f"is {_KINDS.get(stat.S_IFMT(mode), 'not a regular file')}, not a transcript"
    if path.stat().st_size == 0:
        return "is empty"
    try:
        votes = looks_like(path)
    except (OSError, CorruptSessionError) as error:
        return f"cannot be read: {error}"
    if not votes:
        return f"holds no record of {_NAMES[source][0]}"
    if not votes[source]:
        return f"looks like {_NAMES[votes.most_common(1)[0][0]][0]}, not {_NAMES[source][0]}"
    if source == "codex" and root is not None and state_database(root) is not None:
        # Codex lists its threads from its state database, and so do omp and --all (issue 30:
        # rollouts it does not list were said to have "no session header").
        return (
            "a Codex rollout that Codex's state database does not list (nor does omp); "
            f"import it by path: {_NAMES[source][1]} PATH"
        )
    return f"not listed by the {source} store (no session header or metadata it recognises)"


def left_out(source: str, root: Path, listed: set[str]) -> list[tuple[Path, str]]:
    """The ``*.jsonl`` files under the store's transcript directories that its listing left out
    (not in ``listed``, absolute paths), each with why: ``import --all`` reports them."""
    found: list[tuple[Path, str]] = []
    seen: set[Path] = set()
    for pattern in STORE_LAYOUTS.get(source, ()):
        try:
            candidates = sorted(root.glob(pattern))
        except OSError:
            continue
        for path in candidates:
            absolute = Path(os.path.abspath(path))
            if absolute in seen or os.fspath(absolute) in listed:
                continue
            seen.add(absolute)
            found.append((absolute, why_not_listed(source, absolute, root)))
    return found
