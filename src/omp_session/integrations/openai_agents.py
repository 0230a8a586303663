"""``OmpSession``: an omp session as the OpenAI Agents SDK's ``Session`` (extra ``[openai-agents]``).

The SDK keeps a conversation as Responses input items; this class stores them as omp messages with
pi-ai's own Responses encodings, so the file opens in omp and resumes there:

- a user, system or developer item becomes a user or developer message; the item itself rides in
  ``providerPayload`` (``openaiResponsesHistory``), which omp replays natively to OpenAI;
- the items of one model turn (reasoning, output messages, function calls, anything else the model
  produced) become one assistant message: thinking with the reasoning item as JSON in
  ``thinkingSignature``, text with ``textSignature`` ``{"v":1,"id":...}``, tool calls with the id
  ``call_id|item_id``, and the turn's native items in ``providerPayload`` as omp writes them;
- a ``function_call_output`` becomes a tool result of its call;
- an item with no omp counterpart outside a model turn is kept as a ``custom`` entry and returned
  unchanged.

History is never destroyed: ``pop_item`` moves the leaf back (the popped entry stays as an abandoned
branch) and ``clear_session`` appends omp 18's ``reset_boundary`` (under 13.19, which has none, it
starts a fresh session file). The SDK is not imported here: the class meets the ``Session`` protocol
structurally.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from omp_session.format.codec import encode_json
from omp_session.integrations.providers._openai_responses import responses_input
from omp_session.integrations.providers._target import ModelTarget
from omp_session.manager import SessionManager
from omp_session.model.llm import convert_to_llm

__all__ = ["CUSTOM_ITEM_TYPE", "POP_MARKER_TYPE", "OmpSession"]

#: ``customType`` of the entries that keep items without an omp counterpart.
CUSTOM_ITEM_TYPE = "openai-agents-item"
#: ``customType`` of the marker ``pop_item`` leaves under the parent of the popped entry.
POP_MARKER_TYPE = "openai-agents-pop"
_PAYLOAD = "openaiResponsesHistory"
_MODEL_SIDE = frozenset({"reasoning", "function_call"})
_USAGE = {
    "input": 0,
    "output": 0,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 0,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}

Item = dict[str, Any]


def _json(value: Any) -> str:
    return encode_json(value).decode("utf-8")


def _role(item: Mapping[str, Any]) -> str | None:
    role = item.get("role")
    if item.get("type") in (None, "message") and isinstance(role, str):
        return role
    return None


def _is_model_side(item: Mapping[str, Any]) -> bool:
    return item.get("type") in _MODEL_SIDE or _role(item) == "assistant"


def _user_content(content: Any) -> Any:
    if isinstance(content, str):
        return content
    blocks: list[dict[str, Any]] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind in ("input_text", "output_text", "text"):
            blocks.append({"type": "text", "text": str(part.get("text", ""))})
        elif kind == "input_image":
            url = part.get("image_url")
            if isinstance(url, str) and url.startswith("data:") and ";base64," in url:
                mime, _, data = url[5:].partition(";base64,")
                blocks.append({"type": "image", "data": data, "mimeType": mime})
            elif isinstance(url, str):
                blocks.append({"type": "image", "url": url, "mimeType": "image/png"})
    return blocks


def _assistant_blocks(items: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
    blocks: list[dict[str, Any]] = []
    calls = False
    for item in items:
        kind = item.get("type")
        if kind == "reasoning":
            summary = item.get("summary")
            parts = summary if isinstance(summary, list) else []
            texts = [str(part.get("text", "")) for part in parts if isinstance(part, Mapping)]
            blocks.append(
                {"type": "thinking", "thinking": "\n\n".join(texts), "thinkingSignature": _json(item)}
            )
        elif kind == "function_call":
            calls = True
            try:
                arguments = json.loads(str(item.get("arguments") or "{}"))
            except ValueError:
                arguments = {}
            item_id = item.get("id")
            call_id = str(item.get("call_id", ""))
            blocks.append(
                {
                    "type": "toolCall",
                    "id": f"{call_id}|{item_id}" if item_id else call_id,
                    "name": item.get("name"),
                    "arguments": arguments if isinstance(arguments, dict) else {},
                }
            )
        elif _role(item) == "assistant":
            signature: dict[str, Any] = {"v": 1, "id": item.get("id")} if item.get("id") else {}
            if signature and item.get("phase") in ("commentary", "final_answer"):
                signature["phase"] = item["phase"]
            content = item.get("content")
            parts = content if isinstance(content, list) else [{"type": "output_text", "text": content}]
            for part in parts:
                if not isinstance(part, Mapping):
                    continue
                text = part.get("text") if part.get("type") == "output_text" else part.get("refusal")
                if not isinstance(text, str):
                    continue
                block: dict[str, Any] = {"type": "text", "text": text}
                if signature:
                    block["textSignature"] = _json(signature)
                blocks.append(block)
    return blocks, calls


class OmpSession:
    """The OpenAI Agents SDK ``Session`` protocol over an open, writable :class:`SessionManager`.

    ``model``/``provider`` are recorded on the assistant messages (omp shows and bills by them);
    ``clock`` gives the time in seconds for message timestamps.
    """

    session_settings: Any = None

    def __init__(
        self,
        manager: SessionManager,
        *,
        model: str = "gpt-5",
        provider: str = "openai",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.manager = manager
        self.model = model
        self.provider = provider
        self.clock = clock
        self.session_id = manager.get_session_id()

    # ------------------------------------------------------------------ reading

    def _branch(self) -> list[dict[str, Any]]:
        leaf = self.manager.get_leaf_id()
        if leaf is None:
            return []
        entries = list(self.manager.get_branch(leaf))
        if self.manager.dialect.context.reset_boundaries:
            for index in range(len(entries) - 1, -1, -1):
                if entries[index].get("type") == "reset_boundary":
                    return entries[index + 1 :]
        return entries

    def _items_of(self, entry: Mapping[str, Any]) -> list[Item] | None:
        """The items an entry stands for, or ``None`` when it was not written by this class."""
        kind = entry.get("type")
        if kind == "custom":
            return [dict(entry.get("data") or {})] if entry.get("customType") == CUSTOM_ITEM_TYPE else []
        if kind in ("compaction", "branch_summary", "custom_message"):
            return None  # context that only omp's own conversion can give
        if kind != "message":
            return []
        message = entry.get("message")
        if not isinstance(message, Mapping):
            return []
        payload = message.get("providerPayload")
        if (
            isinstance(payload, Mapping)
            and payload.get("type") == _PAYLOAD
            and isinstance(payload.get("items"), list)
        ):
            return [dict(item) for item in payload["items"]]
        if message.get("role") == "toolResult":
            details = message.get("details")
            if isinstance(details, Mapping) and isinstance(details.get("openaiAgentsItem"), Mapping):
                return [dict(details["openaiAgentsItem"])]
        return None

    def _all_items(self) -> list[Item]:
        items: list[Item] = []
        for entry in self._branch():
            found = self._items_of(entry)
            if found is None:
                return self._as_omp_sends_them()
            items.extend(found)
        return items

    def _as_omp_sends_them(self) -> list[Item]:
        """A history omp wrote itself (or compacted): the Responses input omp would send for it."""
        context = self.manager.build_session_context()
        target = ModelTarget.for_api("openai-responses", self.model, self.provider)
        return [dict(item) for item in responses_input(convert_to_llm(context.messages), target)]

    async def get_items(self, limit: int | None = None, wrapper: Any = None) -> list[Item]:
        """The conversation since the last reset on the current branch, oldest first (the last
        ``limit`` items when given)."""
        items = self._all_items()
        return items[-limit:] if limit is not None and limit > 0 else ([] if limit == 0 else items)

    # ------------------------------------------------------------------ writing

    def _now(self) -> int:
        return int(self.clock() * 1000)

    def _call_ids(self) -> dict[str, tuple[str, str]]:
        """``call_id`` → (omp tool-call id, tool name) of the calls on the branch."""
        found: dict[str, tuple[str, str]] = {}
        for entry in self._branch():
            message = entry.get("message") if entry.get("type") == "message" else None
            if not isinstance(message, Mapping) or message.get("role") != "assistant":
                continue
            for block in message.get("content") or []:
                if isinstance(block, Mapping) and block.get("type") == "toolCall":
                    identifier = str(block.get("id", ""))
                    found[identifier.split("|", 1)[0]] = (identifier, str(block.get("name", "")))
        return found

    def _append_turn(self, items: list[Item]) -> None:
        blocks, calls = _assistant_blocks(items)
        self.manager.append_message(
            {
                "role": "assistant",
                "content": blocks,
                "api": "openai-responses",
                "provider": self.provider,
                "model": self.model,
                "usage": _USAGE,
                "stopReason": "toolUse" if calls else "stop",
                "timestamp": self._now(),
                "providerPayload": {"type": _PAYLOAD, "provider": self.provider, "dt": True, "items": items},
            }
        )

    def _append_one(self, item: Item) -> None:
        role = _role(item)
        if role in ("user", "system", "developer"):
            self.manager.append_message(
                {
                    "role": "user" if role == "user" else "developer",
                    "content": _user_content(item.get("content")),
                    "timestamp": self._now(),
                    "providerPayload": {"type": _PAYLOAD, "provider": self.provider, "items": [item]},
                }
            )
        elif item.get("type") == "function_call_output":
            call_id = str(item.get("call_id", ""))
            identifier, name = self._call_ids().get(call_id, (call_id, ""))
            output = item.get("output")
            message: dict[str, Any] = {
                "role": "toolResult",
                "toolCallId": identifier,
                "toolName": name,
                "content": [{"type": "text", "text": output if isinstance(output, str) else _json(output)}],
                "isError": False,
                "timestamp": self._now(),
                "details": {"openaiAgentsItem": item},
            }
            self.manager.append_message(message)
        else:
            self.manager.append_custom_entry(CUSTOM_ITEM_TYPE, item)

    async def add_items(self, items: list[Item], wrapper: Any = None) -> None:
        """Append ``items``: each run of model-side items as one assistant message, others one entry each."""
        turn: list[Item] = []
        for raw in items:
            item = dict(raw)
            if _is_model_side(item) or (
                turn and _role(item) is None and item.get("type") != "function_call_output"
            ):
                turn.append(item)
                continue
            if turn:
                self._append_turn(turn)
                turn = []
            self._append_one(item)
        if turn:
            self._append_turn(turn)

    async def pop_item(self, wrapper: Any = None) -> Item | None:
        """Remove the newest item: the leaf moves back to the entry's parent (the entry stays, as an
        abandoned branch); the other items of a model turn are appended again as a new entry."""
        branch = self._branch()
        while branch:
            entry = branch[-1]
            items = self._items_of(entry)
            if items is None:
                raise ValueError(
                    f"entry {entry.get('id')} was not written by OmpSession; it cannot be popped"
                )
            if not items:
                branch = branch[:-1]
                continue
            parent = entry.get("parentId")
            if parent is None:
                self.manager.reset_leaf()
            else:
                self.manager.branch(str(parent))
            *rest, last = items
            if rest:
                await self.add_items(rest)
            else:
                # omp has no stored leaf (the newest entry is the leaf on load): a marker entry under
                # the parent keeps the move (custom entries never reach the model).
                self.manager.append_custom_entry(POP_MARKER_TYPE, {"popped": entry.get("id")})
            return last
        return None

    async def clear_session(self, wrapper: Any = None) -> None:
        """Start the history afresh without deleting it: a ``reset_boundary`` (omp 18), else a new
        session file (omp 13.19)."""
        if self.manager.dialect.context.reset_boundaries:
            self.manager.append_reset_boundary()
        else:
            self.manager.new_session()
            self.session_id = self.manager.get_session_id()
