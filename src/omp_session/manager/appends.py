"""The ``append_*`` methods of :class:`~omp_session.manager.session_manager.SessionManager` (spec §6.3).

Each builds one entry with omp's writer key order (``entry_factory``) and hands it to
``Persistence.append``, which writes it before it joins the tree. Optional arguments left as
``None`` are omitted from the entry, as omp omits ``undefined``.

Internal module (part of :class:`~omp_session.SessionManager`, which is the API); not part of the public API.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from omp_session.errors import EntryNotFoundError, UnsupportedByDialectError
from omp_session.format import entry_factory as make
from omp_session.manager.persistence import Persistence
from omp_session.manager.state import SessionState

__all__ = ["Appends"]

Entry = dict[str, Any]
Content = str | list[dict[str, Any]]


class Appends:
    """Every way to add an entry at the leaf. Each returns the new entry id."""

    def __init__(self, state: SessionState, persistence: Persistence) -> None:
        self._state = state
        self._persistence = persistence

    def append_message(self, message: dict[str, Any]) -> str:
        """Append a ``message`` entry (any role); returns the new entry id."""
        return self._persistence.append(make.message(*self._state.base(), message))

    def append_thinking_level_change(self, level: str | None = None, configured: str | None = None) -> str:
        """omp 18 also records the ``configured`` selector (always written, ``null`` when unset)."""
        explicit = self._state.dialect.explicit_model_fields
        return self._persistence.append(
            make.typed(
                *self._state.base(),
                "thinking_level_change",
                thinkingLevel=level,
                configured=configured if explicit else make.OMIT_NONE(configured),
            )
        )

    def append_model_change(
        self, model: str, role: str | None = None, resolved_model_is_fallback: bool = False
    ) -> str:
        """omp 18 always writes ``resolvedModelIsFallback`` (``false`` by default)."""
        explicit = self._state.dialect.explicit_model_fields
        flag = resolved_model_is_fallback if explicit or resolved_model_is_fallback else make.OMIT
        return self._persistence.append(
            make.typed(
                *self._state.base(),
                "model_change",
                model=model,
                role=make.OMIT_NONE(role),
                resolvedModelIsFallback=flag,
            )
        )

    def append_service_tier_change(self, tier: str | None) -> str:
        return self._persistence.append(
            make.typed(*self._state.base(), "service_tier_change", serviceTier=tier)
        )

    def append_mode_change(self, mode: str, data: dict[str, Any] | None = None) -> str:
        return self._persistence.append(
            make.typed(*self._state.base(), "mode_change", mode=mode, data=make.OMIT_NONE(data))
        )

    def append_session_init(
        self,
        system_prompt: str,
        task: str,
        tools: Sequence[str],
        output_schema: Any = None,
        *,
        agent: str | None = None,
        model_role: str | None = None,
        resolved_model: str | None = None,
        read_only: bool | None = None,
        output_schema_mode: str | None = None,
        restrict_tool_names: bool | None = None,
        spawns: str | None = None,
        read_summarize: bool | None = None,
        advisor: str | None = None,
        isolated: bool | None = None,
        compaction_threshold: dict[str, Any] | None = None,
    ) -> str:
        """A subagent's start (omp 18 added the keyword fields, written in its declared order;
        omp 18.3 ``compaction_threshold`` ``{thresholdPercent, thresholdTokens}``, stored as given)."""
        return self._persistence.append(
            make.typed(
                *self._state.base(),
                "session_init",
                systemPrompt=system_prompt,
                task=task,
                tools=[*tools],
                agent=make.OMIT_NONE(agent),
                modelRole=make.OMIT_NONE(model_role),
                resolvedModel=make.OMIT_NONE(resolved_model),
                readOnly=make.OMIT_NONE(read_only),
                outputSchema=make.OMIT_NONE(output_schema),
                outputSchemaMode=make.OMIT_NONE(output_schema_mode),
                restrictToolNames=make.OMIT_NONE(restrict_tool_names),
                spawns=make.OMIT_NONE(spawns),
                readSummarize=make.OMIT_NONE(read_summarize),
                advisor=make.OMIT_NONE(advisor),
                compactionThreshold=make.OMIT_NONE(compaction_threshold),
                isolated=make.OMIT_NONE(isolated),
            )
        )

    def append_compaction(
        self,
        summary: str,
        short_summary: str | None,
        first_kept_entry_id: str | None,
        tokens_before: int,
        details: Any = None,
        from_extension: bool | None = None,
        preserve_data: dict[str, Any] | None = None,
        *,
        tokens_after: int | None = None,
        method: str | None = None,
        provider_replay_through_entry_id: str | None = None,
    ) -> str:
        """Append a compaction (``first_kept_entry_id`` is not validated, as in omp).

        omp 18's options (``tokens_after``, ``method``, ``provider_replay_through_entry_id``) are
        keywords; the dialect gives the key order (omp 18 writes ``details`` after them).
        """
        values = {
            "summary": summary,
            "shortSummary": make.OMIT_NONE(short_summary),
            "firstKeptEntryId": make.OMIT_NONE(first_kept_entry_id),
            "tokensBefore": tokens_before,
            "tokensAfter": make.OMIT_NONE(tokens_after),
            "method": make.OMIT_NONE(method),
            "providerReplayThroughEntryId": make.OMIT_NONE(provider_replay_through_entry_id),
            "details": make.OMIT_NONE(details),
            "fromExtension": make.OMIT_NONE(from_extension),
            "preserveData": make.OMIT_NONE(preserve_data),
        }
        order = self._state.dialect.compaction_keys
        fields = {key: values[key] for key in order}
        fields.update(
            {key: value for key, value in values.items() if key not in order and value is not make.OMIT}
        )
        return self._persistence.append(make.typed(*self._state.base(), "compaction", **fields))

    def append_custom_entry(self, custom_type: str, data: Any = None) -> str:
        return self._persistence.append(make.custom(*self._state.base(), custom_type, data))

    def append_custom_message_entry(
        self,
        custom_type: str,
        content: Content,
        display: bool,
        details: Any = None,
        attribution: str = "agent",
    ) -> str:
        return self._persistence.append(
            make.custom_message(*self._state.base(), custom_type, content, display, details, attribution)
        )

    def append_ttsr_injection(self, rule_names: Sequence[str]) -> str:
        return self._persistence.append(
            make.typed(*self._state.base(), "ttsr_injection", injectedRules=[*rule_names])
        )

    def append_mcp_tool_selection(self, tool_names: Sequence[str]) -> str:
        """omp 13.19 only: omp 18 removed MCP tool selections."""
        if not self._state.dialect.mcp_tool_selection:
            raise UnsupportedByDialectError("append_mcp_tool_selection", self._state.dialect)
        return self._persistence.append(
            make.typed(*self._state.base(), "mcp_tool_selection", selectedToolNames=[*tool_names])
        )

    def append_label_change(self, target_id: str, label: str | None = None) -> str:
        """Set (or with ``None``/``""`` clear) the label of any entry; the label entry moves the leaf."""
        if not self._state.knows(target_id):
            raise EntryNotFoundError(target_id)
        return self._persistence.append(
            make.typed(*self._state.base(), "label", targetId=target_id, label=make.OMIT_NONE(label))
        )

    def branch_with_summary(
        self, entry_id: str | None, summary: str, details: Any = None, from_extension: bool | None = None
    ) -> str:
        """Move the leaf to ``entry_id`` (``None``: before the first entry) and append a branch summary."""
        if entry_id is not None and not self._state.knows(entry_id):
            raise EntryNotFoundError(entry_id)
        entry = make.typed(
            self._state.runtime.new_entry_id(self._state.index.by_id),
            entry_id,
            self._state.runtime.now(),
            "branch_summary",
            fromId=entry_id if entry_id is not None else "root",
            summary=summary,
            details=make.OMIT_NONE(details),
            fromExtension=make.OMIT_NONE(from_extension),
        )
        return self._persistence.append(entry)  # moves the leaf to the summary only once it is written
