"""The listing's one summary (``store/listing/summary.py``: ``summarize_bytes``, and
``summarize_head``, which reads a file's head and the rest on first use) equals the reference
(``listing_reference.summarize_records`` over ``decode_lines``) on generated and odd files
(non-canonical key order, blank and torn lines, huge and deeply nested lines, odd shapes of every
field read, v1 files, title slots) and on the files of the three conformance corpora."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omp_session.format.codec import decode_lines
from omp_session.store.listing import omp18
from omp_session.store.listing import summary as listing_summary
from omp_session.store.listing.summary import summarize_bytes, summarize_head
from tests.store.listing_reference import summarize_records

CORPORA = [
    *sorted((Path(__file__).parents[1] / "conformance" / "load").glob("*.jsonl")),
    *sorted((Path(__file__).parents[1] / "conformance_omp18").rglob("*.jsonl")),
    *sorted((Path(__file__).parents[1] / "conformance_omp183").rglob("*.jsonl")),
]
PATH = Path("/sessions/-p/s.jsonl")

_STAMPS = st.sampled_from(
    [
        "2026-02-27T09:00:02.121Z",
        "2026-02-27T09:00:03.000Z",
        "2026-02-27T10:00:00-0900",  # earlier as text, later as a time
        "2026-13-01T00:00:00.000Z",  # shaped like a canonical time, not one
        "2026-02-27",
        "٢٠٢٦-02-27T09:00:02.121Z",  # Unicode digits
        "x",
        "",
        5,
        None,
    ]
)
_TEXTS = st.sampled_from(["", "hi", "/mode", "  ", "é\u2028x", "a\nb", "\ud800", "/etc/hosts is broken"])
_TOTALS = st.sampled_from([0.25, 1, 0, -0.0, 2**70, True, "3", None, 1e300])
_ABSENT = object()


def _usage(draw: st.DrawFn, tidy: bool) -> Any:
    shape = draw(st.integers(2 if tidy else 0, 9))
    if shape == 0:
        return "usage"
    if shape == 1:
        return {"input": 1}
    if shape == 2 and not tidy:
        return {"cost": 4}
    if shape == 3:
        return _ABSENT
    return {"input": 1, "output": 2, "cost": {"input": 0.5, "total": draw(_TOTALS)}}


def _content(draw: st.DrawFn, tidy: bool) -> Any:
    shape = draw(st.integers(0, 7))
    if shape <= 2:
        return draw(_TEXTS)
    if shape == 3:
        return draw(st.sampled_from([None, []] if tidy else [None, 5, {"type": "text", "text": "x"}, []]))
    blocks: list[Any] = []
    for _ in range(draw(st.integers(0, 3))):
        blocks.append(
            draw(
                st.sampled_from(
                    [
                        {"type": "text", "text": "tx"},
                        {"text": "no type", "type": "text"},
                        {"type": "text", "text": 5},
                        {
                            "type": "toolCall",
                            "id": "c",
                            "name": "bash",
                            "arguments": {"type": "text", "text": "no"},
                        },
                        {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                        {"type": "thinking", "thinking": "hm"},
                        *([] if tidy else ["plain", None]),
                    ]
                )
            )
        )
    return blocks


def _message(draw: st.DrawFn, tidy: bool) -> Any:
    if draw(st.integers(0, 12)) == 0:
        return draw(st.sampled_from([None, {}] if tidy else [None, "text", [], {}]))
    role = draw(st.sampled_from(["user", "assistant", "assistant", "toolResult", "custom", None, 3]))
    message: dict[str, Any] = {"role": role, "content": _content(draw, tidy)}
    if role == "assistant":
        usage = _usage(draw, tidy)
        if usage is not _ABSENT:
            message["usage"] = usage
    if role == "toolResult":
        message["toolName"] = draw(st.sampled_from(["task", "bash", None]))
        details = draw(st.sampled_from(["usage", "other", "list", "absent", "null"]))
        if details == "usage":
            usage = _usage(draw, tidy)
            message["details"] = {"usage": usage} if usage is not _ABSENT else {}
        elif details == "other":
            message["details"] = {"exitCode": 0}
        elif details == "list":
            message["details"] = [1, 2]
        elif details == "null":
            message["details"] = None
    if draw(st.booleans()):  # omp's order puts role first; any order is valid JSON
        message = dict(reversed(list(message.items())))
    return message


def _entry(draw: st.DrawFn, number: int, tidy: bool) -> dict[str, Any]:
    kind = draw(st.sampled_from(["message"] * 6 + ["compaction", "model_usage", "label", "custom", 7]))
    entry: dict[str, Any] = {"type": kind}
    if draw(st.integers(0, 5)):  # v1 entries have no ids
        entry.update(id=f"e{number}", parentId=f"e{number - 1}" if number else None)
    stamp = draw(_STAMPS)
    if stamp is not None or draw(st.booleans()):
        entry["timestamp"] = stamp
    if kind == "message" or draw(st.integers(0, 9)) == 0:
        entry["message"] = _message(draw, tidy)
    if kind == "compaction":
        entry.update(summary="s", shortSummary=draw(st.sampled_from(["short", 5, None, ""])))
    if kind == "model_usage" or (draw(st.integers(0, 19)) == 0 and not tidy):
        usage = _usage(draw, tidy)
        if usage is not _ABSENT:
            entry["usage"] = usage
    if draw(st.integers(0, 4)) == 0:
        entry = dict(reversed(list(entry.items())))
    return entry


_ODD_LINES = [
    b"",
    b"   ",
    b"\r",
    b"not json",
    b"[1,2]",
    b"null",
    b'"text"',
    b'{"type":"message","message":{"role":"user","content":"\\ud83d"}}',  # a lone surrogate
    b'{"type":"message","message":{"role":"user","content":"bad \xff utf-8"}}',
    b'{"type":"message","junk":"\xfe","message":{"role":"assistant","content":"ok"}}',
    b'{"type":"compaction","type":"message","message":{"role":"user","content":"duplicate keys"}}',
    b'{"type":"message","message":{"role":"user","content":"first"},"message":null}',
    b'{"type":"message","message":{"role":"assistant","content":"n","usage":{"cost":{"total":1e400}}}}',
    b'{"type":"message","message":{"role":"assistant","content":"n","usage":{"cost":{"total":NaN}}}}',
    b'{"type":"message","message":{"role":"assistant","content":"n","usage":{"cost":{"total":123456789012345678901234567890}}}}',
    b'{"type":"model_usage","usage":{"cost":{"total":18446744073709551616}}}',
    b'{"type":"message","timestamp":"2026-02-27T09:00:09.000Z","message":{"role":"user","content":"torn',
    b'{"\\u0074ype":"message","message":{"role":"user","content":"escaped key"}}',
    b'{"type":"message","message":{"role":"user","content":"x"}} trailing',
    b' {"type":"message","message":{"role":"user","content":"spaces"}} \r',
]


def _dump(value: Any, separators: tuple[str, str] = (",", ":")) -> bytes:
    """JSON as omp writes it (raw UTF-8; a lone surrogate as a ``\\ud83d`` escape)."""
    text = json.dumps(value, ensure_ascii=False, separators=separators)
    try:
        return text.encode()
    except UnicodeEncodeError:
        return json.dumps(value, separators=separators).encode()


def _deep(depth: int, where: str = "custom") -> bytes:
    """A line nested ``depth`` levels deep: in a field no summary reads (a custom entry's data), or
    in one the typed decoding reads (msgspec's own nesting limit is below orjson's 1,024 levels)."""
    nested = b"[" * depth + b"]" * depth
    if where == "custom":
        return b'{"type":"custom","data":' + nested + b"}"
    if where == "id":
        return b'{"type":"title_change","id":' + nested + b"}"
    return b'{"type":"message","message":{"role":"user","content":' + nested + b"}}"


@st.composite
def session_files(draw: st.DrawFn) -> bytes:
    lines: list[bytes] = []
    tidy = draw(st.booleans())  # only shapes msgspec reads: the whole-file path
    if draw(st.integers(0, 5)) == 0:  # an omp 18 title slot
        slot = {
            "type": "title",
            "v": 1,
            "title": draw(_TEXTS),
            "updatedAt": "2026-01-01T00:00:00.000Z",
            "pad": "",
        }
        lines.append(_dump(slot))
    if draw(st.integers(0, 9)) == 0:
        lines.append(draw(st.sampled_from(_ODD_LINES)))
    if draw(st.integers(0, 12)):
        header: dict[str, Any] = {
            "type": "session",
            "version": 3,
            "id": draw(st.sampled_from(["s1", "s1", "s1", "", 5])),
        }
        header["timestamp"] = draw(_STAMPS)
        header["cwd"] = "/p"
        if draw(st.booleans()):
            header["title"] = draw(st.sampled_from(["Named", None, 5]))
        if draw(st.booleans()):
            header["parentSession"] = "/sessions/parent.jsonl"
        lines.append(_dump(header))
    for number in range(draw(st.integers(0, 16))):
        pick = draw(st.integers(0, 19)) if not tidy else 3
        if pick == 0:
            lines.append(draw(st.sampled_from(_ODD_LINES)))
        elif pick == 1:
            depth = draw(st.sampled_from([10, 900, 1000, 1023, 1024, 1100]))
            lines.append(_deep(depth, draw(st.sampled_from(["custom", "id", "content"]))))
        elif pick == 2:
            lines.append(_dump(_entry(draw, number, tidy), (", ", ": ")))  # spaced
        else:
            lines.append(_dump(_entry(draw, number, tidy)))
    data = b"\n".join(lines)
    if lines and draw(st.integers(0, 4)) > 0:
        data += b"\n"
    if draw(st.integers(0, 9)) == 0:
        data = b"\xef\xbb\xbf" + data
    return data


def _both(data: bytes) -> tuple[Any, Any]:
    fast = summarize_bytes(PATH, data, 1_750_000_000.5, len(data))
    reference = summarize_records(PATH, decode_lines(data).records, 1_750_000_000.5, len(data))
    return fast, reference


def _assert_same(data: bytes) -> None:
    fast, reference = _both(data)
    assert fast == reference
    assert repr(fast) == repr(reference)  # also the type of each number (cost 0 is an int in both)
    _assert_head_same(data)


def _assert_head_same(data: bytes) -> None:
    """The head summary of the file holding ``data`` is the whole summary of it, field by field."""
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "s.jsonl")
        Path(path).write_bytes(data)
        stat = os.stat(path)
        whole = summarize_bytes(path, data, stat.st_mtime, stat.st_size)
        # Heads of the header alone, of a few lines, of a file; tails of a few lines or none.
        for head_bytes, tail_bytes in ((1, 40), (100, 200), (4096, 32_768)):
            head = summarize_head(path, head_bytes, tail_bytes)
            assert (head is None) == (whole is None)
            if head is not None:
                assert repr(head) == repr(whole)  # (the title read first, by its own reader)
                rest_first = summarize_head(path, head_bytes, tail_bytes)
                assert rest_first is not None
                rest_first.message_count  # noqa: B018 (the rest read first)
                assert repr(rest_first) == repr(whole)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(session_files())
def test_fast_summary_equals_the_reference(data: bytes) -> None:
    _assert_same(data)


@pytest.mark.parametrize("path", CORPORA, ids=lambda p: p.name)
def test_corpus_files_summarise_as_the_reference(path: Path) -> None:
    _assert_same(path.read_bytes())


def _canonical_session(messages: int) -> bytes:
    lines = [b'{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}']
    parent = None
    for number in range(messages):
        role = ("user", "assistant", "toolResult")[number % 3]
        message: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": f"m{number}"}]}
        if role == "assistant":
            message["usage"] = {"input": 1, "cost": {"total": 0.1}}
        stamp = f"2026-01-01T00:00:{number % 60:02d}.000Z"
        entry = {
            "type": "message",
            "id": f"e{number}",
            "parentId": parent,
            "timestamp": stamp,
            "message": message,
        }
        lines.append(orjson.dumps(entry))
        parent = f"e{number}"
    return b"\n".join(lines) + b"\n"


def test_a_clean_file_is_summarised_whole_and_an_odd_one_line_by_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Both paths are taken (so the property above tests each): a file of valid lines in one pass,
    a file with a torn last line line by line, with the same result as the reference."""
    calls: list[int] = []
    line_by_line = listing_summary._line_by_line

    def counted(start: Any, body: list[bytes]) -> Any:
        calls.append(len(body))
        return line_by_line(start, body)

    monkeypatch.setattr(listing_summary, "_line_by_line", counted)
    clean = _canonical_session(30)
    _assert_same(clean)
    assert calls == []
    info = summarize_bytes(PATH, clean, 0.0)
    assert info is not None and info.message_count == 30 and info.first_message == "m0"
    assert info.cost == pytest.approx(1.0)
    torn = clean + b'{"type":"message","id":"x","parentId":"e29","timestamp":"2026-01'
    _assert_same(torn)
    calls.clear()
    summarize_bytes(PATH, torn, 0.0)
    assert calls == [31]


_HEADER = b'{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n'


def _user(text: str) -> bytes:
    return _dump(
        {
            "type": "message",
            "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": text},
        }
    )


