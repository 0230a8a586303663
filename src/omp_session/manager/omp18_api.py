"""The ``SessionManager`` methods omp 18 added (omp18-differences §9), in snake_case.

Options objects of omp become keyword arguments (``appendModelUsage(usage, {sessionId,
parentId})`` → ``append_model_usage(..., session_id=..., parent_id=...)``). Each method writes
through the manager's one writer, so our guarantees (no torn lines glued onto, no overwrite of a
corrupt file, memory unchanged when a write fails) hold for them too.

Internal module (part of :class:`~omp_session.SessionManager`, which is the API); not part of the public API.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from omp_session.errors import EntryNotFoundError
from omp_session.format import entry_factory as make
from omp_session.format.ids import iso_to_ms, now_ms
from omp_session.format.title_slot import TitleSlot
from omp_session.manager.persistence import DiskFlags, Persistence
from omp_session.manager.runtime import Runtime
from omp_session.manager.state import SessionState
from omp_session.model.tree import SessionIndex
from omp_session.model.usage import usage_of
from omp_session.store import SessionStorage

__all__ = ["CURRENT_LEAF", "Omp18Operations", "fork_entries", "peek_session_init"]

Entry = dict[str, Any]
#: ``append_model_usage``'s default owner: the current leaf (``None`` means a new root).
CURRENT_LEAF: Any = object()


def _reset_cost(usage: Any) -> None:
    """omp 18 ``resetUsageCost``: billing zeroed in place, token counts kept."""
    if not isinstance(usage, dict):
        return
    usage["cost"] = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    usage.pop("credits", None)
    usage.pop("premiumRequests", None)


def _aborted_result(call: dict[str, Any]) -> dict[str, Any]:
    """The synthetic result omp records for a tool call of an interrupted turn."""
    return {
        "role": "toolResult",
        "toolCallId": call.get("id"),
        "toolName": call.get("name"),
        "content": [{"type": "text", "text": "Tool execution was aborted."}],
        "details": {"__synthetic": True, "source": "assistant_stop_aborted", "executed": False},
        "isError": True,
        "timestamp": now_ms(),
    }


def _repair_interrupted_tail(entries: list[Entry], runtime: Runtime) -> None:
    """Pair the tool calls of the last assistant turn on the active path with aborted results."""
    if not entries:
        return
    index = SessionIndex(entries)
    branch = index.path_to(entries[-1])
    assistant = next(
        (e["message"] for e in reversed(branch) if e.get("type") == "message" and _role(e) == "assistant"),
        None,
    )
    if assistant is None or not isinstance(assistant.get("content"), list):
        return
    paired = {e["message"].get("toolCallId") for e in branch if _role(e) == "toolResult"}
    used = {str(e.get("id")) for e in entries}
    parent = branch[-1].get("id")
    for block in assistant["content"]:
        if isinstance(block, dict) and block.get("type") == "toolCall" and block.get("id") not in paired:
            entry_id = runtime.new_entry_id(used)
            used.add(entry_id)
            entries.append(make.message(entry_id, parent, runtime.now(), _aborted_result(block)))
            parent = entry_id


def _role(entry: Entry) -> Any:
    message = entry.get("message")
    return message.get("role") if entry.get("type") == "message" and isinstance(message, dict) else None


def fork_entries(
    entries: Sequence[Entry], reset_cost: bool, repair_tail: bool, runtime: Runtime
) -> list[Entry]:
    """The history a ``fork_from`` copies (deep copies when an option changes them)."""
    if not (reset_cost or repair_tail):
        return list(entries)
    history = copy.deepcopy(list(entries))
    if reset_cost:
        for entry in history:
            _reset_cost(usage_of(entry)[0])
    if repair_tail:
        _repair_interrupted_tail(history, runtime)
    return history


class Omp18Operations:
    """omp 18's additions over the session's state, written through its persistence: the new
    entry kinds, atomic batches and durable discards, state snapshots and ``seal``."""

    def __init__(self, state: SessionState, persistence: Persistence) -> None:
        self._state = state
        self._persistence = persistence

    # -- appends ---------------------------------------------------------------------------------

    def append_reset_boundary(self) -> str:
        """The ``/clear`` marker: the model context starts after the last one (§2.2, §3.3)."""
        return self._persistence.append(make.typed(*self._state.base(), "reset_boundary"))

    def append_credential_pin(self, provider: str, hash: str) -> str:
        """Record which account served ``provider`` (``hash`` is opaque to the store, §2.4)."""
        return self._persistence.append(
            make.typed(*self._state.base(), "credential_pin", provider=provider, hash=hash)
        )

    def get_credential_pins(self) -> dict[str, dict[str, Any]]:
        """The last pin per provider on the current branch: ``{provider: {hash, lastUsedAt}}``.

        ``lastUsedAt`` (ms) starts at the pin and follows later assistant turns of that provider.
        """
        pins: dict[str, dict[str, Any]] = {}
        for entry in self._state.index.branch(self._state.leaf):
            if entry.get("type") == "credential_pin":
                pins[str(entry.get("provider"))] = {
                    "hash": entry.get("hash"),
                    "lastUsedAt": iso_to_ms(entry.get("timestamp")),
                }
            elif _role(entry) == "assistant":
                pin = pins.get(entry["message"].get("provider"))
                stamp = entry["message"].get("timestamp")
                if pin is not None and isinstance(stamp, int | float) and not isinstance(stamp, bool):
                    last = pin["lastUsedAt"]
                    pin["lastUsedAt"] = stamp if last is None else max(last, stamp)
        return pins

    def append_message_to_branch(self, message: dict[str, Any], parent_id: str | None) -> str:
        """Append ``message`` under ``parent_id`` (``None``: a new root) without moving the leaf."""
        if parent_id is not None and not self._state.knows(parent_id):
            raise EntryNotFoundError(parent_id)
        leaf = self._state.leaf
        entry = make.message(
            self._state.runtime.new_entry_id(self._state.index.by_id),
            parent_id,
            self._state.runtime.now(),
            message,
        )
        entry_id = self._persistence.append(entry)
        self._state.leaf = leaf
        return entry_id

    def append_model_usage(
        self,
        purpose: str,
        api: str,
        provider: str,
        model: str,
        usage: dict[str, Any],
        stop_reason: str,
        *,
        role: str | None = None,
        error_message: str | None = None,
        session_id: str | None = None,
        parent_id: str | None = CURRENT_LEAF,
    ) -> str | None:
        """Record spend of a side request (a title, a memory pass…) on its initiating branch (§2.1).

        The owner defaults to this session and the current leaf. Returns ``None`` and writes
        nothing when the owner is another session or an unknown parent. The leaf moves to the new
        entry only when its parent was the leaf.
        """
        owner_parent = self._state.leaf if parent_id is CURRENT_LEAF else parent_id
        if (session_id is not None and session_id != str(self._state.header.get("id"))) or (
            owner_parent is not None and owner_parent not in self._state.index.by_id
        ):
            return None
        leaf = self._state.leaf
        entry = make.typed(
            self._state.runtime.new_entry_id(self._state.index.by_id),
            owner_parent,
            self._state.runtime.now(),
            "model_usage",
            purpose=purpose,
            role=make.OMIT_NONE(role),
            api=api,
            provider=provider,
            model=model,
            usage=usage,
            stopReason=stop_reason,
            errorMessage=make.OMIT_NONE(error_message),
        )
        entry_id = self._persistence.append(entry)
        if leaf != owner_parent:
            self._state.leaf = leaf
        return entry_id

    def append_entries_atomically(self, append: Callable[[], Any]) -> Any:
        """Run ``append`` (which calls ``append_*`` methods) and write its entries with **one**
        atomic rewrite; if it raises, the entries it added are rolled back (§5.6)."""
        self._state.require_writable()
        state = self.capture_state()
        try:
            with self._persistence.holding_writes():
                result = append()
        except BaseException:
            self.restore_state(state)
            raise
        if self._state.storage.path is not None and (
            self._persistence.ensured or self._persistence.flushed or self._state.storage.exists()
        ):
            try:
                self._persistence.rewrite_all()
            except BaseException:
                self.restore_state(state)
                raise
        return result

    def discard_entry_durably(self, entry_id: str) -> None:
        """Abandon ``entry_id`` on disk (§5.6): removed and its children re-chained when every
        child is a ``service_tier_change``, else kept; then a ``branch_summary`` marker with an empty
        summary is appended and the file rewritten."""
        self._state.require_writable()
        target = self._state.index.get(entry_id)
        if target is None:
            raise EntryNotFoundError(entry_id)
        children = self._state.index.children(entry_id)
        entries = list(self._state.index.entries)
        leaf = self._state.leaf
        if all(child.get("type") == "service_tier_change" for child in children):
            parent = target.get("parentId")
            entries = [
                {**entry, "parentId": parent} if entry.get("parentId") == entry_id else entry
                for entry in entries
                if entry is not target
            ]
            if leaf == entry_id:
                leaf = parent
        marker = make.typed(
            self._state.runtime.new_entry_id({str(e.get("id")) for e in entries}),
            leaf,
            self._state.runtime.now(),
            "branch_summary",
            fromId=leaf if leaf is not None else "root",
            summary="",
            details={"kind": "discarded-entry-branch", "discardedEntryId": entry_id},
        )
        state = self.capture_state()
        self._persistence.reset(self._state.header, [*entries, marker], self._current_slot())
        self._state.leaf = str(marker["id"])
        try:
            self._persistence.rewrite_all()
        except BaseException:
            self.restore_state(state)
            raise

    def _current_slot(self) -> TitleSlot | None:
        return (
            TitleSlot(self._state.session_name or "", self._state.title_updated_at, self._state.title_source)
            if self._persistence.has_slot
            else None
        )

    # -- state -----------------------------------------------------------------------------------

    def capture_state(self) -> dict[str, Any]:
        """A snapshot of the in-memory session to :meth:`restore_state` later (omp 18's
        ``captureState``): header (copied), entries, leaf and title state. The file is not part of
        it: restoring does not write."""
        return {
            "header": copy.deepcopy(self._state.header),
            "entries": list(self._state.index.entries),
            "leaf": self._state.leaf,
            "sessionName": self._state.session_name,
            "titleSource": self._state.title_source,
            "titleUpdatedAt": self._state.title_updated_at,
            "titleRevision": self._state.title_revision,
            "hasTitleSlot": self._persistence.has_slot,
            "cwd": self._state.cwd,
            "flushed": self._persistence.flushed,
            "ensured": self._persistence.ensured,
        }

    def restore_state(self, snapshot: dict[str, Any]) -> None:
        """Go back to a :meth:`capture_state` snapshot (memory only)."""
        header = copy.deepcopy(snapshot["header"])
        self._persistence.reset(header, snapshot["entries"])
        self._state.leaf = snapshot["leaf"]
        self._state.session_name = snapshot["sessionName"]
        self._state.title_source = snapshot["titleSource"]
        self._state.title_updated_at = snapshot["titleUpdatedAt"]
        self._state.title_revision = snapshot["titleRevision"]
        self._state.cwd = snapshot["cwd"]
        self._persistence.restore_flags(
            DiskFlags(snapshot["hasTitleSlot"], snapshot["flushed"], snapshot["ensured"])
        )

    def seal(self) -> None:
        """After this, appends and renames are dropped no-ops (omp 18 ``seal``)."""
        self._persistence.seal()


#: The ``session_init`` fields ``peek_session_init`` returns, in omp's order (``extractSessionInit``);
#: ``compactionThreshold`` (omp 18.3) follows when the entry has it.
SESSION_INIT_PROJECTION = (
    "systemPrompt",
    "task",
    "tools",
    "agent",
    "modelRole",
    "resolvedModel",
    "readOnly",
    "outputSchema",
    "outputSchemaMode",
    "restrictToolNames",
    "readSummarize",
    "spawns",
    "advisor",
    "isolated",
    "compactionThreshold",
)


def peek_session_init(
    path: str | os.PathLike[str], storage: SessionStorage | None = None
) -> dict[str, Any] | None:
    """``{cwd, init}`` of a session file without opening it for writing (omp 18 ``peekSessionInit``):
        ``cwd`` is the header's (else the process cwd); ``init`` is the projection of the **last**
        ``session_init`` entry in file order, whatever its branch (the fields of
        :data:`SESSION_INIT_PROJECTION` it has, in that order, others dropped), or ``None`` when there is
        none. ``None`` for a missing or empty file or one without a header (a row of ``storage`` when
    given). Reads only."""
    from omp_session.errors import SessionError
    from omp_session.store.loading import load_session

    try:
        loaded = load_session(Path(path), storage=storage)
    except (SessionError, OSError):
        return None
    if loaded is None or not isinstance(loaded.header, dict):
        return None
    init = None
    for entry in loaded.entries:
        if entry.get("type") == "session_init":
            init = {key: entry[key] for key in SESSION_INIT_PROJECTION if key in entry}
    cwd = loaded.header.get("cwd")
    return {"cwd": cwd if isinstance(cwd, str) else os.getcwd(), "init": init}
