"""The one list of markers (``format/transform.py``) decides which lines a transform may change:
removing any single entry changes what is written (issue 23 item 2).

A rename of an omp 13.19 session rewrites the whole file, copying the lines of unchanged entries
byte for byte (``store/_indexed/rewrite.py``) unless a line holds a marker of ``REWRITE_MARKERS``.
For every marker the session has one line that only that marker catches; without it, the rewrite
would copy that line as it was (an inline image stays inline, a scratch field or OpenAI replay
history that memory dropped comes back, a CR stays). The persistence transform's own search
(``PERSIST_MARKERS``) is mutated the same way on ``prepare_for_disk``.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest

from omp_session import SessionManager
from omp_session.format import transform
from omp_session.format.codec import encode_json
from omp_session.manager.runtime import Runtime
from omp_session.store._indexed import rewrite
from omp_session.store.blobs import MemoryBlobStore

_IMAGE = base64.b64encode(bytes(range(256)) * 12).decode("ascii")  # 4 KB: moved to the blob store
_DATA_URL = "data:image/png;base64," + _IMAGE
_HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}


def _entry(number: int, parent: int | None, **fields: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"e{number}",
        "parentId": f"e{parent}" if parent is not None else None,
        "timestamp": "2026-01-01T00:00:01.000Z",
        **fields,
    }


def _user(content: Any) -> dict[str, Any]:
    return {"message": {"role": "user", "content": content, "timestamp": 1}}


#: Per marker of REWRITE_MARKERS: the line only it catches (as another program wrote it).
_CAUGHT_BY: dict[bytes, bytes] = {
    b'"image"': json.dumps(
        _entry(1, None, **_user([{"type": "image", "data": _IMAGE, "mimeType": "image/png"}])),
        separators=(",", ":"),
    ).encode(),
    b'"image_url"': json.dumps(
        _entry(
            2, 1, **_user([{"type": "text", "text": "t", "image_url": "data:image/png;base64," + _IMAGE}])
        ),
        separators=(",", ":"),
    ).encode(),
    b'"partialJson"': json.dumps(
        _entry(3, 2, **_user([{"type": "text", "text": "t", "partialJson": "{"}])), separators=(",", ":")
    ).encode(),
    b'"jsonlEvents"': json.dumps(
        _entry(4, 3, **_user([{"type": "text", "text": "t", "jsonlEvents": ["x"]}])), separators=(",", ":")
    ).encode(),
    b"openaiResponsesHistory": json.dumps(
        _entry(
            5,
            4,
            message={
                "role": "assistant",
                "content": [{"type": "text", "text": "a"}],
                "provider": "openai",
                "model": "m",
                "providerPayload": {"type": "openaiResponsesHistory", "items": []},
                "timestamp": 2,
            },
        ),
        separators=(",", ":"),
    ).encode(),
    b"\r": json.dumps(_entry(6, 5, **_user("plain")), separators=(",", ":")).encode() + b"\r",
}


def _renamed(tmp_path: Path, name: str) -> bytes:
    """The bytes of the session above after a rename (a full rewrite under omp 13.19's rules)."""
    path = tmp_path / name / "s.jsonl"
    path.parent.mkdir()
    lines = [json.dumps(_HEADER, separators=(",", ":")).encode(), *_CAUGHT_BY.values()]
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    runtime = Runtime(agent_dir=tmp_path / name / "agent", breadcrumbs=False, offset_index=False)
    session = SessionManager.open(path, runtime=runtime)
    try:
        assert session.set_session_name("renamed", "user")
    finally:
        session.close()
    return path.read_bytes()


#: A spilled MCP result's ``structuredContent`` is dropped under omp 18.3's rules only; its line is
#: not part of this omp 13.19 session (the 18.3 corpus, tests/test_conformance_omp183.py, has it).
_OMP_183_ONLY = {transform.STRUCTURED_CONTENT_MARKER}
_MUTATED = [marker for marker in transform.REWRITE_MARKERS if marker not in _OMP_183_ONLY]


def test_every_rewrite_marker_has_its_line() -> None:
    assert set(_CAUGHT_BY) == set(_MUTATED)
    for marker, line in _CAUGHT_BY.items():
        assert [m for m in transform.REWRITE_MARKERS if m in line] == [marker]


@pytest.mark.parametrize("marker", _MUTATED, ids=repr)
def test_removing_a_rewrite_marker_changes_what_a_rename_writes(
    marker: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written = _renamed(tmp_path, "all")
    assert _CAUGHT_BY[marker] + b"\n" not in written  # encoded again: transformed (or LF only)
    monkeypatch.setattr(
        rewrite, "_ENCODE_MARKERS", tuple(m for m in transform.REWRITE_MARKERS if m != marker)
    )
    mutated = _renamed(tmp_path, "without")
    assert _CAUGHT_BY[marker] + b"\n" in mutated  # copied as it was: the transform never ran
    assert [line for line in mutated.split(b"\n") if line not in written.split(b"\n")] == [_CAUGHT_BY[marker]]


#: Per marker of PERSIST_MARKERS: an entry whose line only it catches, and what the transform does.
_PERSISTED: dict[bytes, dict[str, Any]] = {
    b'"image"': _entry(1, None, **_user([{"type": "image", "data": _IMAGE, "mimeType": "image/png"}])),
    b'"image_url"': _entry(2, 1, **_user([{"type": "text", "image_url": "data:image/png;base64," + _IMAGE}])),
    b'"partialJson"': _entry(3, 2, **_user([{"type": "text", "text": "t", "partialJson": "{"}])),
    b'"jsonlEvents"': _entry(4, 3, **_user([{"type": "text", "text": "t", "jsonlEvents": ["x"]}])),
}


@pytest.mark.parametrize("marker", transform.PERSIST_MARKERS, ids=repr)
def test_removing_a_persistence_marker_changes_what_an_append_writes(
    marker: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = _PERSISTED[marker]
    written = transform.prepare_for_disk(entry, MemoryBlobStore())
    assert written != encode_json(entry) + b"\n"  # transformed
    others = [m for m in transform.PERSIST_MARKERS if m != marker]
    monkeypatch.setattr(transform, "_MARKERS", re.compile(b"|".join(map(re.escape, others))))
    assert transform.prepare_for_disk(entry, MemoryBlobStore()) == encode_json(entry) + b"\n"