@pytest.mark.parametrize(
    "body",
    [
        [_user("  "), _user("/mode"), _user("real prompt")],  # first prompt skips blank and slash texts
        [_user(""), _user("x")],
        [b'{"type":"compaction","shortSummary":"one"}', b'{"type":"compaction","shortSummary":"two"}'],
        # The title from the end of a file: an escaped type, a later line that only mentions a
        # compaction, a later compaction without a string short summary, a torn one.
        [
            b'{"type":"compaction","shortSummary":"first"}',
            b'{"type":"compa\\u0063tion","shortSummary":"escaped"}',
            _user("a compaction, and \\u escapes"),
            b'{"type":"compaction","shortSummary":5}',
            b'{"shortSummary":"backwards","type":"compaction"}',
            b'{"type":"compaction","shortSummary":"torn',
        ],
        [
            b'{"type":"model_usage","usage":"not an object"}',
            b'{"type":"model_usage","usage":{"cost":{"total":2}}}',
        ],
        # Nested past msgspec's limit in a field it reads (found by the fuzz campaign).
        [_user("a"), _deep(1000, "id"), _deep(1100, "id"), _deep(1000, "content"), _user("b")],
    ],
)
def test_hand_picked_files_summarise_as_the_reference(body: list[bytes]) -> None:
    for tail in (b"", b"\n" + b"torn {"):
        data = _HEADER + b"\n".join(body) + tail
        _assert_same(data)
        info = summarize_bytes(PATH, data, 0.0)
        assert info is not None
        if body[-1] == _user("real prompt"):
            assert info.first_prompt == "real prompt" and info.first_message == "  "


