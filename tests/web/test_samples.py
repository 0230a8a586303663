"""The committed samples: produced by samples/generate.py (byte for byte) and covering what the
viewer has to show."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from omp_session.model.tree import SessionIndex
from omp_session.store.blobs import parse_blob_ref
from omp_session.store.loading import load_session
from omp_session.web.catalog import SessionCatalog

from .support import FORK, PAGINATION, SAMPLES

_PARENT = re.compile(rb'"parentSession":"[^"]*/sessions/')


def _files(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): _PARENT.sub(
            b'"parentSession":"<root>/sessions/', path.read_bytes()
        )
        for path in sorted(root.rglob("*"))
        if path.is_file() and (path.parent.name == "blobs" or path.suffix == ".jsonl")
    }


def test_generator_reproduces_the_committed_samples(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(SAMPLES / "generate.py"), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    assert _files(tmp_path) == _files(SAMPLES)


def test_samples_cover_what_the_viewer_shows() -> None:
    root = SAMPLES / "sessions"
    catalog = SessionCatalog(root)
    sessions = catalog.sessions()
    assert len(sessions) == 7
    assert len({s.cwd for s in sessions}) == 4
    kinds: set[str] = set()
    roles: set[str] = set()
    branched = 0
    for summary in sessions:
        loaded = load_session(summary.path)
        assert loaded.issues == [] and loaded.migrated_from is None
        index = SessionIndex(loaded.entries)
        tips = [e for e in loaded.entries if not index.children(e["id"])]
        branched += len(tips) > 1
        kinds |= {e["type"] for e in loaded.entries}
        roles |= {e["message"]["role"] for e in loaded.entries if e["type"] == "message"}
        blocks = [
            b
            for e in loaded.entries
            if e["type"] == "message"
            for b in e["message"].get("content") or []
            if isinstance(b, dict)
        ]
        kinds |= {f"block:{b['type']}" for b in blocks}
        for block in blocks:
            digest = parse_blob_ref(block.get("data")) if block["type"] == "image" else None
            if digest:
                assert (SAMPLES / "blobs" / digest).is_file()
                kinds.add("blob-image")
    assert branched >= 2
    assert {
        "compaction",
        "branch_summary",
        "label",
        "model_change",
        "thinking_level_change",
        "mode_change",
        "custom_message",
        "ttsr_injection",
        "mcp_tool_selection",
    } <= kinds
    assert {"block:thinking", "block:toolCall", "block:image", "blob-image"} <= kinds
    assert {"user", "assistant", "toolResult", "bashExecution", "pythonExecution", "fileMention"} <= roles
    fork = next(s for s in sessions if s.ref == FORK)
    assert fork.parent_session is not None and catalog.parent_ref(fork.parent_session) == PAGINATION
