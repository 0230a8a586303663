"""omp 18's title slot as the PostgreSQL store lays title columns over a body: byte for byte what
omp 18.2.3 wrote (slot lines copied from the omp 18 conformance corpus, load/api-long-title-*)."""

from __future__ import annotations

import pytest

from omp_session.format.title_slot import (
    TitleUpdate,
    overlay_title_slot,
    parse_title_slot,
    serialize_title_slot,
)

REPEAT_UNICODE = "ñandú 漢字 😀 "
UNICODE_TITLE = "Überarbeitung 日本語のタイトル 🎉🚀 " + REPEAT_UNICODE * 25
UNICODE_SLOT = (
    '{"type":"title","v":1,"title":"Überarbeitung 日本語のタイトル 🎉🚀 ñandú 漢字 😀 ñandú 漢字 😀 '
    'ñandú 漢字 😀 ñandú 漢字 😀 ñandú 漢字 😀 ñandú ","source":"user",'
    '"updatedAt":"2026-11-30T14:34:36.351Z","pad":" "}\n'
)
ASCII_TITLE = "Refactor the session store" + " and keep going" * 30
ASCII_SLOT = (
    '{"type":"title","v":1,"title":"Refactor the session store and keep going and keep going and keep '
    'going and keep going and keep going and keep going and keep going and keep going and keep go",'
    '"source":"auto","updatedAt":"2026-11-30T14:34:31.359Z","pad":""}\n'
)


@pytest.mark.parametrize(
    ("update", "expected"),
    [
        (TitleUpdate(UNICODE_TITLE.rstrip(), "user", "2026-11-30T14:34:36.351Z"), UNICODE_SLOT),
        (TitleUpdate(ASCII_TITLE, "auto", "2026-11-30T14:34:31.359Z"), ASCII_SLOT),
        (
            TitleUpdate("Fix the parser", "auto", "2026-11-30T14:34:18.095Z"),
            '{"type":"title","v":1,"title":"Fix the parser","source":"auto",'
            '"updatedAt":"2026-11-30T14:34:18.095Z","pad":"' + " " * 144 + '"}\n',
        ),
        (
            TitleUpdate("", None, "2025-09-01T09:00:50.000Z"),
            '{"type":"title","v":1,"title":"","updatedAt":"2025-09-01T09:00:50.000Z","pad":"'
            + " " * 174
            + '"}\n',
        ),
    ],
)
def test_slots_are_byte_identical_to_omps(update: TitleUpdate, expected: str) -> None:
    slot = serialize_title_slot(update)
    assert slot == expected.encode("utf-8") and len(slot) == 256
    parsed = parse_title_slot(slot.rstrip(b"\n"))
    assert parsed is not None and parsed.source == update.source and parsed.updated_at == update.updated_at
    assert update.title is not None and update.title.startswith(parsed.title or "")


def test_parse_rejects_what_omp_rejects() -> None:
    assert parse_title_slot(b'{"type":"session","id":"x"}') is None
    assert parse_title_slot(b'{"type":"title","v":2,"title":"","updatedAt":"x","pad":""}') is None
    assert (
        parse_title_slot(b'{"type":"title","v":1,"title":"","source":"robot","updatedAt":"x","pad":""}')
        is None
    )
    assert parse_title_slot(b"not json") is None


def test_overlay_replaces_exactly_the_slot() -> None:
    old = serialize_title_slot(TitleUpdate("old", "auto", "2025-01-01T00:00:00.000Z"))
    new = TitleUpdate("new", "user", "2025-01-02T00:00:00.000Z")
    body = b'{"type":"session","id":"s"}\n'
    assert overlay_title_slot(old + body, new) == serialize_title_slot(new) + body
