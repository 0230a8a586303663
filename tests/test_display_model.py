"""The one display model: one entry classifier, one message-text rule, and the views agreeing on both.

These guard the drift issue 9 found: the viewer showed ``model → None`` for a v1/pi-style model change
(``{provider, modelId}``) that ``show`` rendered right, and two ``message_text`` functions disagreed.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omp_session.format.codec import encode_line
from omp_session.format.ids import iso_to_ms, ms_to_datetime
from omp_session.tools.content import message_text
from omp_session.tools.entry_kinds import EntryKind, classify, model_of_change, state_value
from omp_session.tools.listing import session_info
from omp_session.tools.reading import read_session
from omp_session.tools.search import search_paths
from omp_session.tools.summary import display_time, entry_summary, event_text
from omp_session.tools.transcript import load_transcript
from omp_session.tools.tree_view import render_tree_line, tree_lines
from tests.web.support import entry_views, tree_panel

HEADER = {
    "type": "session",
    "version": 3,
    "id": "s-display",
    "timestamp": "2025-06-02T14:05:00.000Z",
    "cwd": "/w",
}


def _entry(entry_id: str, parent: str | None, **fields: Any) -> dict[str, Any]:
    return {"id": entry_id, "parentId": parent, "timestamp": "2025-06-02T14:05:01.000Z", **fields}


def _write(path: Path, entries: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(encode_line(record) for record in [HEADER, *entries]))
    return path


@pytest.mark.parametrize(
    ("entry", "kind"),
    [
        ({"type": "message", "message": {"role": "user", "content": "hi"}}, EntryKind.USER),
        ({"type": "message", "message": {"role": "developer", "content": "x"}}, EntryKind.DEVELOPER),
        ({"type": "message", "message": {"role": "assistant", "content": []}}, EntryKind.ASSISTANT),
        ({"type": "message", "message": {"role": "toolResult", "content": []}}, EntryKind.TOOL_RESULT),
        ({"type": "message", "message": {"role": "bashExecution"}}, EntryKind.BASH),
        ({"type": "message", "message": {"role": "pythonExecution"}}, EntryKind.PYTHON),
        ({"type": "message", "message": {"role": "fileMention"}}, EntryKind.FILE_MENTION),
        ({"type": "message", "message": {"role": "hookMessage"}}, EntryKind.CUSTOM_MESSAGE),
        ({"type": "message", "message": {"role": "compactionSummary"}}, EntryKind.COMPACTION),
        ({"type": "message", "message": {"role": "branchSummary"}}, EntryKind.BRANCH_SUMMARY),
        ({"type": "message", "message": {"role": "robot"}}, EntryKind.UNKNOWN_MESSAGE),
        ({"type": "message", "message": "not an object"}, EntryKind.UNKNOWN_MESSAGE),
        ({"type": "custom_message", "customType": "x"}, EntryKind.CUSTOM_MESSAGE),
        ({"type": "compaction", "summary": "s"}, EntryKind.COMPACTION),
        ({"type": "branch_summary", "summary": "s"}, EntryKind.BRANCH_SUMMARY),
        ({"type": "model_change", "model": "m"}, EntryKind.MODEL_CHANGE),
        ({"type": "thinking_level_change"}, EntryKind.THINKING_LEVEL_CHANGE),
        ({"type": "service_tier_change"}, EntryKind.SERVICE_TIER_CHANGE),
        ({"type": "mode_change"}, EntryKind.MODE_CHANGE),
        ({"type": "ttsr_injection"}, EntryKind.TTSR_INJECTION),
        ({"type": "mcp_tool_selection"}, EntryKind.MCP_TOOL_SELECTION),
        ({"type": "session_init"}, EntryKind.SESSION_INIT),
        ({"type": "label", "targetId": "a"}, EntryKind.LABEL),
        ({"type": "custom", "customType": "x"}, EntryKind.CUSTOM_ENTRY),
        ({"type": "hologram"}, EntryKind.UNKNOWN),
        ({}, EntryKind.UNKNOWN),
    ],
)
def test_one_classifier_names_every_kind(entry: dict[str, Any], kind: EntryKind) -> None:
    found = classify(entry)
    assert found.kind == kind
    message = entry.get("message")
    assert found.fields is (message if isinstance(message, dict) else entry)


def test_model_changes_of_both_styles_name_their_model() -> None:
    omp = {"type": "model_change", "model": "anthropic/claude-sonnet-4-5"}
    pi = {"type": "model_change", "provider": "openai", "modelId": "gpt-5.1-codex"}
    assert model_of_change(omp) == "anthropic/claude-sonnet-4-5"
    assert model_of_change(pi) == "openai/gpt-5.1-codex"
    assert model_of_change({"type": "model_change"}) is None
    assert state_value(EntryKind.MODEL_CHANGE, pi) == "openai/gpt-5.1-codex"
    assert state_value(EntryKind.MCP_TOOL_SELECTION, {"selectedToolNames": ["a", "b"]}) == "a, b"
    assert state_value(EntryKind.THINKING_LEVEL_CHANGE, {}) is None
    assert event_text(pi) == "model openai/gpt-5.1-codex"


def test_viewer_and_show_agree_on_a_pi_style_model_change(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "pi.jsonl",
        [
            _entry("m1", None, type="model_change", provider="openai", modelId="gpt-5.1-codex"),
            _entry("u1", "m1", type="message", message={"role": "user", "content": "hello"}),
        ],
    )
    model_rows = [line for row, line in tree_panel(path) if row.key == "m1"]
    assert model_rows == ["model openai/gpt-5.1-codex"]  # was "model → None"
    assert "None" not in entry_views(path)[0].blocks[0].title
    transcript = load_transcript(path)
    events = [item.title for item in transcript.branches[0].items if item.kind == "event"]
    assert events == ["model openai/gpt-5.1-codex"]
    with read_session(path) as session:
        lines = [render_tree_line(line) for line in tree_lines(session)]
    assert lines[0] == "m1 model openai/gpt-5.1-codex"


def test_one_message_text_rule_for_listing_summaries_and_views(tmp_path: Path) -> None:
    # Only "text" blocks count (omp's extractTextFromContent, spec §6.9); a block of another type
    # that happens to carry a "text" field is not message text. The two old functions disagreed.
    content = [
        {"type": "text", "text": "first"},
        {"type": "note", "text": "not message text"},
        {"type": "text", "text": "second"},
    ]
    message = {"role": "user", "content": content}
    assert message_text(message) == "first second"
    path = _write(tmp_path / "text.jsonl", [_entry("u1", None, type="message", message=message)])
    info = session_info(path)
    assert info is not None and info.first_message == "first second"
    assert entry_summary({"type": "message", "message": message}).text == "first second"
    assert tree_panel(path)[0][1] == "user: first second"


def test_search_finds_tool_arguments_as_written_in_the_file(tmp_path: Path) -> None:
    call = {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "grep -rn TODO src"}}
    path = _write(
        tmp_path / "tools.jsonl",
        [_entry("a1", None, type="message", message={"role": "assistant", "content": [call]})],
    )
    assert b'"command":"grep' in path.read_bytes()
    for query in ('"command":"grep', '"command": "grep', '{"command": "grep -rn'):
        hits = search_paths([path], query)
        assert [hit.entry_id for hit in hits] == ["a1"], query
    assert search_paths([path], "'command': 'grep") == []  # no longer the Python repr
    assert search_paths([path], "command grep") == []  # still literal otherwise


@settings(max_examples=500, deadline=None)
@given(
    moment=st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31)),
    form=st.sampled_from(["%Y-%m-%dT%H:%M:%S.{ms}Z", "%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S.{ms}+02:00"]),
    day=st.integers(min_value=0, max_value=39),
    hour=st.integers(min_value=0, max_value=29),
    second=st.integers(min_value=0, max_value=69),
)
def test_display_time_reads_omps_form_as_the_full_parse_does(
    moment: datetime, form: str, day: int, hour: int, second: int
) -> None:
    """The quick reading of omp's own timestamps agrees with parsing them in full, odd fields
    (day 31 of a short month, hour 24, a leap second) and other forms included."""
    text = moment.strftime(form).replace("{ms}", f"{moment.microsecond // 1000:03d}")
    odd = f"{text[:8]}{day:02d}T{hour:02d}{text[13:17]}{second:02d}{text[19:]}"
    for iso in (text, odd):
        parsed = ms_to_datetime(iso_to_ms(iso))
        assert display_time(iso) == (parsed.strftime("%Y-%m-%d %H:%M:%S UTC") if parsed else iso)