def _markers_by_decoding_each(content: str) -> int:
    """omp 18's count of ``"type": "message"`` in a cut prefix, each value decoded (the rule the
    fast count in omp18.py must match)."""
    count, index = 0, 0
    while True:
        at = content.find('"type"', index)
        colon = content.find(":", at + 6) if at >= 0 else -1
        if colon < 0:
            return count
        if omp18._string_property(content, "type", at) == "message":
            count += 1
        index = colon + 1


_PIECES = st.sampled_from(
    [
        '"type"',
        ":",
        " ",
        "\n",
        '"message"',
        '"messag',
        '"mess\\u0061ge"',
        '"message\\',
        '"x"',
        "\\",
        '"',
        "{",
        "e",
    ]
)


@settings(max_examples=500, deadline=None)
@given(st.lists(_PIECES, max_size=14).map("".join))
def test_omp18_message_count_of_a_cut_prefix_matches_decoding_each_value(content: str) -> None:
    assert omp18._count_key_value(content, "type", "message") == _markers_by_decoding_each(content)


@pytest.mark.parametrize("where", ["tail", "before the tail", "none"])
def test_an_untitled_sessions_title_is_read_from_its_end(where: str, tmp_path: Path) -> None:
    """The title of a partial info: the last compaction's short summary, from the tail when its
    complete lines hold one, else from the whole file (a line cut by the tail's start is read
    there), else none; as the reference says."""
    filler = [_user("words " * 40) for _ in range(12)]
    compaction = b'{"type":"compaction","summary":"s","shortSummary":"%s"}'
    body = [compaction % b"old", *filler]
    if where == "tail":
        body.append(compaction % b"new")
    elif where == "before the tail":
        body = [*filler, compaction % b"cut by the tail" + b" " * 40, _user("last")]
    else:
        body = filler
    data = _HEADER + b"\n".join(body) + b"\n"
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    expected = {"tail": "new", "before the tail": "cut by the tail", "none": None}[where]
    assert summarize_records(PATH, decode_lines(data).records, 0.0).title == expected  # type: ignore[union-attr]
    info = summarize_head(os.fspath(path), 64, 120)
    assert info is not None and "title" not in info.__dict__  # (a partial info)
    assert info.title == expected


