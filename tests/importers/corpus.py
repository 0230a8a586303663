"""Stage an importer golden case as omp's harness does and produce the raw result (fixtures README)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
from pathlib import Path
from types import ModuleType
from typing import Any

from omp_session.errors import ForeignSessionError
from omp_session.format.ids import iso_from_ms
from omp_session.importers import ForeignSessionInfo, ForeignSessionStore
from omp_session.importers.base import ConvertedSession
from omp_session.importers.jsonl import iter_records
from omp_session.importers.persist import persist_new
from omp_session.importers.stores import make_store

HERE = Path(__file__).parent
FIXTURES = HERE / "fixtures"
MTIME_MS = 1767225600000


def _load_normalizer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("importer_normalize", FIXTURES / "normalize.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


normalizer = _load_normalizer()


def cases(source: str) -> list[str]:
    return sorted(p.name[: -len(".expected.json")] for p in (FIXTURES / source).glob("*.expected.json"))


def expected(source: str, case: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / source / f"{case}.expected.json").read_text())
    return data


def _first_string(path: Path, pick: Any) -> str | None:
    for _, record in iter_records(path):
        value = pick(record)
        if isinstance(value, str):
            return value
    return None


def stage(source: str, case: str, home: Path) -> tuple[Path, list[Path]]:
    """Copy the case byte for byte where the store looks; set the fixed mtime. Returns (path, sidecars)."""
    src = FIXTURES / source / f"{case}.jsonl"
    sidecar = FIXTURES / source / f"{case}.history.jsonl"
    sidecars = [sidecar] if sidecar.exists() else []
    if source == "claude":
        session_id = _first_string(src, lambda r: r.get("sessionId"))
        if session_id is None or "/" in session_id:
            session_id = case
        cwd = _first_string(src, lambda r: r.get("cwd"))
        encoded = re.sub(r"[^A-Za-z0-9]", "-", cwd) if cwd is not None else "-home-user-project"
        target = home / ".claude" / "projects" / encoded / f"{session_id}.jsonl"
        if sidecars:
            (home / ".claude").mkdir(parents=True, exist_ok=True)
            (home / ".claude" / "history.jsonl").write_bytes(sidecar.read_bytes())
    else:
        meta = None
        for _, record in iter_records(src):
            if record.get("type") == "session_meta" and isinstance(record.get("payload"), dict):
                meta = record["payload"]
                break
        stamp, rollout_id = "2026-01-01T00:00:00", case
        if meta is not None:
            from omp_session.format.ids import iso_to_ms

            ms = iso_to_ms(meta.get("timestamp"))
            if ms is not None:
                stamp = iso_from_ms(ms)[:19]
            if isinstance(meta.get("id"), str) and re.fullmatch(r"[0-9a-f]{8}-[0-9a-f-]{27}", meta["id"]):
                rollout_id = meta["id"]
        day = stamp[:10].replace("-", "/")
        target = home / ".codex" / "sessions" / day / f"rollout-{stamp.replace(':', '-')}-{rollout_id}.jsonl"
        if sidecars:
            (home / ".codex").mkdir(parents=True, exist_ok=True)
            (home / ".codex" / "session_index.jsonl").write_bytes(sidecar.read_bytes())
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(src.read_bytes())
    os.utime(target, ns=(MTIME_MS * 1_000_000, MTIME_MS * 1_000_000))
    return target, [src, *sidecars]


def synthetic_info(source: str, path: Path) -> ForeignSessionInfo:
    match = re.search(r"([0-9a-f]{8}-[0-9a-f-]{27})\.jsonl$", path.name, re.IGNORECASE)
    return ForeignSessionInfo(
        source=source,  # type: ignore[arg-type]
        id=match.group(1) if match else path.name[: -len(".jsonl")],
        path=str(path),
        cwd="/unlisted/cwd",
        created_ms=MTIME_MS,
        modified_ms=MTIME_MS,
    )


def error_of(error: Exception) -> dict[str, str]:
    return {"__error__": str(error), "__error_name__": "Error"}


def raw_result(
    source: str, case: str, home: Path, persist_dir: Path, *, lossless: bool
) -> tuple[dict[str, Any], list[str], ConvertedSession | None]:
    """The raw result of README "Raw-result protocol", and the input texts for the normaliser."""
    staged, inputs = stage(source, case, home)
    env = {"HOME": str(home)}
    store = make_store(source, env=env)
    listing = store.list()
    listed = [info for info in listing if info.path == str(staged)]
    info = listed[0] if listed else synthetic_info(source, staged)
    raw: dict[str, Any] = {
        "home": str(home),
        "dir": str(persist_dir),
        "harness": {"mtime_ms": MTIME_MS},
        "staged_path": str(staged),
        "listed": bool(listed),
        "list": [i.to_dict() for i in listing],
        "info": info.to_dict(),
    }
    converted: ConvertedSession | None = None
    try:
        converted = store.convert(info, lossless=lossless)
    except ForeignSessionError as error:
        raw["load_error"] = error_of(error)
    if converted is not None:
        manager = converted.to_manager()
        raw["header"] = manager.get_header()
        raw["entries"] = manager.get_entries()
        raw["leafId"] = manager.get_leaf_id()
        raw["context"] = converted.context().to_dict()
        raw["usage"] = converted.usage().to_dict()
        raw["sessionName"] = manager.get_session_name()
        raw["titleSource"] = manager.get_header().get("titleSource")
        raw["cwd"] = manager.get_cwd()
    raw["persisted"] = persisted(store, info, home, persist_dir, lossless=lossless)
    texts = [p.read_bytes().decode("utf-8", errors="surrogateescape") for p in inputs]
    return raw, texts, converted


def persisted(
    store: ForeignSessionStore, info: ForeignSessionInfo, home: Path, persist_dir: Path, *, lossless: bool
) -> dict[str, Any]:
    """omp's ``persistForeignSession`` with the harness's fallback cwd, as the raw ``persisted`` key."""
    fallback = home / "fallback-cwd"
    fallback.mkdir(exist_ok=True)
    try:
        converted = store.convert(info, lossless=lossless)
    except ForeignSessionError as error:
        return {"error": error_of(error)}
    path, _ = persist_new(converted, info, session_dir=persist_dir, fallback_cwd=str(fallback))
    data = path.read_bytes()
    lines = [json.loads(line) for line in data.split(b"\n") if line]
    header = lines[1]
    return {
        "file": str(path),
        "sessionId": header["id"],
        "cwd": header["cwd"],
        "sessionName": header.get("title"),
        "titleSource": header.get("titleSource"),
        "header": header,
        "leafId": lines[-1]["id"],
        "file_lines_raw": data.decode().split("\n")[:-1]
        if data.endswith(b"\n")
        else data.decode().split("\n"),
    }


def normalize(raw: dict[str, Any], texts: list[str]) -> dict[str, Any]:
    result: dict[str, Any] = normalizer.normalize_import(raw, texts)
    return result
