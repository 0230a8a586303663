"""The one table of context-state rules (``STATE_RULES``, model/context.py) drives both the replay
and the offset index's builder: removing any one row changes the context a session opens with,
on every read path, and the paths still agree (issue 23 item 2).

The session is a real file large enough to be indexed, with one entry of every rule's type before
a compaction that keeps only the entries after them: a lazy open reads those entries only because
the index recorded them. Each read path of tests/store/read_paths.py is run (the path without the
compiled scanner is the skim, or the one-pass open when the padding comes after the compaction).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from omp_session import Runtime, SessionManager
from omp_session.model.context import STATE_RULES, Keep, SessionContext, _scan_state
from omp_session.store._indexed import builder as builder_module
from omp_session.store._indexed.builder import IndexBuilder, State
from omp_session.store.tuning import ReadStrategy

from .read_paths import PAD, READS, open_by

# One entry of every type omp writes, with fields that would change the context if the type did.
_SAMPLES: dict[str, dict[str, Any]] = {
    "message": {"message": {"role": "assistant", "provider": "p", "model": "m", "content": []}},
    "thinking_level_change": {"thinkingLevel": "high"},
    "model_change": {"model": "p/m", "role": "smol"},
    "service_tier_change": {"serviceTier": "priority"},
    "compaction": {"summary": "s", "firstKeptEntryId": "x", "tokensBefore": 1},
    "ttsr_injection": {"injectedRules": ["r"]},
    "mcp_tool_selection": {"selectedToolNames": ["t"]},
    "mode_change": {"mode": "plan", "data": {"k": 1}},
    "label": {"targetId": "x", "label": "l"},
    "custom": {"customType": "c", "data": {"model": "p/m"}},
    "custom_message": {"customType": "c", "content": "x", "display": True},
    "branch_summary": {"fromId": "x", "summary": "s"},
    "session_info": {"name": "n"},
    "session_init": {"systemPrompt": "s", "task": "t"},
    "reset_boundary": {},
}


def _changes_state(kind: str) -> bool:
    context = SessionContext()
    compaction = _scan_state([{"type": kind, "id": "e", "parentId": None, **_SAMPLES[kind]}], context)
    return compaction is not None or context != SessionContext()


def _changes_recorded_state(kind: str) -> bool:
    builder = IndexBuilder()
    builder.add({"type": kind, "id": "e", "parentId": None, **_SAMPLES[kind]}, 0, 1)
    return builder.state_ids[-1] != 0  # 0: the empty state every entry starts from


def test_the_replay_and_the_index_react_to_exactly_the_table() -> None:
    assert {kind for kind in _SAMPLES if _changes_state(kind)} == set(STATE_RULES)
    assert {kind for kind in _SAMPLES if _changes_recorded_state(kind)} == set(STATE_RULES)


def test_every_rule_sets_a_state_the_index_keeps() -> None:
    for kind, rule in STATE_RULES.items():
        assert rule.key in State._fields, kind
        assert (rule.reads is not None) == (rule.keep in (Keep.BY_ROLE, Keep.NEW_ITEMS)), kind
    # The index reads the default model in its per-line loop, where it reads messages for usage.
    assert [kind for kind, rule in STATE_RULES.items() if rule.keep is Keep.DEFAULT_MODEL] == ["message"]


# -- the mutation: one row removed, through the public API on real files --------------------------

_TIME = "2026-01-01T00:00:01.000Z"


def _line(number: int, kind: str, **fields: Any) -> dict[str, Any]:
    parent = f"e{number - 1}" if number > 1 else None
    return {"type": kind, "id": f"e{number}", "parentId": parent, "timestamp": _TIME, **fields}


def _user(text: str) -> dict[str, Any]:
    return {"message": {"role": "user", "content": text, "timestamp": 1}}


def _assistant(model: str) -> dict[str, Any]:
    content = [{"type": "text", "text": "a"}]
    return {
        "message": {"role": "assistant", "content": content, "provider": "p", "model": model, "timestamp": 2}
    }


def _session(pad_after: bool) -> list[dict[str, Any]]:
    """Every rule's entry, then a compaction that keeps only what follows them."""
    return [
        _line(1, "message", **_user("first" if pad_after else PAD)),
        _line(2, "message", **_assistant("m1")),
        _line(3, "thinking_level_change", thinkingLevel="high"),
        _line(4, "model_change", model="p/s", role="smol"),
        _line(5, "service_tier_change", serviceTier="priority"),
        _line(6, "ttsr_injection", injectedRules=["r1"]),
        _line(7, "mcp_tool_selection", selectedToolNames=["t1"]),
        _line(8, "mode_change", mode="plan", data={"k": 1}),
        _line(9, "message", **_user("kept")),
        _line(10, "message", **_assistant("m2")),
        _line(11, "compaction", summary="s", firstKeptEntryId="e9", tokensBefore=1),
        _line(12, "message", **_user(PAD if pad_after else "last")),
    ]


