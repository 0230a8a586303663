"""``OmpClaudeSessionStore``: the Claude Agent SDK's ``SessionStore`` kept as omp sessions
(extra ``[claude-agent-sdk]``).

The SDK mirrors each Claude Code transcript to the store in batches of JSON lines. This store keeps
the raw lines for ``load``, laid out as Claude Code lays out its own projects
(``<transcripts>/projects/<project_key>/<session_id>.jsonl``, sub-agent transcripts in
``<session_id>/<subpath>.jsonl``), and after each append to a main transcript brings its omp
mirror up to date through the incremental lossless Claude importer, so every SDK run is an omp
session in the viewer, search and stats at once.

The incremental summaries of ``list_session_summaries`` are folded by the SDK's own
``fold_session_summary`` and persisted verbatim beside the transcripts (``summaries/``).

With ``postgres=DSN`` the raw lines and summaries live in two PostgreSQL tables instead (JSONB: the
entries come back deep-equal, keys possibly reordered, which the SDK allows); ``transcripts`` then
holds only the Claude-layout copies the importer reads for the mirror.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from omp_session.importers.claude import ClaudeSessionStore
from omp_session.importers.persist import ImportOutcome, import_session
from omp_session.store.atomic_files import replace_file

__all__ = ["OmpClaudeSessionStore"]

Entry = dict[str, Any]


def _segment(value: Any, what: str) -> str:
    text = str(value)
    if not text or text in (".", "..") or "/" in text or "\\" in text or "\x00" in text:
        raise ValueError(f"invalid {what} {text!r}")
    return text


def _subpath(value: Any) -> str:
    parts = str(value).split("/")
    return "/".join(_segment(part, "subpath segment") for part in parts)


class OmpClaudeSessionStore:
    """A ``SessionStore`` over raw transcripts under ``transcripts`` and omp sessions under ``sessions``.

    ``sessions`` is an omp sessions root (``None``: no omp mirror is written). The mirror of a
    transcript is brought up to date after every append to its main key; a mirror that cannot be
    written raises, so the SDK retries the batch (the raw lines are already stored once: a retry of
    the same batch is recognised by its entries' ``uuid`` and not stored twice).
    """

    def __init__(
        self,
        transcripts: str | os.PathLike[str],
        sessions: str | os.PathLike[str] | None,
        *,
        postgres: str | None = None,
        table_prefix: str = "omp_claude",
    ) -> None:
        self.transcripts = Path(transcripts)
        self.sessions = Path(sessions) if sessions is not None else None
        self._lock = asyncio.Lock()
        self._pg = _PostgresLines(postgres, table_prefix) if postgres is not None else None

    # ------------------------------------------------------------------ layout

    def _project_dir(self, project_key: Any) -> Path:
        return self.transcripts / "projects" / _segment(project_key, "project_key")

    def _path(self, key: Mapping[str, Any]) -> Path:
        base = self._project_dir(key["project_key"])
        session = _segment(key["session_id"], "session_id")
        subpath = key.get("subpath")
        if subpath:
            return base / session / f"{_subpath(subpath)}.jsonl"
        return base / f"{session}.jsonl"

    def _summary_path(self, key: Mapping[str, Any]) -> Path:
        return (
            self.transcripts
            / "summaries"
            / _segment(key["project_key"], "project_key")
            / f"{_segment(key['session_id'], 'session_id')}.json"
        )

    # ------------------------------------------------------------------ required

    async def append(self, key: Mapping[str, Any], entries: list[Entry]) -> None:
        """Store ``entries`` after the earlier ones (entries whose ``uuid`` is already stored are
        skipped), update the summary and the omp mirror of a main transcript."""
        if not entries:
            return
        async with self._lock:
            path = self._path(key)
            stored = self._pg.read(key) if self._pg else self._read(path)
            seen = {entry.get("uuid") for entry in stored or [] if isinstance(entry.get("uuid"), str)}
            fresh = [e for e in entries if not (isinstance(e.get("uuid"), str) and e["uuid"] in seen)]
            if fresh:
                if self._pg:
                    self._pg.append(key, fresh)
                else:
                    self._append_lines(path, fresh)
            if key.get("subpath"):
                return
            self._fold_summary(key, fresh)
            if self.sessions is not None:
                if self._pg:  # the importer reads Claude-layout files: keep a derived copy
                    path.parent.mkdir(parents=True, exist_ok=True)
                    replace_file(path, _jsonl(self._pg.read(key) or []))
                self._mirror(path, str(key["project_key"]))

    async def load(self, key: Mapping[str, Any]) -> list[Entry] | None:
        """Every entry appended to ``key``, in order; ``None`` for a key never written."""
        if self._pg:
            return self._pg.read(key)
        return self._read(self._path(key))

    # ------------------------------------------------------------------ optional

    async def list_sessions(self, project_key: str) -> list[dict[str, Any]]:
        """The main transcripts of ``project_key`` with their modification times (epoch ms)."""
        if self._pg:
            return self._pg.list_sessions(_segment(project_key, "project_key"))
        directory = self._project_dir(project_key)
        found: list[dict[str, Any]] = []
        for path in sorted(directory.glob("*.jsonl")) if directory.is_dir() else []:
            found.append({"session_id": path.name[: -len(".jsonl")], "mtime": path.stat().st_mtime_ns / 1e6})
        return found

    async def list_session_summaries(self, project_key: str) -> list[dict[str, Any]]:
        if self._pg:
            return self._pg.list_summaries(_segment(project_key, "project_key"))
        directory = self.transcripts / "summaries" / _segment(project_key, "project_key")
        return [json.loads(path.read_text(encoding="utf-8")) for path in sorted(directory.glob("*.json"))]

    async def delete(self, key: Mapping[str, Any]) -> None:
        """Remove the transcript of ``key`` (a main key: with its sub-agent transcripts and
        summary). The omp mirror stays: omp sessions are never deleted by a bridge."""
        async with self._lock:
            path = self._path(key)
            if self._pg:
                self._pg.delete(key)
            path.unlink(missing_ok=True)
            if not key.get("subpath"):
                shutil.rmtree(path.with_suffix(""), ignore_errors=True)
                self._summary_path(key).unlink(missing_ok=True)

    async def list_subkeys(self, key: Mapping[str, Any]) -> list[str]:
        if self._pg:
            return self._pg.list_subkeys(key)
        base = self._project_dir(key["project_key"]) / _segment(key["session_id"], "session_id")
        if not base.is_dir():
            return []
        return sorted(
            path.relative_to(base).as_posix()[: -len(".jsonl")]
            for path in base.rglob("*.jsonl")
            if path.is_file()
        )

    # ------------------------------------------------------------------ internals

    @staticmethod
    def _read(path: Path) -> list[Entry] | None:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        entries: list[Entry] = []
        for number, line in enumerate(data.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                entries.append(json.loads(line))
            except ValueError as error:
                raise ValueError(f"{path}:{number}: not a JSON line ({error})") from error
        return entries

    @staticmethod
    def _append_lines(path: Path, entries: list[Entry]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = _jsonl(entries)
        with open(path, "ab") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())

    def _fold_summary(self, key: Mapping[str, Any], entries: list[Entry]) -> None:
        from claude_agent_sdk._internal.session_summary import fold_session_summary  # the SDK's own fold

        path = self._summary_path(key)
        if self._pg:
            previous = self._pg.read_summary(key)
        else:
            previous = json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
        folded = dict(fold_session_summary(previous, dict(key), entries))  # type: ignore[arg-type]
        if self._pg:
            # Stamped after the lines were stored, on the clock that stamped them.
            folded["mtime"] = time.time() * 1000
            self._pg.write_summary(key, folded)
            return
        transcript_mtime = self._path(key).stat().st_mtime_ns / 1e6
        folded["mtime"] = max(time.time() * 1000, transcript_mtime)
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(path, json.dumps(folded, ensure_ascii=False).encode("utf-8"))

    def _mirror(self, path: Path, project_key: str) -> ImportOutcome:
        assert self.sessions is not None
        source = ClaudeSessionStore(self.transcripts, env={})
        info = source.info_for(os.fspath(path))
        return import_session(source, info, root=self.sessions, fallback_cwd=info.cwd or f"/{project_key}")

    def mirror_path(self, key: Mapping[str, Any]) -> Path | None:
        """The omp session that mirrors the main transcript of ``key`` (``None`` before its first append)."""
        if self.sessions is None or not self._path(key).exists():
            return None
        return self._mirror(self._path(key), str(key["project_key"])).path


def _jsonl(entries: list[Entry]) -> bytes:
    return b"".join(
        json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        for entry in entries
    )


class _PostgresLines:
    """Raw transcript lines and summaries in PostgreSQL (``<prefix>_lines``, ``<prefix>_summaries``)."""

    def __init__(self, dsn: str, prefix: str) -> None:
        import psycopg  # the [postgres] extra
        from psycopg.types.json import Jsonb

        if not prefix.replace("_", "").isalnum():
            raise ValueError(f"invalid table prefix {prefix!r}")
        self._psycopg = psycopg
        self._jsonb = Jsonb
        self.dsn = dsn
        self.lines = f"{prefix}_lines"
        self.summaries = f"{prefix}_summaries"
        with psycopg.connect(dsn, autocommit=True) as connection:
            connection.execute(
                f"CREATE TABLE IF NOT EXISTS {self.lines} (seq bigserial PRIMARY KEY,"
                " project_key text NOT NULL, session_id text NOT NULL, subpath text NOT NULL,"
                " entry jsonb NOT NULL, written_ms double precision NOT NULL)"
            )
            connection.execute(
                f"CREATE INDEX IF NOT EXISTS {self.lines}_key ON {self.lines}"
                " (project_key, session_id, subpath, seq)"
            )
            connection.execute(
                f"CREATE TABLE IF NOT EXISTS {self.summaries} (project_key text NOT NULL,"
                " session_id text NOT NULL, summary jsonb NOT NULL, PRIMARY KEY (project_key, session_id))"
            )

    def _connect(self) -> Any:
        return self._psycopg.connect(self.dsn, autocommit=True)

    @staticmethod
    def _key(key: Mapping[str, Any]) -> tuple[str, str, str]:
        return str(key["project_key"]), str(key["session_id"]), str(key.get("subpath") or "")

    def read(self, key: Mapping[str, Any]) -> list[Entry] | None:
        with self._connect() as connection:
            rows = connection.execute(
                f"SELECT entry FROM {self.lines} WHERE project_key = %s AND session_id = %s AND subpath = %s"
                " ORDER BY seq",
                self._key(key),
            ).fetchall()
        return [row[0] for row in rows] if rows else None

    def append(self, key: Mapping[str, Any], entries: list[Entry]) -> None:
        jsonb = self._jsonb
        now = time.time() * 1000
        with self._connect() as connection, connection.transaction():
            connection.cursor().executemany(
                f"INSERT INTO {self.lines} (project_key, session_id, subpath, entry, written_ms)"
                " VALUES (%s, %s, %s, %s, %s)",
                [(*self._key(key), jsonb(entry), now) for entry in entries],
            )

    def list_sessions(self, project_key: str) -> list[dict[str, Any]]:
        with self._connect() as connection:
            rows = connection.execute(
                f"SELECT session_id, max(written_ms) FROM {self.lines}"
                " WHERE project_key = %s AND subpath = '' GROUP BY session_id ORDER BY session_id",
                (project_key,),
            ).fetchall()
        return [{"session_id": row[0], "mtime": float(row[1])} for row in rows]

    def list_subkeys(self, key: Mapping[str, Any]) -> list[str]:
        with self._connect() as connection:
            rows = connection.execute(
                f"SELECT DISTINCT subpath FROM {self.lines} WHERE project_key = %s AND session_id = %s"
                " AND subpath <> '' ORDER BY subpath",
                self._key(key)[:2],
            ).fetchall()
        return [row[0] for row in rows]

    def delete(self, key: Mapping[str, Any]) -> None:
        project_key, session_id, subpath = self._key(key)
        with self._connect() as connection, connection.transaction():
            if subpath:
                connection.execute(
                    f"DELETE FROM {self.lines} WHERE project_key = %s AND session_id = %s AND subpath = %s",
                    (project_key, session_id, subpath),
                )
                return
            connection.execute(
                f"DELETE FROM {self.lines} WHERE project_key = %s AND session_id = %s",
                (project_key, session_id),
            )
            connection.execute(
                f"DELETE FROM {self.summaries} WHERE project_key = %s AND session_id = %s",
                (project_key, session_id),
            )

    def read_summary(self, key: Mapping[str, Any]) -> Any:
        with self._connect() as connection:
            row = connection.execute(
                f"SELECT summary FROM {self.summaries} WHERE project_key = %s AND session_id = %s",
                self._key(key)[:2],
            ).fetchone()
        return row[0] if row else None

    def write_summary(self, key: Mapping[str, Any], summary: dict[str, Any]) -> None:
        with self._connect() as connection:
            connection.execute(
                f"INSERT INTO {self.summaries} (project_key, session_id, summary) VALUES (%s, %s, %s)"
                " ON CONFLICT (project_key, session_id) DO UPDATE SET summary = EXCLUDED.summary",
                (*self._key(key)[:2], self._jsonb(summary)),
            )

    def list_summaries(self, project_key: str) -> list[dict[str, Any]]:
        with self._connect() as connection:
            rows = connection.execute(
                f"SELECT summary FROM {self.summaries} WHERE project_key = %s ORDER BY session_id",
                (project_key,),
            ).fetchall()
        return [row[0] for row in rows]
