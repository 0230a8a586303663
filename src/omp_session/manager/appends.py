"""The ``append_*`` methods of :class:`~omp_session.manager.session_manager.SessionManager` (spec §6.3).

Each builds one entry with omp's writer key order (``entry_factory``) and hands it to the
manager's ``_append``, which writes it before it joins the tree. Optional arguments left as
``None`` are omitted from the entry, as omp omits ``undefined``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from omp_session.errors import EntryNotFoundError
from omp_session.format import entry_factory as make
from omp_session.format.ids import new_entry_id, now_iso
from omp_session.model.tree import EntryIndex

Entry = dict[str, Any]
Content = str | list[dict[str, Any]]


class AppendMethods:
    """Mixin: every way to add an entry at the leaf. Each returns the new entry id."""

    _index: EntryIndex

    def _append(self, entry: Entry) -> str:
        raise NotImplementedError  # the manager writes the entry, then indexes it

    def _base(self) -> tuple[str, str | None, str]:
        raise NotImplementedError  # (new id, current leaf, now)

    def append_message(self, message: dict[str, Any]) -> str:
        """Append a ``message`` entry (any role); returns the new entry id."""
        return self._append(make.message(*self._base(), message))

    def append_thinking_level_change(self, level: str | None = None) -> str:
        return self._append(make.typed(*self._base(), "thinking_level_change", thinkingLevel=level))

    def append_model_change(self, model: str, role: str | None = None) -> str:
        return self._append(make.typed(*self._base(), "model_change", model=model, role=make.OMIT_NONE(role)))

    def append_service_tier_change(self, tier: str | None) -> str:
        return self._append(make.typed(*self._base(), "service_tier_change", serviceTier=tier))

    def append_mode_change(self, mode: str, data: dict[str, Any] | None = None) -> str:
        return self._append(make.typed(*self._base(), "mode_change", mode=mode, data=make.OMIT_NONE(data)))

    def append_session_init(
        self, system_prompt: str, task: str, tools: Sequence[str], output_schema: Any = None
    ) -> str:
        return self._append(
            make.typed(
                *self._base(),
                "session_init",
                systemPrompt=system_prompt,
                task=task,
                tools=[*tools],
                outputSchema=make.OMIT_NONE(output_schema),
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
    ) -> str:
        """Append a compaction (``first_kept_entry_id`` is not validated, as in omp)."""
        return self._append(
            make.typed(
                *self._base(),
                "compaction",
                summary=summary,
                shortSummary=make.OMIT_NONE(short_summary),
                firstKeptEntryId=make.OMIT_NONE(first_kept_entry_id),
                tokensBefore=tokens_before,
                details=make.OMIT_NONE(details),
                fromExtension=make.OMIT_NONE(from_extension),
                preserveData=make.OMIT_NONE(preserve_data),
            )
        )

    def append_custom_entry(self, custom_type: str, data: Any = None) -> str:
        return self._append(make.custom(*self._base(), custom_type, data))

    def append_custom_message_entry(
        self,
        custom_type: str,
        content: Content,
        display: bool,
        details: Any = None,
        attribution: str = "agent",
    ) -> str:
        return self._append(
            make.custom_message(*self._base(), custom_type, content, display, details, attribution)
        )

    def append_ttsr_injection(self, rule_names: Sequence[str]) -> str:
        return self._append(make.typed(*self._base(), "ttsr_injection", injectedRules=[*rule_names]))

    def append_mcp_tool_selection(self, tool_names: Sequence[str]) -> str:
        return self._append(make.typed(*self._base(), "mcp_tool_selection", selectedToolNames=[*tool_names]))

    def append_label_change(self, target_id: str, label: str | None = None) -> str:
        """Set (or with ``None``/``""`` clear) the label of any entry; the label entry moves the leaf."""
        if target_id not in self._index.by_id:
            raise EntryNotFoundError(target_id)
        return self._append(
            make.typed(*self._base(), "label", targetId=target_id, label=make.OMIT_NONE(label))
        )

    def branch_with_summary(
        self, entry_id: str | None, summary: str, details: Any = None, from_extension: bool | None = None
    ) -> str:
        """Move the leaf to ``entry_id`` (``None``: before the first entry) and append a branch summary."""
        if entry_id is not None and entry_id not in self._index.by_id:
            raise EntryNotFoundError(entry_id)
        entry = make.typed(
            new_entry_id(self._index.by_id),
            entry_id,
            now_iso(),
            "branch_summary",
            fromId=entry_id if entry_id is not None else "root",
            summary=summary,
            details=make.OMIT_NONE(details),
            fromExtension=make.OMIT_NONE(from_extension),
        )
        return self._append(entry)  # moves the leaf to the summary only once it is written
