"""``OmpSession`` under a real ``Runner.run`` of the OpenAI Agents SDK, several turns, scripted model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from agents import Agent, Runner, function_tool
from agents.memory import Session
from agents.testing import ScriptedModel, assistant_message, function_call
from openai.types.responses import ResponseReasoningItem
from openai.types.responses.response_reasoning_item import Summary

from omp_session import SessionManager
from omp_session.dialects import OMP_13_19, OMP_18_2
from omp_session.integrations.openai_agents import OmpSession
from omp_session.providers import to_anthropic_messages, to_openai_responses


@function_tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def _reasoning(text: str, item_id: str) -> ResponseReasoningItem:
    return ResponseReasoningItem(
        id=item_id,
        type="reasoning",
        summary=[Summary(text=text, type="summary_text")],
        encrypted_content="enc-1",
    )


def _roles(items: Any) -> list[str]:
    return [str(item.get("role") or item.get("type")) for item in items]


def _texts(items: Any) -> list[str]:
    out: list[str] = []
    for item in items:
        content = item.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.extend(str(part.get("text")) for part in content if isinstance(part, dict) and "text" in part)
    return out


def test_runner_over_several_turns_sees_the_omp_history(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            [
                _reasoning("Need the file.", "rs_1"),
                function_call("read_file", {"path": "a.py"}, call_id="call_1", item_id="fc_1"),
            ],
            [assistant_message("a.py holds code.", item_id="msg_1")],
            [assistant_message("You asked about a.py.", item_id="msg_2")],
            [assistant_message("Fresh start.", item_id="msg_3")],
        ]
    )
    agent = Agent(name="helper", instructions="Be brief.", model=model, tools=[read_file])

    async def run() -> tuple[str, list[Any]]:
        with SessionManager.create("/work/demo", tmp_path, dialect=OMP_18_2) as manager:
            session = OmpSession(manager, model="gpt-5")
            assert isinstance(session, Session)
            first = await Runner.run(agent, "What is in a.py?", session=session)
            assert first.final_output == "a.py holds code."
            second = await Runner.run(agent, "What did I ask?", session=session)
            assert second.final_output == "You asked about a.py."
            history = await session.get_items()
            assert (await session.get_items(limit=2)) == history[-2:]
            await session.clear_session()
            assert await session.get_items() == []
            third = await Runner.run(agent, "Hello again", session=session)
            assert third.final_output == "Fresh start."
            return str(manager.get_session_file()), history

    path, history = asyncio.run(run())
    # On disk the turn carries omp's own replay state: the native items (omp 13.19 drops them on
    # load, omp 18 keeps them). omp 18 writes the reasoning item once, in the payload: the thinking
    # block's signature, the same item as JSON, is left out of the line (memory keeps it).
    lines = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]
    turn = next(line["message"] for line in lines if line.get("message", {}).get("stopReason") == "toolUse")
    assert [item["type"] for item in turn["providerPayload"]["items"]] == ["reasoning", "function_call"]
    assert turn["providerPayload"]["items"][0]["id"] == "rs_1"
    assert turn["content"][0]["type"] == "thinking" and "thinkingSignature" not in turn["content"][0]
    calls = model.calls
    assert len(calls) == 4
    # Turn 1, model call 2: the user item, the reasoning, the call and its output.
    assert _roles(calls[1].input) == ["user", "reasoning", "function_call", "function_call_output"]
    # Turn 2 receives all of turn 1 from the omp session, then its own question.
    assert _roles(calls[2].input) == [
        "user",
        "reasoning",
        "function_call",
        "function_call_output",
        "assistant",
        "user",
    ]
    assert _texts(calls[2].input) == ["What is in a.py?", "a.py holds code.", "What did I ask?"]
    assert calls[2].input[3]["output"] == "contents of a.py"
    # After clear_session the model sees only the new turn.
    assert _texts(calls[3].input) == ["Hello again"]
    assert len(history) == 7

    # The file is an omp session: it opens, its context holds omp's encodings, omp would replay it.
    with SessionManager.open(path, read_only=True, dialect=OMP_18_2) as reopened:
        entries = reopened.get_entries()
        assert "reset_boundary" in [entry.get("type") for entry in entries]
        messages = [entry["message"] for entry in entries if entry.get("type") == "message"]
        assistant = messages[1]
        assert assistant["api"] == "openai-responses" and assistant["stopReason"] == "toolUse"
        thinking, call = assistant["content"]
        assert thinking["thinking"] == "Need the file."
        assert call["id"] == "call_1|fc_1" and call["arguments"] == {"path": "a.py"}
        assert messages[2]["role"] == "toolResult" and messages[2]["toolCallId"] == "call_1|fc_1"
        assert json.loads(messages[3]["content"][0]["textSignature"]) == {"v": 1, "id": "msg_1"}
        context = reopened.build_session_context()
        assert [m["role"] for m in context.messages] == ["user", "assistant"]  # after the reset boundary
        body = to_openai_responses(context)
        # omp 18 replays the turn's own native items (a ``dt`` delta, appended after the user turn),
        # as OpenAI sent them less the output-only id and status.
        native = dict(context.messages[1]["providerPayload"]["items"][0])
        assert native.pop("id") == "msg_3" and native.pop("status") == "completed"
        assert body["input"] == [{"role": "user", "content": "Hello again"}, native]
        assert body["input"][-1]["content"][0]["text"] == "Fresh start."
        assert to_anthropic_messages(context)["messages"][0]["content"][0]["text"] == "Hello again"

    async def resume() -> list[Any]:
        with SessionManager.open(path, dialect=OMP_18_2) as manager:
            return await OmpSession(manager).get_items()

    # Reopened, the history is what omp itself would send OpenAI for it.
    resumed = asyncio.run(resume())
    assert _texts(resumed) == ["Hello again", "Fresh start."]


def test_pop_item_leaves_the_popped_entry_as_a_branch(tmp_path: Path) -> None:
    async def run() -> None:
        with SessionManager.create("/work/demo", tmp_path) as manager:
            session = OmpSession(manager)
            await session.add_items(
                [
                    {"role": "user", "content": "hi"},
                    {
                        "type": "message",
                        "role": "assistant",
                        "id": "msg_a",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": "hello", "annotations": []}],
                    },
                    {"type": "web_search_call", "id": "ws_1", "status": "completed"},
                    {"type": "item_reference", "id": "ref_1"},
                ]
            )
            items = await session.get_items()
            assert [i.get("type") or i.get("role") for i in items] == [
                "user",
                "message",
                "web_search_call",
                "item_reference",
            ]
            assert await session.pop_item() == {"type": "item_reference", "id": "ref_1"}
            popped = await session.pop_item()
            assert popped == {"type": "web_search_call", "id": "ws_1", "status": "completed"}
            assert [i.get("role") for i in await session.get_items()] == ["user", "assistant"]
            path = str(manager.get_session_file())
        with SessionManager.open(path, read_only=True) as reopened:
            assert len(reopened.get_tree()) == 1
            reloaded = OmpSession(reopened)
            assert [i.get("role") for i in await reloaded.get_items()] == ["user", "assistant"]
            # Nothing was deleted: the popped items are still in the file, off the current branch.
            types = [e.get("type") for e in reopened.get_entries()]
            # user, then the turn three times: whole, without its last item, without its last two.
            assert types.count("message") == 4

    asyncio.run(run())


def test_clear_session_under_omp_13_19_starts_a_fresh_file(tmp_path: Path) -> None:
    async def run() -> None:
        with SessionManager.create("/work/demo", tmp_path, dialect=OMP_13_19) as manager:
            session = OmpSession(manager)
            await session.add_items([{"role": "user", "content": "one"}])
            first = session.session_id
            await session.clear_session()
            assert session.session_id != first and await session.get_items() == []

    asyncio.run(run())
