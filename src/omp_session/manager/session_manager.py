"""``SessionManager``: the façade that composes storage, the tree index and context building.

Behaviour follows omp 13.19.0 (spec §6, §7) with the improvements the spec's §9 asks for:
appends are written synchronously as one ``write`` before the method returns; a corrupt file is
never overwritten; a failed write leaves memory unchanged; one writer per session file.

The manager is composed, not inherited: one :class:`~omp_session.manager.state.SessionState`
holds what its parts share, and each part (persistence, appends, reads, titles, workspace,
whole-session operations, omp 18's additions, artifacts) receives that state in its constructor.
Every public method below is a thin, explicit delegation with omp's name (docs/architecture.md).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from omp_session.dialects import Dialect, DialectChoice, explicit_dialect
from omp_session.format.codec import LineIssue
from omp_session.format.header import is_session_header
from omp_session.format.title_slot import TitleSlot
from omp_session.manager import factories, omp18_api
from omp_session.manager.appends import Appends
from omp_session.manager.navigation import EntryList, Navigation
from omp_session.manager.omp18_api import CURRENT_LEAF, Omp18Operations
from omp_session.manager.persistence import Persistence
from omp_session.manager.runtime import Runtime
from omp_session.manager.state import SessionState
from omp_session.manager.titles import Titles
from omp_session.manager.whole_session import ForkResult, WholeSession
from omp_session.manager.workspace import Workspace
from omp_session.model.context import SessionContext
from omp_session.model.tree import SessionTreeNode
from omp_session.model.usage import UsageStatistics
from omp_session.store import DurabilityPolicy, SessionStorage, Storage, listing
from omp_session.store.artifacts import Artifacts, ArtifactSlot, BlobInfo
from omp_session.store.blobs import BlobSink

Entry = dict[str, Any]
# Aliases: inside the class body ``list`` names the ``SessionManager.list`` factory.
InfoList = list[listing.SessionInfo]
NodeList = list[SessionTreeNode]
IssueList = list[LineIssue]
RuleList = list[str]
DirectoryList = list[str]
Content = str | list[dict[str, Any]]


class SessionManager:
    """One session: a header and a tree of entries, persisted to a JSONL file or kept in memory.

    Build one with :meth:`create`, :meth:`open`, :meth:`continue_recent`, :meth:`in_memory` or
    :meth:`fork_from`; use it as a context manager to release the file at the end::

        with SessionManager.create("/work/project") as session:
            session.append_message({"role": "user", "content": "hi", "timestamp": 0})
    """

    def __init__(
        self,
        *,
        cwd: str,
        session_dir: str,
        storage: Storage,
        header: Entry,
        entries: Sequence[Entry] = (),
        ensured_on_disk: bool = False,
        flushed: bool = False,
        migrated_from: int | None = None,
        issues: Sequence[LineIssue] = (),
        read_only: bool = False,
        dialect: Dialect | None = None,
        layout_locked: bool = True,
        title_slot: TitleSlot | None = None,
        runtime: Runtime | None = None,
    ) -> None:
        self._compose(
            SessionState.build(
                cwd=cwd,
                session_dir=session_dir,
                storage=storage,
                header=header,
                entries=entries,
                ensured_on_disk=ensured_on_disk,
                flushed=flushed,
                migrated_from=migrated_from,
                issues=issues,
                read_only=read_only,
                dialect=dialect,
                layout_locked=layout_locked,
                title_slot=title_slot,
                runtime=runtime,
            )
        )

    def _compose(self, state: SessionState) -> None:
        self._state = state
        self._persistence = persistence = Persistence(state)
        self._navigation = Navigation(state)
        self._appends = Appends(state, persistence)
        self._omp18 = Omp18Operations(state, persistence)
        self._titles = Titles(state, persistence)
        self._workspace = Workspace(state, persistence)
        self._whole_session = WholeSession(state, persistence)
        self._artifacts = Artifacts(lambda: state.storage, state.runtime.blobs_dir)

    @classmethod
    def _composed(cls, state: SessionState) -> SessionManager:
        """A manager over ``state`` (what the factories build)."""
        manager = cls.__new__(cls)
        manager._compose(state)
        return manager

    @property
    def dialect(self) -> Dialect:
        """The omp version whose rules this session follows (see :mod:`omp_session.dialects`)."""
        return self._state.dialect

    # ------------------------------------------------------------------ factories

    @classmethod
    def create(
        cls,
        cwd: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        durability: DurabilityPolicy = "os",
        dialect: DialectChoice = None,
        runtime: Runtime | None = None,
        storage: SessionStorage | None = None,
    ) -> SessionManager:
        """A new persistent session; its file is first written with the first assistant message.
        ``storage`` is where sessions live (default: files; or a ``PostgresStorage``).

        Writes now: the session directory (created if missing; without ``session_dir``, omp's
        project directory for ``cwd``, a legacy one moved into place) and, unless the runtime turns
        breadcrumbs off, this terminal's breadcrumb ``<agent dir>/terminal-sessions/<terminal>``
        (§7.8) when the terminal has an id. (A database store creates no directory.)
        """
        return factories.create(
            cls._composed,
            cwd,
            session_dir,
            durability=durability,
            dialect=dialect,
            runtime=runtime,
            storage=storage,
        )

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        read_only: bool = False,
        durability: DurabilityPolicy = "os",
        dialect: DialectChoice = None,
        throw_if_missing: bool = False,
        runtime: Runtime | None = None,
        blobs: BlobSink | None = None,
        storage: SessionStorage | None = None,
    ) -> SessionManager:
        """Open a session file (or the row of a database ``storage``). A missing or blank file starts a
        new session at that path (its header is written at once, as omp does), unless
        ``throw_if_missing``: then a missing file raises ``SessionNotFoundError`` and a blank one
        ``CorruptSessionError``, and nothing is written. A file with a bad header raises
        ``CorruptSessionError`` and is never modified.

        Writable (the default): takes the writer lock and writes this terminal's breadcrumb
        ``<agent dir>/terminal-sessions/<terminal>`` (§7.8; unless the runtime turns breadcrumbs
        off); a v1/v2 file is rewritten, with a ``.v<N>.bak`` backup, on the first write.
        ``read_only=True`` takes no lock and never writes the session file, its directory, its
        artifacts, the blob store or a breadcrumb; a missing file raises ``SessionNotFoundError``
        and a blank one ``CorruptSessionError``.

        Either way, unless the runtime turns it off, a file of 256 KiB or more may get its
        offset-index cache written or extended, ``<agent dir>/cache/offsets/<hash>.idx`` (or
        deleted when it no longer matches the file): a cache apart from the session, see
        docs/performance.md. ``blobs`` is the blob store image references are resolved from
        (default: the runtime's; :class:`~omp_session.store.blobs.UnresolvedBlobs` keeps the
        references as written, which is what the viewer and the read-only tools use).
        """
        return factories.open_session(
            cls._composed,
            path,
            session_dir,
            read_only=read_only,
            durability=durability,
            dialect=dialect,
            throw_if_missing=throw_if_missing,
            runtime=runtime,
            blobs=blobs,
            storage=storage,
        )

    @classmethod
    def continue_recent(
        cls,
        cwd: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        durability: DurabilityPolicy = "os",
        dialect: DialectChoice = None,
        runtime: Runtime | None = None,
        storage: SessionStorage | None = None,
    ) -> SessionManager:
        """Open this terminal's last session of ``cwd`` (its breadcrumb, §7.8), else the newest valid
        session by mtime, else create a new one (in ``storage``, default files). Writes what a
        writable :meth:`open` or :meth:`create` writes (the project's session directory is created if
        missing)."""
        return factories.continue_recent(
            cls._composed,
            cwd,
            session_dir,
            durability=durability,
            dialect=dialect,
            runtime=runtime,
            storage=storage,
        )

    @classmethod
    def create_empty_session_file(
        cls,
        cwd: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        dialect: DialectChoice = None,
        runtime: Runtime | None = None,
    ) -> str:
        """Write a new session file holding only its header (behind an untitled title slot when
        the session is written as omp 18's) and return its path (omp 18 ``createEmptySessionFile``;
        the header's cwd is resolved)."""
        manager = cls.create(os.path.abspath(cwd), session_dir, dialect=dialect, runtime=runtime)
        try:
            manager.ensure_on_disk()
            return str(manager.get_session_file())
        finally:
            manager.close()

    @staticmethod
    def peek_session_init(
        path: str | os.PathLike[str], *, storage: SessionStorage | None = None
    ) -> dict[str, Any] | None:
        """``{cwd, init}`` of a session file (or a row of ``storage``) without opening it for
        writing (omp 18 ``peekSessionInit``): the header's cwd (else the process cwd) and omp's
        projection of the **last** ``session_init`` entry in file order (``None`` without one);
        ``None`` for a missing or empty file or one without a header. Reads only."""
        return omp18_api.peek_session_init(path, storage)

    @staticmethod
    def find_most_recent_session(
        session_dir: str | os.PathLike[str], *, storage: SessionStorage | None = None
    ) -> str | None:
        """The newest-mtime session file of ``session_dir`` with a valid header, empty or not
        (omp's ``findMostRecentSession``). Reads only."""
        found = listing.find_most_recent_session(Path(session_dir), storage=storage)
        return os.fspath(found) if found is not None else None

    @classmethod
    def in_memory(
        cls,
        cwd: str | os.PathLike[str] | None = None,
        *,
        dialect: DialectChoice = None,
        runtime: Runtime | None = None,
    ) -> SessionManager:
        """A session whose entries never touch the disk: no session file, no breadcrumb, artifacts in a
        dict and the images of appended messages in an in-memory blob store.

        The one exception is :meth:`put_blob`, which writes to the runtime's agent directory
        (``<agent dir>/blobs/``) for any session, this one included.
        """
        return factories.in_memory(cls._composed, cwd, dialect=dialect, runtime=runtime)

    @classmethod
    def fork_from(
        cls,
        source_path: str | os.PathLike[str],
        cwd: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        dialect: DialectChoice = None,
        reset_inherited_cost: bool = False,
        repair_interrupted_tail: bool = False,
        runtime: Runtime | None = None,
        storage: SessionStorage | None = None,
    ) -> SessionManager:
        """A new session holding a copy of every entry of ``source_path`` (written at once), both in
        ``storage`` (default: files).

        Writes the new file and creates its directory; the source is only read.

        Unlike omp (§9 #19) a missing or corrupt source raises instead of yielding an empty session.
        omp 18 options: ``reset_inherited_cost`` zeroes the cost of every copied usage (tokens
        kept); ``repair_interrupted_tail`` closes tool calls left without a result.
        """
        return factories.fork_from(
            cls._composed,
            source_path,
            cwd,
            session_dir,
            dialect=dialect,
            reset_inherited_cost=reset_inherited_cost,
            repair_interrupted_tail=repair_interrupted_tail,
            runtime=runtime,
            storage=storage,
        )

    @classmethod
    def list(
        cls,
        cwd: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        dialect: DialectChoice = None,
        storage: SessionStorage | None = None,
    ) -> InfoList:
        """Sessions of ``cwd`` (or of ``session_dir``) in ``storage`` (default files), newest first.

        Each file's head is read when listed, the rest of it when a field that needs every entry
        (the message count, the texts, the cost, the last activity) is first read
        (:func:`~omp_session.store.listing.list_sessions`). Writes: without ``session_dir`` omp's
        project directory for ``cwd`` is created if missing (and a legacy one moved into place),
        as omp does; no cache.
        """
        directory = factories.session_dir_for(cwd, session_dir)
        return listing.list_sessions(directory, dialect=explicit_dialect(dialect), storage=storage)

    @classmethod
    def list_all(cls, *, dialect: DialectChoice = None, storage: SessionStorage | None = None) -> InfoList:
        """Sessions of every project under the sessions root, newest first, read as :meth:`list`
        reads them. Writes nothing."""
        return listing.list_all_sessions(dialect=explicit_dialect(dialect), storage=storage)

    @classmethod
    def list_for_picker(
        cls,
        cwd: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        dialect: DialectChoice = None,
        storage: SessionStorage | None = None,
    ) -> InfoList:
        """:meth:`list` without the empty sessions (omp 18.3 ``listForPicker``): an untitled session
        with no assistant turn and no first message is dropped unless it is pinned
        (``<agent dir>/session-pins.json``); pinned sessions first. Writes what :meth:`list` writes."""
        directory = factories.session_dir_for(cwd, session_dir)
        return listing.for_picker(
            listing.list_sessions(directory, dialect=listing.picker_dialect(dialect), storage=storage)
        )

    @classmethod
    def list_all_for_picker(
        cls, *, dialect: DialectChoice = None, storage: SessionStorage | None = None
    ) -> InfoList:
        """:meth:`list_all` with :meth:`list_for_picker`'s rule (omp 18.3 ``listAllForPicker``)."""
        return listing.for_picker(
            listing.list_all_sessions(dialect=listing.picker_dialect(dialect), storage=storage)
        )

    # ---------------------------------------- reads and navigation: Navigation

    def get_leaf_id(self) -> str | None:
        return self._navigation.get_leaf_id()

    def get_leaf_entry(self) -> Entry | None:
        return self._navigation.get_leaf_entry()

    def get_entry(self, entry_id: str) -> Entry | None:
        return self._navigation.get_entry(entry_id)

    def get_entries(self) -> EntryList:
        """Every entry in file order: a new list, or, for a file opened through its offset index,
        a view of the entries there are now that decodes them from the file on access (a slice
        of it is a list; copy it with ``list(...)`` to change it). The entries themselves are
        live; in a read-only session an entry may be decoded anew (an equal dict) once the
        bounded cache dropped it, so a change made to it in place may not last
        (docs/performance.md, "Memory")."""
        return self._navigation.get_entries()

    def get_header(self) -> Entry:
        return self._navigation.get_header()

    def get_branch(self, from_id: str | None = None) -> EntryList:
        """Root→entry path for ``from_id`` (default: the leaf); ``[]`` if unknown."""
        return self._navigation.get_branch(from_id)

    def get_tree(self) -> NodeList:
        return self._navigation.get_tree()

    def get_children(self, parent_id: str) -> EntryList:
        return self._navigation.get_children(parent_id)

    def get_label(self, entry_id: str) -> str | None:
        return self._navigation.get_label(entry_id)

    def get_labels(self) -> dict[str, str]:
        """Every current label by target id (a copy)."""
        return self._navigation.get_labels()

    def branch(self, entry_id: str) -> None:
        """Move the leaf to an existing entry (not persisted, as in omp)."""
        self._navigation.branch(entry_id)

    def reset_leaf(self) -> None:
        """Move the leaf before the first entry; the next append starts a new root."""
        self._navigation.reset_leaf()

    def build_session_context(
        self,
        *,
        transcript: bool = False,
        collapse_compacted_history: bool = False,
        keep_dangling_tool_calls: bool = False,
    ) -> SessionContext:
        """The LLM context at the current leaf (O(depth)).

        ``transcript=True`` builds omp 18's display transcript instead (every entry, compactions
        inline; ``collapse_compacted_history`` shows only the latest compacted tail), see
        :mod:`omp_session.model.transcript_context`.
        """
        return self._navigation.build_session_context(
            transcript=transcript,
            collapse_compacted_history=collapse_compacted_history,
            keep_dangling_tool_calls=keep_dangling_tool_calls,
        )

    def get_injected_ttsr_rules(self) -> RuleList:
        """TTSR rule names injected along the current branch, first appearance first (§5)."""
        return self._navigation.get_injected_ttsr_rules()

    def get_last_model_change_role(self) -> str | None:
        """``role`` (default ``"default"``) of the nearest ``model_change`` above the leaf (§5)."""
        return self._navigation.get_last_model_change_role()

    def get_usage_statistics(self) -> UsageStatistics:
        """Totals over every branch (a copy, not a live object), as this dialect reports them."""
        return self._navigation.get_usage_statistics()

    def get_session_id(self) -> str:
        return self._navigation.get_session_id()

    def get_session_file(self) -> str | None:
        return self._navigation.get_session_file()

    def get_session_dir(self) -> str:
        return self._navigation.get_session_dir()

    def get_cwd(self) -> str:
        return self._navigation.get_cwd()

    def get_session_name(self) -> str | None:
        return self._navigation.get_session_name()

    def get_parent(self, entry: Entry) -> Entry | None:
        """The parent of ``entry`` as the tree sees it: ``None`` for a root (no, unknown, own or
        cycle-closing parent; docs/durability.md)."""
        return self._navigation.get_parent(entry)

    def get_migrated_from(self) -> int | None:
        """The format version the file had when it was opened, if it was migrated in memory and not
        yet written back (``None`` otherwise). Version 1 files get their entry ids at load."""
        return self._navigation.get_migrated_from()

    def get_load_issues(self) -> IssueList:
        """Lines skipped or read leniently when the file was loaded."""
        return self._navigation.get_load_issues()

    def is_persisted(self) -> bool:
        return self._navigation.is_persisted()

    def is_session_on_disk(self) -> bool:
        """Whether this session's file (or database row) exists now (omp 18 ``isSessionOnDisk``);
        always ``False`` in memory. Reads only."""
        return self._navigation.is_session_on_disk()

    # ---------------------------------------- appends: Appends

    def append_message(self, message: dict[str, Any]) -> str:
        """Append a ``message`` entry (any role); returns the new entry id."""
        return self._appends.append_message(message)

    def append_thinking_level_change(self, level: str | None = None, configured: str | None = None) -> str:
        """omp 18 also records the ``configured`` selector (always written, ``null`` when unset)."""
        return self._appends.append_thinking_level_change(level, configured)

    def append_model_change(
        self, model: str, role: str | None = None, resolved_model_is_fallback: bool = False
    ) -> str:
        """omp 18 always writes ``resolvedModelIsFallback`` (``false`` by default)."""
        return self._appends.append_model_change(model, role, resolved_model_is_fallback)

    def append_service_tier_change(self, tier: str | None) -> str:
        return self._appends.append_service_tier_change(tier)

    def append_mode_change(self, mode: str, data: dict[str, Any] | None = None) -> str:
        return self._appends.append_mode_change(mode, data)

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
        return self._appends.append_session_init(
            system_prompt,
            task,
            tools,
            output_schema,
            agent=agent,
            model_role=model_role,
            resolved_model=resolved_model,
            read_only=read_only,
            output_schema_mode=output_schema_mode,
            restrict_tool_names=restrict_tool_names,
            spawns=spawns,
            read_summarize=read_summarize,
            advisor=advisor,
            isolated=isolated,
            compaction_threshold=compaction_threshold,
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
        return self._appends.append_compaction(
            summary,
            short_summary,
            first_kept_entry_id,
            tokens_before,
            details,
            from_extension,
            preserve_data,
            tokens_after=tokens_after,
            method=method,
            provider_replay_through_entry_id=provider_replay_through_entry_id,
        )

    def append_custom_entry(self, custom_type: str, data: Any = None) -> str:
        return self._appends.append_custom_entry(custom_type, data)

    def append_custom_message_entry(
        self,
        custom_type: str,
        content: Content,
        display: bool,
        details: Any = None,
        attribution: str = "agent",
    ) -> str:
        return self._appends.append_custom_message_entry(custom_type, content, display, details, attribution)

    def append_ttsr_injection(self, rule_names: Sequence[str]) -> str:
        return self._appends.append_ttsr_injection(rule_names)

    def append_mcp_tool_selection(self, tool_names: Sequence[str]) -> str:
        """omp 13.19 only: omp 18 removed MCP tool selections."""
        return self._appends.append_mcp_tool_selection(tool_names)

    def append_label_change(self, target_id: str, label: str | None = None) -> str:
        """Set (or with ``None``/``""`` clear) the label of any entry; the label entry moves the leaf."""
        return self._appends.append_label_change(target_id, label)

    def branch_with_summary(
        self, entry_id: str | None, summary: str, details: Any = None, from_extension: bool | None = None
    ) -> str:
        """Move the leaf to ``entry_id`` (``None``: before the first entry) and append a branch summary."""
        return self._appends.branch_with_summary(entry_id, summary, details, from_extension)

    # ---------------------------------------- omp 18 additions: Omp18Operations

    def append_reset_boundary(self) -> str:
        """The ``/clear`` marker: the model context starts after the last one (§2.2, §3.3)."""
        return self._omp18.append_reset_boundary()

    def append_credential_pin(self, provider: str, hash: str) -> str:
        """Record which account served ``provider`` (``hash`` is opaque to the store, §2.4)."""
        return self._omp18.append_credential_pin(provider, hash)

    def get_credential_pins(self) -> dict[str, dict[str, Any]]:
        """The last pin per provider on the current branch: ``{provider: {hash, lastUsedAt}}``.

        ``lastUsedAt`` (ms) starts at the pin and follows later assistant turns of that provider.
        """
        return self._omp18.get_credential_pins()

    def append_message_to_branch(self, message: dict[str, Any], parent_id: str | None) -> str:
        """Append ``message`` under ``parent_id`` (``None``: a new root) without moving the leaf."""
        return self._omp18.append_message_to_branch(message, parent_id)

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
        return self._omp18.append_model_usage(
            purpose,
            api,
            provider,
            model,
            usage,
            stop_reason,
            role=role,
            error_message=error_message,
            session_id=session_id,
            parent_id=parent_id,
        )

    def append_entries_atomically(self, append: Callable[[], Any]) -> Any:
        """Run ``append`` (which calls ``append_*`` methods) and write its entries with **one**
        atomic rewrite; if it raises, the entries it added are rolled back (§5.6)."""
        return self._omp18.append_entries_atomically(append)

    def discard_entry_durably(self, entry_id: str) -> None:
        """Abandon ``entry_id`` on disk (§5.6): removed and its children re-chained when every
        child is a ``service_tier_change``, else kept; then a ``branch_summary`` marker with an empty
        summary is appended and the file rewritten."""
        self._omp18.discard_entry_durably(entry_id)

    def capture_state(self) -> dict[str, Any]:
        """A snapshot of the in-memory session to :meth:`restore_state` later (omp 18's
        ``captureState``): header (copied), entries, leaf and title state. The file is not part of
        it: restoring does not write."""
        return self._omp18.capture_state()

    def restore_state(self, snapshot: dict[str, Any]) -> None:
        """Go back to a :meth:`capture_state` snapshot (memory only)."""
        self._omp18.restore_state(snapshot)

    def seal(self) -> None:
        """After this, appends and renames are dropped no-ops (omp 18 ``seal``)."""
        self._omp18.seal()

    # ---------------------------------------- titles: Titles

    def has_title_slot(self) -> bool:
        """Whether the session file starts (or will start) with omp 18's title slot."""
        return self._titles.has_title_slot()

    def get_title_source(self) -> str | None:
        """``"auto"``, ``"user"`` or ``None`` (omp 18 ``titleSource``)."""
        return self._titles.get_title_source()

    def get_title_revision(self) -> int:
        """How many times a user renamed the session in this manager (omp 18 ``titleRevision``)."""
        return self._titles.get_title_revision()

    def set_session_name(self, name: str, source: str = "auto", trigger: str | None = None) -> bool:
        """Name the session; returns whether the name was taken.

        omp 18 rules (dialect 18): the name is cleaned (controls → spaces, runs collapsed,
        trimmed); an empty result, an automatic name after a user's, or a sealed session return
        ``False``. A ``title_change`` entry is appended and the slot rewritten in place, atomically
        and durably (``Storage.overwrite_title_slot``; for files ``store/file.py``). omp 13.19
        rules: the name goes verbatim into the header and the file is rewritten at once if it exists.
        """
        return self._titles.set_session_name(name, source, trigger)

    # ---------------------------------------- workspace: Workspace

    def get_additional_directories(self) -> DirectoryList:
        """Workspace roots besides the cwd (header ``additionalDirectories``)."""
        return self._workspace.get_additional_directories()

    def set_additional_directories(self, directories: Sequence[str]) -> DirectoryList:
        """Replace the extra workspace roots (normalised, de-duplicated, without the cwd)."""
        return self._workspace.set_additional_directories(directories)

    def add_workspace_directory(self, directory: str) -> str | None:
        """Add one root; returns it resolved, or ``None`` when already present. The cwd itself is
        refused (``WorkspaceError``), as in omp 18."""
        return self._workspace.add_workspace_directory(directory)

    def remove_workspace_directory(self, directory: str) -> str | None:
        """Remove one root; returns it resolved, or ``None`` when it was not there."""
        return self._workspace.remove_workspace_directory(directory)

    def get_recorded_cwd(self) -> str | None:
        """The cwd the header records (omp 18 may run in another one when it does not exist)."""
        return self._workspace.get_recorded_cwd()

    # ---------------------------------------- whole-session operations: WholeSession

    def create_branched_session(self, leaf_id: str, *, cwd: str | None = None) -> str | None:
        """Replace this session by a new one holding only the path to ``leaf_id`` (+ its labels).

        Label entries on the path are dropped and the path stays connected (each entry's parent is
        its nearest kept ancestor; omp leaves an orphan). Returns the new file (``None`` in memory).
        ``cwd``: the new header's cwd (default: this session's working directory, as omp does;
        ``omp-session fork`` passes the recorded one, which omp 18 replaces by the process cwd
        when that directory is gone).
        """
        return self._whole_session.create_branched_session(leaf_id, cwd=cwd)

    def fork(self) -> ForkResult | None:
        """Copy this session (every branch, same ids) into a new file; ``None`` in memory."""
        return self._whole_session.fork()

    def new_session(
        self,
        parent_session: str | None = None,
        *,
        provider_prompt_cache_key: str | None = None,
        additional_directories: Sequence[str] = (),
        session_dir: str | os.PathLike[str] | None = None,
    ) -> str | None:
        """Start a fresh, empty session. omp 13.19 writes its file with the first assistant
        message; omp 18 writes it (title slot and header) at once. ``session_dir`` (omp 18.3):
        this file and every later one of this manager (``new_session``, ``fork``) go into that
        directory (resolved against the process cwd; created with the first write), which
        :meth:`get_session_dir` then returns; ignored in memory."""
        return self._whole_session.new_session(
            parent_session,
            provider_prompt_cache_key=provider_prompt_cache_key,
            additional_directories=additional_directories,
            session_dir=session_dir,
        )

    def persist_copy(
        self, session_dir: str | os.PathLike[str] | None = None, *, storage: SessionStorage | None = None
    ) -> SessionManager:
        """A new persistent session holding a copy of this one (omp 18 ``persistCopy``): a new id and
        file in ``session_dir`` (default: the project directory of this session's cwd), every entry
        with its id, the title and its source, the workspace directories. Writes the new file at
        once (title slot under omp 18) and this terminal's breadcrumb; this session is untouched."""
        return factories.persist_copy(self._composed, self._state, session_dir, storage=storage)

    def drop_session(self, path: str | os.PathLike[str]) -> None:
        """Delete the session file ``path`` and its artifact directory (omp 18 ``dropSession``); a
        missing file is not an error. When ``path`` is this session's file, its writer is closed
        first (later appends write the file anew). Under a dialect that asks for it (omp 18.2.9+)
        every ``<name>.jsonl.*.bak`` beside it goes too (docs/compatibility.md)."""
        self._whole_session.drop_session(path)

    def move_to(
        self, new_cwd: str | os.PathLike[str], target_session_dir: str | os.PathLike[str] | None = None
    ) -> None:
        """Move the session to the project directory of ``new_cwd`` (omp's ``moveTo``, §6.6).

        The file and its artifact directory are renamed into the new session directory (the
        file rename is undone if the artifacts cannot follow), and the header's ``cwd`` becomes
        the resolved ``new_cwd``. A no-op when the resolved cwd does not change.
        """
        self._whole_session.move_to(new_cwd, target_session_dir)

    def rewrite_entries(self) -> None:
        """Rewrite the whole file from memory, after entries were changed in place (omp's
        ``rewriteEntries``, used when tool output is pruned). Atomic, as every rewrite."""
        self._whole_session.rewrite_entries()

    def ensure_on_disk(self) -> None:
        """Write the session now and persist every later entry immediately."""
        self._whole_session.ensure_on_disk()

    # ---------------------------------------- artifacts and blobs: Artifacts

    def get_artifacts_dir(self) -> str | None:
        """``<session file minus .jsonl>``, or ``None`` for an in-memory session."""
        return self._artifacts.get_artifacts_dir()

    def allocate_artifact_path(self, tool_type: str) -> ArtifactSlot | None:
        """Reserve the next ``<n>.<tool_type>.log``; ``None`` in memory.

        Writes: creates the artifact directory. Raises :class:`UnsafeNameError` (nothing created)
        when ``tool_type`` would make the name leave the directory, :class:`PersistenceError` when
        the directory cannot be created or listed.
        """
        return self._artifacts.allocate_artifact_path(tool_type)

    def save_artifact(self, content: str, tool_type: str) -> str:
        """Store ``content`` as the next artifact and return its id.

        Writes ``<artifacts dir>/<n>.<tool_type>.log`` (in memory: a dict, as omp, with no check of
        ``tool_type``). Raises :class:`UnsafeNameError` for a ``tool_type`` that is not part of a
        safe file name and :class:`PersistenceError` when the file cannot be written.
        """
        return self._artifacts.save_artifact(content, tool_type)

    def get_artifact_path(self, artifact_id: str) -> str | None:
        """The first file of the artifact directory named ``<id>.…``, or ``None``."""
        return self._artifacts.get_artifact_path(artifact_id)

    def put_blob(self, data: bytes) -> BlobInfo:
        """Store ``data`` in the agent directory's content-addressed blob store,
        ``<agent dir>/blobs/<sha256>`` (written atomically; skipped when a blob of that size is
        there). Writes to disk even for an in-memory session."""
        return self._artifacts.put_blob(data)

    # ---------------------------------------- persistence: Persistence

    def refresh(self) -> EntryList:
        """Read entries appended to the file since it was loaded (for read-only followers).

        Only complete lines are read; returns the new entries, which also move the leaf. If the
        writer replaced the file meanwhile (a full rewrite), it is read again in full.
        """
        return self._persistence.refresh()

    def flush(self) -> None:
        """Make every written entry durable (fsync)."""
        self._persistence.flush()

    def close(self) -> None:
        """Flush and release the file and its lock. The manager must not be used afterwards."""
        self._persistence.close()

    def __enter__(self) -> SessionManager:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        where = self.get_session_file() or "in memory"
        return f"<SessionManager {self.get_session_id()} {where} leaf={self._state.leaf}>"


__all__ = ["ForkResult", "SessionManager", "is_session_header"]
