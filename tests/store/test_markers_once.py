"""The one list of markers (``MARKERS``, format/markers.py) decides which lines a transform may
change: removing any single entry changes what a session reads or writes (issue 23 item 2).

Each entry has the cases only it catches, run on real files through ``SessionManager`` on every
read path (tests/store/read_paths.py), with the list whole and then without that entry:

- a rename, which rewrites the whole file copying the lines of unchanged entries byte for byte
  unless a line holds a ``rewrite`` marker: without it the line is copied as it was (an inline
  4 KB image stays inline instead of moving to the blob store, a scratch field or OpenAI replay
  that memory dropped comes back, a CR stays);
- an append, whose line is searched for the ``persist`` markers: without one, the entry is written
  as it is (an image inline, a scratch field kept);
- an open, whose load-side tests resolve blob references (in ``image_url`` fields too where the
  file has one), drop OpenAI replay history (omp 13.19), transform a line whose ``\\u`` escape
  spells a marker, or leave a file naming ``github-copilot`` to a full load under omp 18 (whose
  dropped replay makes the next write a rewrite with a backup). The last two are the offset
  index's (a full load tests the decoded file), so only the index's paths change without them.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from omp_session import Runtime
from omp_session.format import markers
from omp_session.format.blob_refs import BLOB_PREFIX
from omp_session.format.markers import MARKERS
from omp_session.store.blobs import FileBlobStore
from omp_session.store.tuning import ReadStrategy

from .read_paths import PAD, READS, open_by

_RAW = bytes(range(256)) * 12
_IMAGE = base64.b64encode(_RAW).decode("ascii")  # 4 KB: moved to the blob store
_TIME = "2026-01-01T00:00:01.000Z"
_HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": _TIME, "cwd": "/w"}
Entry = dict[str, Any]


def _entry(number: int, **fields: Any) -> Entry:
    # e0 is the padding that makes the file indexed; each entry follows the one before.
    return {"type": "message", "id": f"e{number}", "parentId": f"e{number - 1}", "timestamp": _TIME, **fields}


def _user(content: Any) -> Entry:
    return {"message": {"role": "user", "content": content, "timestamp": 1}}


def _assistant(provider: str = "openai", replay: bool = False) -> Entry:
    message: Entry = {
        "role": "assistant",
        "content": [{"type": "text", "text": "a"}],
        "provider": provider,
        "model": "m",
        "timestamp": 2,
    }
    if replay:
        message["providerPayload"] = {"type": "openaiResponsesHistory", "provider": provider, "items": []}
    return {"message": message}


def _encoded(entry: Entry) -> bytes:
    return json.dumps(entry, separators=(",", ":")).encode()


def _write(directory: Path, lines: list[bytes]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    pad = {"type": "message", "id": "e0", "parentId": None, "timestamp": _TIME, **_user(PAD)}
    path = directory / "s.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in [_encoded(_HEADER), _encoded(pad), *lines]))
    return path


def _blob(path: Path, data: bytes) -> str:
    """A reference to ``data`` in the blob store of ``path``'s agent directory."""
    return BLOB_PREFIX + FileBlobStore(Runtime(agent_dir=path.parent / "agent").blobs_dir()).put(data)


# -- the cases -------------------------------------------------------------------------------------

#: Per rewrite marker of omp 13.19's rules: the line only it catches (as another program wrote it).
_CAUGHT_BY: dict[bytes, bytes] = {
    b'"image"': _encoded(_entry(1, **_user([{"type": "image", "data": _IMAGE, "mimeType": "image/png"}]))),
    b'"image_url"': _encoded(
        _entry(2, **_user([{"type": "text", "text": "t", "image_url": "data:image/png;base64," + _IMAGE}]))
    ),
    b'"partialJson"': _encoded(_entry(3, **_user([{"type": "text", "text": "t", "partialJson": "{"}]))),
    b'"jsonlEvents"': _encoded(_entry(4, **_user([{"type": "text", "text": "t", "jsonlEvents": ["x"]}]))),
    b"openaiResponsesHistory": _encoded(_entry(5, **_assistant(replay=True))),
    b"\r": _encoded(_entry(6, **_user("plain"))) + b"\r",
}


def _copied(written: bytes, caught: dict[bytes, bytes]) -> dict[bytes, bool]:
    """Which of the lines ``caught`` the rewrite copied as they were."""
    return {marker: line + b"\n" in written for marker, line in caught.items()}


def _renamed(directory: Path, read: ReadStrategy) -> dict[bytes, bool]:
    path = _write(directory, list(_CAUGHT_BY.values()))
    with open_by(path, read, dialect="13.19") as session:
        assert session.set_session_name("renamed", "user")
    return _copied(path.read_bytes(), _CAUGHT_BY)


_SPILLED = _encoded(  # omp 18.3 writes a spilled MCP result without its structuredContent
    _entry(
        1,
        message={
            "role": "toolResult",
            "toolCallId": "c",
            "toolName": "mcp_x",
            "content": [{"type": "text", "text": "spilled"}],
            "details": {
                "serverName": "srv",
                "mcpToolName": "x",
                "structuredContent": {"k": 1},
                "meta": {"truncation": {"artifactId": "art"}},
            },
            "isError": False,
            "timestamp": 3,
        },
    )
)


def _renamed_183(directory: Path, read: ReadStrategy) -> dict[bytes, bool]:
    path = _write(directory, [_SPILLED, _encoded(_entry(2, **_assistant()))])
    with open_by(path, read, dialect="18.3") as session:
        assert session.set_session_name("renamed", "user")
    return _copied(path.read_bytes(), {b'"structuredContent"': _SPILLED})