def _assert_continued_same(data: bytes, head_bytes: int) -> None:
    """The summary continued from a head of ``head_bytes`` (the opening's lines summarised by the
    head, the rest from its ``resume`` offset) is the summary of the whole file from byte 0."""
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "s.jsonl")
        Path(path).write_bytes(data)
        stat, head, _ = listing_summary.read_head(path, head_bytes)
        whole = summarize_bytes(path, data, stat.st_mtime, stat.st_size)
        assert (head is None) == (whole is None)
        if isinstance(head, listing_summary.HeadFacts):
            assert whole is not None
            assert 0 < head.resume <= len(data) and data[head.resume - 1 : head.resume] == b"\n"
            opening = repr(listing_summary._fields(path, head.header, head.opening, 0.0, 0))
            continued = listing_summary._rest(head)
            state = whole.__getstate__()
            assert continued.keys() == state.keys() - {"status", "assistant_turns"}
            assert repr(continued) == repr({name: state[name] for name in continued})
            assert repr(listing_summary._rest(head)) == repr(continued)  # the opening unchanged
            assert repr(listing_summary._fields(path, head.header, head.opening, 0.0, 0)) == opening
        elif head is not None:  # a file no longer than its head: summarised whole
            assert repr(head) == repr(whole)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(session_files(), st.integers(1, 4200))
