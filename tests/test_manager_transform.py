"""The persistence transform through SessionManager (spec §7.4, §7.5 step 6, §7.7): blobs,
truncation, stripped fields, and in-memory sessions that never touch the disk."""

from __future__ import annotations

import base64
import copy
import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from omp_session import SessionManager
from tests.helpers import assistant, read_lines, user

NOTICE = "\n\n[Session persistence truncated large content]"
LIMIT = 500_000


def b64(n_chars: int) -> str:
    """A base64-looking string of exactly ``n_chars`` characters."""
    return ("QUJD" * (n_chars // 4 + 1))[:n_chars]


def image(data: str) -> dict[str, Any]:
    return {"type": "image", "data": data, "mimeType": "image/png"}


def js_len(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def sha_of_decoded(data: str) -> str:
    return hashlib.sha256(base64.b64decode(data)).hexdigest()


@pytest.fixture
def session(tmp_path: Path) -> SessionManager:
    manager = SessionManager.open(tmp_path / "s.jsonl")
    return manager


def written(session: SessionManager, index: int = -1) -> dict[str, Any]:
    path = session.get_session_file()
    assert path is not None
    return read_lines(Path(path))[index]


def reopen(session: SessionManager) -> SessionManager:
    path = session.get_session_file()
    session.close()
    assert path is not None
    return SessionManager.open(path, read_only=True)


# -- images --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("size", "external"), [(1020, False), (1023, False), (1024, True), (1500, True)])
def test_image_externalisation_threshold(
    session: SessionManager, isolated_agent_dir: Path, size: int, external: bool
) -> None:
    data = b64(size)
    message = {"role": "user", "content": [{"type": "text", "text": "look"}, image(data)], "timestamp": 1}
    original = copy.deepcopy(message)
    session.append_message(message)
    stored = written(session)["message"]["content"][1]
    assert message == original  # memory keeps the original
    if external:
        digest = sha_of_decoded(data)
        assert stored == {"type": "image", "data": f"blob:sha256:{digest}", "mimeType": "image/png"}
        assert (isolated_agent_dir / "blobs" / digest).read_bytes() == base64.b64decode(data)
    else:
        assert stored["data"] == data
        assert (
            not (isolated_agent_dir / "blobs").exists()
            or list((isolated_agent_dir / "blobs").iterdir()) == []
        )
    with reopen(session) as loaded:
        assert loaded.get_entries()[0]["message"]["content"][1]["data"] == data


def test_images_in_tool_results_and_custom_messages_round_trip(session: SessionManager) -> None:
    data = b64(2048)
    result = {
        "role": "toolResult",
        "toolCallId": "t",
        "toolName": "read",
        "content": [image(data)],
        "isError": False,
        "timestamp": 1,
    }
    session.append_message(result)
    session.append_custom_message_entry("shot", [image(data)], True)
    assert written(session, 1)["message"]["content"][0]["data"].startswith("blob:sha256:")
    assert written(session, 2)["content"][0]["data"].startswith("blob:sha256:")
    with reopen(session) as loaded:
        first, second = loaded.get_entries()
        assert first["message"]["content"][0]["data"] == data
        assert second["content"][0]["data"] == data


def test_images_nested_in_details_are_externalised_but_not_resolved(session: SessionManager) -> None:
    # The asymmetry of §7.4: omp resolves only message/custom_message content arrays on load.
    data = b64(1024)
    session.append_custom_entry("x", {"content": [image(data)]})
    ref = written(session)["data"]["content"][0]["data"]
    assert ref == f"blob:sha256:{sha_of_decoded(data)}"
    with reopen(session) as loaded:
        assert loaded.get_entries()[0]["data"]["content"][0]["data"] == ref


def test_image_url_data_urls_are_stored_by_their_utf8_bytes(
    session: SessionManager, isolated_agent_dir: Path
) -> None:
    url = "data:image/png;base64,QUJD"  # no length threshold
    session.append_custom_entry("x", {"deep": [{"image_url": url}], "image_url": "https://example.com/a.png"})
    stored = written(session)["data"]
    digest = hashlib.sha256(url.encode()).hexdigest()
    assert stored["deep"][0]["image_url"] == f"blob:sha256:{digest}"
    assert stored["image_url"] == "https://example.com/a.png"  # not a data URL
    assert (isolated_agent_dir / "blobs" / digest).read_bytes() == url.encode()
    with reopen(session) as loaded:
        assert loaded.get_entries()[0]["data"]["deep"][0]["image_url"] == url


def test_missing_blob_leaves_the_reference(session: SessionManager, isolated_agent_dir: Path) -> None:
    data = b64(1024)
    session.append_message({"role": "user", "content": [image(data)], "timestamp": 1})
    digest = sha_of_decoded(data)
    (isolated_agent_dir / "blobs" / digest).unlink()
    with reopen(session) as loaded:
        assert loaded.get_entries()[0]["message"]["content"][0]["data"] == f"blob:sha256:{digest}"


def test_existing_blob_references_are_not_touched(session: SessionManager) -> None:
    ref = "blob:sha256:" + "0" * 64
    session.append_message({"role": "user", "content": [image(ref)], "timestamp": 1})
    assert written(session)["message"]["content"][0]["data"] == ref


def test_blobs_live_in_the_agent_dir_even_with_an_explicit_session_dir(
    tmp_path: Path, isolated_agent_dir: Path
) -> None:
    session = SessionManager.create("/proj", tmp_path / "explicit")
    session.append_message({"role": "user", "content": [image(b64(1024))], "timestamp": 1})
    session.append_message(assistant())
    assert len(list((isolated_agent_dir / "blobs").iterdir())) == 1
    assert not (tmp_path / "explicit" / "blobs").exists()
    session.close()


# -- truncation (500 000 UTF-16 units) -----------------------------------------------------------


def test_string_of_exactly_the_limit_is_kept(session: SessionManager) -> None:
    text = "x" * LIMIT
    session.append_message(user(text))
    assert written(session)["message"]["content"] == text


def test_longer_string_is_cut_with_a_notice(session: SessionManager) -> None:
    text = "x" * (LIMIT + 1)
    session.append_message(user(text))
    stored = written(session)["message"]["content"]
    assert stored.endswith(NOTICE) and len(stored) == LIMIT
    assert stored == "x" * (LIMIT - len(NOTICE)) + NOTICE
    assert session.get_entries()[0]["message"]["content"] == text  # memory keeps the original
    with reopen(session) as loaded:
        assert loaded.get_entries()[0]["message"]["content"] == stored


@pytest.mark.parametrize("offset", [0, 1, 2])
def test_emoji_at_the_cut_is_never_split(session: SessionManager, offset: int) -> None:
    keep = LIMIT - len(NOTICE)
    # place an astral character (2 UTF-16 units) so that its high surrogate is the last kept unit
    prefix = "a" * (keep - 1 - offset)
    text = prefix + "😀" * 3 + "b" * LIMIT
    session.append_message(user(text))
    stored = written(session)["message"]["content"]
    assert stored.endswith(NOTICE)
    body = stored[: -len(NOTICE)]
    assert body.startswith(prefix)
    assert "\ufffd" not in body and not any(0xD800 <= ord(c) <= 0xDFFF for c in body)
    expected_units = keep - 1 if offset % 2 == 0 else keep
    assert js_len(body) == expected_units
    assert js_len(stored) <= LIMIT


def test_signatures_are_blanked_and_line_count_recomputed(session: SessionManager) -> None:
    long = "s" * (LIMIT + 10)
    message = assistant("answer")
    message["content"] = [
        {"type": "thinking", "thinking": "t", "thinkingSignature": long},
        {"type": "text", "text": "x", "textSignature": long},
        {"type": "toolCall", "id": "c", "name": "n", "arguments": {}, "thoughtSignature": long},
    ]
    session.append_message(message)
    content = written(session)["message"]["content"]
    assert [
        block.get("thinkingSignature", block.get("textSignature", block.get("thoughtSignature")))
        for block in content
    ] == ["", "", ""]
    lines = "line\n" * 150_000
    mention = {
        "role": "fileMention",
        "files": [{"path": "big.txt", "content": lines, "lineCount": 150_001}],
        "timestamp": 1,
    }
    session.append_message(mention)
    stored = written(session)["message"]["files"][0]
    assert stored["content"].endswith(NOTICE)
    assert stored["lineCount"] == stored["content"].count("\n") + 1 < 150_001


def test_streaming_scratch_fields_are_dropped(session: SessionManager) -> None:
    message = assistant()
    message["content"][0]["partialJson"] = '{"a":'
    message["jsonlEvents"] = ["e1"]
    session.append_message(message)
    stored = written(session)["message"]
    assert "jsonlEvents" not in stored and "partialJson" not in stored["content"][0]
    assert session.get_entries()[0]["message"]["jsonlEvents"] == ["e1"]


# -- in-memory sessions write nothing ------------------------------------------------------------


def snapshot(*roots: Path) -> set[str]:
    return {os.path.join(d, f) for root in roots for d, _, files in os.walk(root) for f in [*files, "."]}


def test_in_memory_session_never_touches_the_disk(
    tmp_path: Path, isolated_agent_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    before = snapshot(tmp_path, isolated_agent_dir)
    session = SessionManager.in_memory()
    assert session.get_cwd() == str(tmp_path) and session.get_session_dir() == ""
    assert not session.is_persisted()
    u1 = session.append_message({"role": "user", "content": [image(b64(4096))], "timestamp": 1})
    session.append_message(assistant())
    session.append_message(user("x" * (LIMIT + 1)))
    session.set_session_name("name")
    session.ensure_on_disk()
    session.append_label_change(u1, "L")
    assert session.create_branched_session(u1) is None
    assert session.fork() is None
    assert session.new_session() is None
    session.flush()
    session.close()
    assert snapshot(tmp_path, isolated_agent_dir) == before


def test_undecodable_large_image_stays_inline(session: SessionManager) -> None:
    data = "A" * 1025  # not valid base64 (bad padding): nothing to hash
    session.append_message({"role": "user", "content": [image(data)], "timestamp": 1})
    assert written(session)["message"]["content"][0]["data"] == data


# -- OpenAI replay metadata (§6.6) ---------------------------------------------------------------


def replay_assistant() -> dict[str, Any]:
    message = assistant("answer")
    message["content"] = [
        {"type": "thinking", "thinking": "hmm", "thinkingSignature": "enc-sig"},
        {"type": "text", "text": "answer"},
    ]
    message["providerPayload"] = {
        "type": "openaiResponsesHistory",
        "provider": "openai",
        "items": [{"id": 1}],
    }
    return message


def test_openai_replay_metadata_is_dropped_on_load_but_not_from_the_file(session: SessionManager) -> None:
    session.append_message(replay_assistant())
    other = assistant("kept")
    other["providerPayload"] = {"type": "somethingElse"}
    session.append_message(other)
    path = Path(session.get_session_file() or "")
    on_disk = path.read_bytes()
    with reopen(session) as loaded:
        first, second = (e["message"] for e in loaded.get_entries())
        assert "providerPayload" not in first
        assert first["content"][0] == {"type": "thinking", "thinking": "hmm"}
        assert second["providerPayload"] == {"type": "somethingElse"}
    assert path.read_bytes() == on_disk  # sanitising does not rewrite the file


def test_fork_from_sanitises_openai_replay_metadata(session: SessionManager, tmp_path: Path) -> None:
    session.append_message(replay_assistant())
    source = session.get_session_file()
    session.close()
    assert source is not None
    forked = SessionManager.fork_from(source, "/p", tmp_path / "out")
    stored = read_lines(Path(forked.get_session_file() or ""))[1]["message"]
    assert "providerPayload" not in stored and "thinkingSignature" not in stored["content"][0]
    forked.close()