#: Per persistence marker: a message only it makes the append transform.
_PERSISTED: dict[bytes, Entry] = {
    b'"image"': _user([{"type": "image", "data": _IMAGE, "mimeType": "image/png"}])["message"],
    b'"image_url"': _user([{"type": "text", "image_url": "data:image/png;base64," + _IMAGE}])["message"],
    b'"partialJson"': _user([{"type": "text", "text": "t", "partialJson": "{"}])["message"],
    b'"jsonlEvents"': _user([{"type": "text", "text": "t", "jsonlEvents": ["x"]}])["message"],
}


def _appended(marker: bytes) -> Callable[[Path, ReadStrategy], bool]:
    def appended(directory: Path, read: ReadStrategy) -> bool:
        """Whether the message is written as it was given (untransformed)."""
        path = _write(directory, [_encoded(_entry(1, **_assistant()))])
        with open_by(path, read, dialect="13.19") as session:
            session.append_message(_PERSISTED[marker])
        return bool(json.loads(path.read_bytes().splitlines()[-1])["message"] == _PERSISTED[marker])

    return appended


def _resolved(directory: Path, read: ReadStrategy) -> list[Any]:
    """What an open makes of blob references: in an image block, an ``image_url``, and one whose
    line spells the reference with a ``\\u`` escape."""
    path = directory / "s.jsonl"
    ref, url = _blob(path, _RAW), _blob(path, b"data:image/png;base64," + _IMAGE.encode())
    escaped = _encoded(_entry(3, **_user([{"type": "image", "data": ref, "mimeType": "image/png"}])))
    lines = [
        _encoded(_entry(1, **_user([{"type": "image", "data": ref, "mimeType": "image/png"}]))),
        _encoded(_entry(2, **_user([{"type": "text", "text": "t", "image_url": url}]))),
        escaped.replace(b"blob:", b"blob\\u003a"),
        _encoded(_entry(4, **_assistant())),
    ]
    _write(directory, lines)
    with open_by(path, read, read_only=True, dialect="13.19") as session:
        entries = session.get_entries()
        return [
            entries[at]["message"]["content"][0].get(key)
            for at, key in ((1, "data"), (2, "image_url"), (3, "data"))
        ]


def _replay_in_memory(directory: Path, read: ReadStrategy) -> bool:
    path = _write(
        directory, [_encoded(_entry(1, **_user("q"))), _encoded(_entry(2, **_assistant(replay=True)))]
    )
    with open_by(path, read, read_only=True, dialect="13.19") as session:
        return "providerPayload" in session.get_entries()[2]["message"]


def _copilot_rewrite(directory: Path, read: ReadStrategy) -> bool:
    """Whether omp 18's next write after an open that dropped a copilot replay rewrote the file."""
    lines = [
        _encoded(_entry(1, **_assistant("github-copilot", replay=True))),
        _encoded(_entry(2, **_assistant(replay=True))),
    ]
    path = _write(directory, lines)
    # Without the marker the index serves the file, else it leaves it to a full load (not lazy).
    with open_by(path, read, lazy=False, dialect="18.3") as session:
        session.append_message({"role": "user", "content": "next", "timestamp": 4})
    return path.with_name("s.jsonl.replay.bak").exists()


Case = Callable[[Path, ReadStrategy], Any]
#: Per marker: its cases, and whether a full load sees its removal (the index's own markers not).
_CASES: dict[bytes, list[tuple[Case, bool]]] = {
    b'"image"': [(_renamed, True), (_appended(b'"image"'), True)],
    b'"image_url"': [(_renamed, True), (_appended(b'"image_url"'), True)],
    b'"partialJson"': [(_renamed, True), (_appended(b'"partialJson"'), True)],
    b'"jsonlEvents"': [(_renamed, True), (_appended(b'"jsonlEvents"'), True)],
    b"openaiResponsesHistory": [(_renamed, True), (_replay_in_memory, True)],
    b'"structuredContent"': [(_renamed_183, True)],
    b"\r": [(_renamed, True)],
    BLOB_PREFIX.encode(): [(_resolved, True)],
    b"image_url": [(_resolved, True)],
    b"github-copilot": [(_copilot_rewrite, False)],
    b"\\u": [(_resolved, False)],
}


def test_every_marker_has_its_cases() -> None:
    assert list(_CASES) == [marker.text for marker in MARKERS]
    for marker, line in _CAUGHT_BY.items():  # each line is caught by its own marker only
        assert [m.text for m in MARKERS if m.rewrite and m.text in line] == [marker]


@pytest.mark.parametrize("read", READS)
@pytest.mark.parametrize("marker", [marker.text for marker in MARKERS], ids=repr)
def test_removing_a_marker_changes_what_a_session_reads_or_writes(
    marker: bytes, read: ReadStrategy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = [case(tmp_path / f"whole-{n}", read) for n, (case, _) in enumerate(_CASES[marker])]
    monkeypatch.setattr(markers, "MARKERS", tuple(m for m in MARKERS if m.text != marker))
    without = [case(tmp_path / f"without-{n}", read) for n, (case, _) in enumerate(_CASES[marker])]
    for (case, seen_by_full_load), before, after in zip(_CASES[marker], whole, without, strict=True):
        if read is ReadStrategy.FULL and not seen_by_full_load:
            assert after == before, case.__name__
            continue
        assert after != before, case.__name__
        if isinstance(before, dict):  # a rename: only the line the marker catches is copied now
            assert not any(before.values()) and after == {m: m == marker for m in before}