def test_the_summary_continued_from_a_head_equals_one_from_byte_zero(data: bytes, head_bytes: int) -> None:
    _assert_continued_same(data, max(1, head_bytes % (len(data) + 2)))


_LONG_USER = _user("words " * 30)


@pytest.mark.parametrize(
    "data",
    [
        # A head that ends inside a line (the opening stops at the last complete one).
        _HEADER + b"\n".join([_LONG_USER] * 6) + b"\n",
        # A file shorter than the head; a header alone, with and without its newline.
        _HEADER + _user("short") + b"\n",
        _HEADER,
        _HEADER.rstrip(b"\n"),
        # A torn last line, and bytes that are not UTF-8 after the head and inside it.
        _HEADER + b"\n".join([_LONG_USER] * 4) + b'\n{"type":"message","message":{"role":"user","cont',
        _HEADER + _user("/mode") + b"\n" + b'{"type":"message","junk":"\xfe"}\n' + _LONG_USER + b"\n",
        _HEADER
        + b"\n".join([_LONG_USER] * 3)
        + b'\n{"type":"message","message":{"role":"user","content":"\xff"}}\n',
        # An opening of slash commands only (no prompt in the head), then the prompt.
        _HEADER + b"\n".join([_user("/mode")] * 8 + [_user("the prompt"), _LONG_USER]) + b"\n",
        # A BOM, and a title slot before the header.
        b"\xef\xbb\xbf" + _HEADER + b"\n".join([_LONG_USER] * 3) + b"\n",
        b'{"type":"title","v":1,"title":"T","updatedAt":"2026-01-01T00:00:00.000Z","pad":""}\n'
        + _HEADER
        + b"\n".join([_LONG_USER] * 3)
        + b"\n",
    ],
)
def test_odd_files_continue_from_their_heads_as_from_byte_zero(data: bytes) -> None:
    for head_bytes in (1, 50, len(_HEADER) - 1, len(_HEADER), len(_HEADER) + 1, 200, 300, 700, len(data)):
        _assert_continued_same(data, head_bytes)
    _assert_same(data)


def test_a_file_changed_after_its_head_was_read_is_summarised_afresh(tmp_path: Path) -> None:
    """The rest continues from the head only while the file is the one the head was read from;
    changed since (appended, rewritten), every field of the rest is its whole summary now."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(_HEADER + b"\n".join([_LONG_USER] * 4) + b"\n")
    stat, head, _ = listing_summary.read_head(os.fspath(path), 64)
    assert isinstance(head, listing_summary.HeadFacts)
    changed = _HEADER + _user("rewritten") + b"\n" + b"\n".join([_LONG_USER] * 4) + b"\n"
    path.write_bytes(changed)
    whole = summarize_bytes(os.fspath(path), changed, stat.st_mtime, stat.st_size)
    assert whole is not None
    rest = listing_summary._rest(head)
    assert rest["message_count"] == 5 and rest["first_message"] == "rewritten"
    state = whole.__getstate__()
    assert repr(rest) == repr({name: state[name] for name in rest})
    path.unlink()  # gone: a session of its header alone
    assert listing_summary._rest(head)["message_count"] == 0
