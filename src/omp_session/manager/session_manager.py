"""``SessionManager``: the façade that composes storage, the tree index and context building.

Behaviour follows omp 13.19.0 (spec §6, §7) with the improvements the spec's §9 asks for:
appends are written synchronously as one ``write`` before the method returns; a corrupt file is
never overwritten; a failed write leaves memory unchanged; one writer per session file.

The manager is composed, not inherited: one :class:`~omp_session.manager.state.SessionState`
holds what its parts share, and each part (persistence, appends, reads, titles, workspace,
whole-session operations, omp 18's additions, artifacts) receives that state in its constructor.
A public method that is one part's method is that method, forwarded (``_forward.py``: its
signature and docstring are written once, on the part); the others are written here.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from omp_session.dialects import Dialect, DialectChoice, explicit_dialect
from omp_session.format.codec import LineIssue
from omp_session.format.header import is_session_header
from omp_session.manager import factories, omp18_api
from omp_session.manager._forward import forward
from omp_session.manager.appends import Appends
from omp_session.manager.navigation import Navigation
from omp_session.manager.omp18_api import Omp18Operations
from omp_session.manager.persistence import Persistence
from omp_session.manager.runtime import Runtime
from omp_session.manager.state import SessionState
from omp_session.manager.titles import Titles
from omp_session.manager.whole_session import ForkResult, WholeSession
from omp_session.manager.workspace import Workspace
from omp_session.model.tree import SessionTreeNode
from omp_session.store import DurabilityPolicy, SessionStorage, listing
from omp_session.store.artifacts import Artifacts
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

    def __init__(self, state: SessionState, persistence: Persistence, /) -> None:
        """Private (as omp's constructor is): a session comes from a factory below, which builds
        its state and persistence (``factories.py``)."""
        self._state = state
        self._persistence = persistence
        self._navigation = Navigation(state)
        self._appends = Appends(state, persistence)
        self._omp18 = Omp18Operations(state, persistence)
        self._titles = Titles(state, persistence)
        self._workspace = Workspace(state, persistence)
        self._whole_session = WholeSession(state, persistence)
        self._artifacts = Artifacts(lambda: state.storage, state.runtime.blobs_dir)

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
            cls,
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
            cls,
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
            cls,
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
        return factories.in_memory(cls, cwd, dialect=dialect, runtime=runtime)

    @classmethod
    def of_entries(
        cls,
        header: Entry,
        entries: Sequence[Entry],
        *,
        cwd: str | os.PathLike[str] | None = None,
        runtime: Runtime | None = None,
    ) -> SessionManager:
        """An in-memory session holding ``header`` and ``entries`` exactly as given (a converted
        session, as omp's foreign stores load one): nothing is written, the leaf is the last
        entry; ``cwd`` defaults to the process's."""
        return factories.holding(cls, header, entries, cwd, runtime)

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
            cls,
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
        as omp does; no cache file. What each file's head said is kept in memory by the file's
        size, mtime, ctime and inode (:data:`~omp_session.store.listing.HEADS`), so the next
        listing in this process reads only the files that changed.
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

    get_leaf_id = forward("_navigation", Navigation.get_leaf_id)
    get_leaf_entry = forward("_navigation", Navigation.get_leaf_entry)
    get_entry = forward("_navigation", Navigation.get_entry)
    get_entries = forward("_navigation", Navigation.get_entries)
    get_header = forward("_navigation", Navigation.get_header)
    get_branch = forward("_navigation", Navigation.get_branch)
    get_tree = forward("_navigation", Navigation.get_tree)
    get_children = forward("_navigation", Navigation.get_children)
    get_label = forward("_navigation", Navigation.get_label)
    get_labels = forward("_navigation", Navigation.get_labels)
    branch = forward("_navigation", Navigation.branch)
    reset_leaf = forward("_navigation", Navigation.reset_leaf)
    build_session_context = forward("_navigation", Navigation.build_session_context)
    get_injected_ttsr_rules = forward("_navigation", Navigation.get_injected_ttsr_rules)
    get_last_model_change_role = forward("_navigation", Navigation.get_last_model_change_role)
    get_usage_statistics = forward("_navigation", Navigation.get_usage_statistics)
    get_session_id = forward("_navigation", Navigation.get_session_id)
    get_session_file = forward("_navigation", Navigation.get_session_file)
    get_session_dir = forward("_navigation", Navigation.get_session_dir)
    get_cwd = forward("_navigation", Navigation.get_cwd)
    get_session_name = forward("_navigation", Navigation.get_session_name)
    get_parent = forward("_navigation", Navigation.get_parent)
    get_migrated_from = forward("_persistence", Persistence.get_migrated_from)
    get_load_issues = forward("_navigation", Navigation.get_load_issues)
    is_persisted = forward("_navigation", Navigation.is_persisted)
    is_session_on_disk = forward("_navigation", Navigation.is_session_on_disk)

    # ---------------------------------------- appends: Appends

    append_message = forward("_appends", Appends.append_message)
    append_thinking_level_change = forward("_appends", Appends.append_thinking_level_change)
    append_model_change = forward("_appends", Appends.append_model_change)
    append_service_tier_change = forward("_appends", Appends.append_service_tier_change)
    append_mode_change = forward("_appends", Appends.append_mode_change)
    append_session_init = forward("_appends", Appends.append_session_init)
    append_compaction = forward("_appends", Appends.append_compaction)
    append_custom_entry = forward("_appends", Appends.append_custom_entry)
    append_custom_message_entry = forward("_appends", Appends.append_custom_message_entry)
    append_ttsr_injection = forward("_appends", Appends.append_ttsr_injection)
    append_mcp_tool_selection = forward("_appends", Appends.append_mcp_tool_selection)
    append_label_change = forward("_appends", Appends.append_label_change)
    branch_with_summary = forward("_appends", Appends.branch_with_summary)

    # ---------------------------------------- omp 18 additions: Omp18Operations

    append_reset_boundary = forward("_omp18", Omp18Operations.append_reset_boundary)
    append_credential_pin = forward("_omp18", Omp18Operations.append_credential_pin)
    get_credential_pins = forward("_omp18", Omp18Operations.get_credential_pins)
    append_message_to_branch = forward("_omp18", Omp18Operations.append_message_to_branch)
    append_model_usage = forward("_omp18", Omp18Operations.append_model_usage)
    append_entries_atomically = forward("_omp18", Omp18Operations.append_entries_atomically)
    discard_entry_durably = forward("_omp18", Omp18Operations.discard_entry_durably)
    capture_state = forward("_omp18", Omp18Operations.capture_state)
    restore_state = forward("_omp18", Omp18Operations.restore_state)
    seal = forward("_omp18", Omp18Operations.seal)

    # ---------------------------------------- titles: Titles

    has_title_slot = forward("_titles", Titles.has_title_slot)
    get_title_source = forward("_titles", Titles.get_title_source)
    get_title_revision = forward("_titles", Titles.get_title_revision)
    set_session_name = forward("_titles", Titles.set_session_name)

    # ---------------------------------------- workspace: Workspace

    get_additional_directories = forward("_workspace", Workspace.get_additional_directories)
    set_additional_directories = forward("_workspace", Workspace.set_additional_directories)
    add_workspace_directory = forward("_workspace", Workspace.add_workspace_directory)
    remove_workspace_directory = forward("_workspace", Workspace.remove_workspace_directory)
    get_recorded_cwd = forward("_workspace", Workspace.get_recorded_cwd)

    # ---------------------------------------- whole-session operations: WholeSession

    create_branched_session = forward("_whole_session", WholeSession.create_branched_session)
    fork = forward("_whole_session", WholeSession.fork)
    new_session = forward("_whole_session", WholeSession.new_session)

    def persist_copy(
        self, session_dir: str | os.PathLike[str] | None = None, *, storage: SessionStorage | None = None
    ) -> SessionManager:
        """A new persistent session holding a copy of this one (omp 18 ``persistCopy``): a new id and
        file in ``session_dir`` (default: the project directory of this session's cwd), every entry
        with its id, the title and its source, the workspace directories. Writes the new file at
        once (title slot under omp 18) and this terminal's breadcrumb; this session is untouched."""
        return factories.persist_copy(type(self), self._state, session_dir, storage=storage)

    drop_session = forward("_whole_session", WholeSession.drop_session)
    move_to = forward("_whole_session", WholeSession.move_to)
    rewrite_entries = forward("_whole_session", WholeSession.rewrite_entries)
    ensure_on_disk = forward("_persistence", Persistence.ensure_on_disk)

    # ---------------------------------------- artifacts and blobs: Artifacts

    get_artifacts_dir = forward("_artifacts", Artifacts.get_artifacts_dir)
    allocate_artifact_path = forward("_artifacts", Artifacts.allocate_artifact_path)
    save_artifact = forward("_artifacts", Artifacts.save_artifact)
    get_artifact_path = forward("_artifacts", Artifacts.get_artifact_path)
    put_blob = forward("_artifacts", Artifacts.put_blob)

    # ---------------------------------------- persistence: Persistence

    refresh = forward("_persistence", Persistence.refresh)
    flush = forward("_persistence", Persistence.flush)
    close = forward("_persistence", Persistence.close)

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