#: What each rule's entry gives the context of that session (omp 13.19's shape).
_EFFECT: dict[str, tuple[Callable[[dict[str, Any]], Any], Any]] = {
    "message": (lambda c: c["models"].get("default"), "p/m2"),
    "thinking_level_change": (lambda c: c["thinkingLevel"], "high"),
    "model_change": (lambda c: c["models"].get("smol"), "p/s"),
    "service_tier_change": (lambda c: c.get("serviceTier"), "priority"),
    "compaction": (lambda c: c["messages"][0]["role"], "compactionSummary"),
    "ttsr_injection": (lambda c: c["injectedTtsrRules"], ["r1"]),
    "mcp_tool_selection": (lambda c: c["selectedMCPToolNames"], ["t1"]),
    "mode_change": (lambda c: (c["mode"], c.get("modeData")), ("plan", {"k": 1})),
}

_HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": _TIME, "cwd": "/w"}


def _write(directory: Path, pad_after: bool) -> Path:
    path = directory / "s.jsonl"
    directory.mkdir(parents=True)
    entries = [_HEADER, *_session(pad_after)]
    path.write_bytes(b"".join(json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in entries))
    return path


def _contexts(directory: Path, pad_after: bool) -> dict[ReadStrategy, dict[str, Any]]:
    """The leaf's context on every read path of a fresh copy of the session."""
    found: dict[ReadStrategy, dict[str, Any]] = {}
    for read in READS:
        path = _write(directory / str(read), pad_after)
        with open_by(path, read, read_only=True) as manager:
            found[read] = manager.build_session_context().to_dict()
    return found


def test_the_session_has_an_entry_of_every_rule() -> None:
    assert set(_EFFECT) == set(STATE_RULES)
    assert {entry["type"] for entry in _session(False)} == set(STATE_RULES)


@pytest.mark.parametrize("pad_after", [False, True], ids=["skim", "one-pass"])
@pytest.mark.parametrize("kind", sorted(STATE_RULES))
def test_removing_a_rule_changes_the_context_on_every_read_path(
    kind: str, pad_after: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read_value, effect = _EFFECT[kind]
    contexts = _contexts(tmp_path / "all", pad_after)
    assert all(context == contexts[ReadStrategy.FULL] for context in contexts.values())  # the index agrees
    assert read_value(contexts[ReadStrategy.FULL]) == effect
    monkeypatch.delitem(STATE_RULES, kind)
    assert not _changes_state(kind)
    # The builder reads the table too (but for the default model, kept in its message case).
    assert _changes_recorded_state(kind) == (kind == "message")
    mutated = _contexts(tmp_path / "without", pad_after)
    for read, context in mutated.items():
        assert read_value(context) != effect, read  # the rule no longer applies, on any path
        assert context == mutated[ReadStrategy.FULL], read  # and the index follows the same table


@pytest.mark.parametrize(
    "kind", sorted(kind for kind, rule in STATE_RULES.items() if rule.keep is not Keep.DEFAULT_MODEL)
)
def test_an_index_that_forgot_a_rule_would_give_another_context(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The twin the table replaced: an index keeping its own list of types drifts from the replay.
    # (The default model's case is the builder's and the scanner's message case, which also
    # reads usage; the row's removal above is its check.)
    forgetful = builder_module.stateful_types() - {kind}
    monkeypatch.setattr(builder_module, "stateful_types", lambda: forgetful)
    contexts = _contexts(tmp_path, False)
    assert contexts[ReadStrategy.WARM] != contexts[ReadStrategy.FULL]


def test_the_dialect_decides_how_a_rule_reads_its_value(tmp_path: Path) -> None:
    # The table is the same for every omp version; what differs is asked of the dialect's rules.
    path = _write(tmp_path / "s", False)
    by_version = {}
    for dialect in ("13.19", "18.3"):
        runtime = Runtime(agent_dir=tmp_path / "agent", breadcrumbs=False)
        with SessionManager.open(path, read_only=True, runtime=runtime, dialect=dialect) as manager:
            by_version[dialect] = manager.build_session_context().to_dict()
    assert by_version["13.19"]["serviceTier"] == "priority"
    assert by_version["18.3"]["serviceTier"] == {
        "openai": "priority",
        "anthropic": "priority",
        "google": "priority",
    }
    assert by_version["13.19"]["selectedMCPToolNames"] == ["t1"]
    assert "selectedMCPToolNames" not in by_version["18.3"]
