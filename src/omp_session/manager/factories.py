"""How each factory of :class:`~omp_session.SessionManager` builds the state of its session.

Each function builds a :class:`SessionState` and its :class:`Persistence` (which owns what is on
disk; writing what its factory's docstring says) and hands both to ``compose``, the manager's
private constructor; the classmethods on ``SessionManager`` (the API, with omp's names) call
these.

Internal module (part of :class:`~omp_session.SessionManager`, which is the API); not part of the public API.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from omp_session.dialects import Dialect, DialectChoice, explicit_dialect
from omp_session.errors import CorruptSessionError, SessionChangedError, SessionNotFoundError
from omp_session.format import entry_factory as make
from omp_session.format.entries import CURRENT_VERSION
from omp_session.manager.layout import dialect_for_file, dialect_for_new
from omp_session.manager.omp18_api import fork_entries
from omp_session.manager.persistence import Persistence
from omp_session.manager.runtime import Runtime
from omp_session.manager.state import SessionState
from omp_session.manager.whole_session import new_header_and_path
from omp_session.store import DurabilityPolicy, OpenedFile, SessionStorage, Storage, listing
from omp_session.store.blobs import BlobSink
from omp_session.store.loading import parse_session
from omp_session.store.memory import MemoryStorage
from omp_session.store.paths import absolute, default_session_dir, session_file_path

__all__ = [
    "continue_recent",
    "create",
    "fork_from",
    "holding",
    "in_memory",
    "open_session",
    "persist_copy",
    "session_dir_for",
]

Entry = dict[str, Any]
StrPath = str | os.PathLike[str]
M = TypeVar("M")
Compose = Callable[[SessionState, Persistence], M]


def session_dir_for(cwd: StrPath, session_dir: StrPath | None) -> Path:
    """An explicit session directory as given, else omp's per-project directory for ``cwd`` (§1.2)."""
    return Path(session_dir) if session_dir is not None else default_session_dir(cwd)


def _runtime(runtime: Runtime | None, storage: SessionStorage | None) -> Runtime:
    """The runtime a factory works with: the one given (else the default), its store ``storage``
    when the call names one. The session keeps it (a drop deletes from the same store)."""
    return (runtime if runtime is not None else Runtime()).with_store(storage)


def _working_directory(header: Entry, dialect: Dialect) -> str:
    """The cwd a session opened from ``header`` works in (omp 18: the recorded one only if it can
    be entered, else the process cwd)."""
    recorded = header.get("cwd")
    if not isinstance(recorded, str):
        return os.getcwd()
    if dialect.cwd_must_exist and not (os.path.isdir(recorded) and os.access(recorded, os.X_OK)):
        return os.getcwd()
    return recorded


def create(
    compose: Compose[M],
    cwd: StrPath,
    session_dir: StrPath | None,
    *,
    durability: DurabilityPolicy,
    dialect: DialectChoice,
    runtime: Runtime | None,
    storage: SessionStorage | None,
) -> M:
    runtime = _runtime(runtime, storage)
    directory = session_dir_for(cwd, session_dir)
    chosen, locked = dialect_for_new(dialect, directory, runtime.store)
    header, path = new_header_and_path(runtime, os.fspath(cwd), directory, dialect=chosen)
    session = runtime.sessions().new_storage(path, runtime.blob_store(), durability=durability)
    runtime.remember_terminal_session(os.fspath(cwd), os.fspath(path))
    state = SessionState.build(
        cwd=os.fspath(cwd),
        session_dir=os.fspath(directory),
        storage=session,
        header=header,
        dialect=chosen,
        layout_locked=locked,
        runtime=runtime,
    )
    # auto: the store already has slot files
    return compose(state, Persistence(state, has_slot=locked and chosen.title_slot))


def open_session(
    compose: Compose[M],
    path: StrPath,
    session_dir: StrPath | None,
    *,
    read_only: bool,
    durability: DurabilityPolicy,
    dialect: DialectChoice,
    throw_if_missing: bool,
    runtime: Runtime | None,
    blobs: BlobSink | None = None,
    storage: SessionStorage | None,
) -> M:
    runtime = _runtime(runtime, storage)
    file_path = absolute(path)
    directory = os.fspath(session_dir) if session_dir is not None else os.fspath(file_path.parent)
    store = runtime.sessions()
    # A directory is not missing: the store's open says what it is ("is a directory"), as it does
    # for every reader (issue 30: fork and label said "no such session file" where show did not).
    if throw_if_missing and not store.session_exists(file_path) and not file_path.is_dir():
        raise SessionNotFoundError(file_path)

    def open_it() -> OpenedFile:
        return store.open_session(
            file_path,
            blobs if blobs is not None else runtime.blob_store(),
            read_only=read_only,
            durability=durability,
            use_index=runtime.offset_index,
            keep_replay=lambda has_slot: dialect_for_file(dialect, has_slot)[0].keeps_openai_replay,
        )

    opened = open_it()
    if opened.loaded is None:
        if throw_if_missing:  # an existing file or row with nothing in it: nothing to open
            opened.storage.close()
            raise CorruptSessionError(file_path, "is empty: there is no session to open")
        chosen, locked = dialect_for_new(dialect, file_path.parent, runtime.store)
        try:
            return compose(*_start_at(directory, opened.storage, chosen, locked, runtime))
        except SessionChangedError:
            opened.storage.close()
            if not store.session_exists(file_path):
                raise
        # Another process created the file between our look and our creation (issue 11 item 2):
        # open theirs instead, which takes the lock or names the process that holds it.
        opened = open_it()
        if opened.loaded is None:  # left blank by them: ours to start, under the lock now
            return compose(*_start_at(directory, opened.storage, chosen, locked, runtime))
    loaded = opened.loaded
    header = loaded.header
    try:
        chosen, locked = dialect_for_file(dialect, loaded.title_slot is not None)
        cwd = _working_directory(header, chosen)
        state = SessionState.build(
            cwd=cwd,
            session_dir=directory,
            storage=opened.storage,
            header=header,
            entries=loaded.entries,
            index=loaded.entry_index(),
            issues=loaded.issues,
            read_only=read_only,
            dialect=chosen,
            layout_locked=locked,
            title_slot=loaded.title_slot,
            runtime=runtime,
        )
        persistence = Persistence(
            state,
            ensured=True,
            flushed=True,
            migrated_from=loaded.migrated_from,
            has_slot=loaded.title_slot is not None,
            read_offset=opened.read_offset,
            issues=loaded.issues,
        )
        if loaded.replay_dropped:
            persistence.replay_dropped()
        if not read_only:  # a reader is not "using" the session in this terminal
            runtime.remember_terminal_session(cwd, os.fspath(file_path))
    except BaseException:
        opened.storage.close()  # never keep the lock of an open that failed (issue 11 item 7)
        raise
    return compose(state, persistence)


def _start_at(
    directory: str, storage: Storage, dialect: Dialect, layout_locked: bool, runtime: Runtime
) -> tuple[SessionState, Persistence]:
    # Nothing to lose: a missing, empty, whitespace-only or slot-only file gets a fresh header
    # at once.
    cwd = os.getcwd()
    header = make.ordered(
        dialect.headers.new,
        type="session",
        version=CURRENT_VERSION,
        id=runtime.session_id(dialect.new_session_id),
        timestamp=runtime.now(),
        cwd=cwd,
    )
    state = SessionState.build(
        cwd=cwd,
        session_dir=directory,
        storage=storage,
        header=header,
        runtime=runtime,
        dialect=dialect,
        layout_locked=layout_locked,
    )
    persistence = Persistence(state, ensured=True, has_slot=layout_locked and dialect.title_slot)
    persistence.rewrite_all()
    return state, persistence


def continue_recent(
    compose: Compose[M],
    cwd: StrPath,
    session_dir: StrPath | None,
    *,
    durability: DurabilityPolicy,
    dialect: DialectChoice,
    runtime: Runtime | None,
    storage: SessionStorage | None,
) -> M:
    runtime = _runtime(runtime, storage)
    directory = session_dir_for(cwd, session_dir)
    store = runtime.sessions()
    recent = runtime.terminal_session(os.fspath(cwd), directory, exists=store.session_exists)
    if recent is None:
        chosen = explicit_dialect(dialect)
        if chosen is None:  # auto: the dialect a new session of this directory would get
            chosen, _locked = dialect_for_new(None, directory, runtime.store)
        recent = (
            listing.most_recent_non_empty(directory, dialect=chosen, storage=runtime.store)
            if chosen.listing.continue_skips_empty  # omp 18.3 skips empty sessions
            else listing.find_most_recent_session(directory, storage=runtime.store)
        )
    if recent is not None:
        return open_session(
            compose,
            recent,
            directory,
            read_only=False,
            durability=durability,
            dialect=dialect,
            throw_if_missing=False,
            runtime=runtime,
            storage=storage,
        )
    return create(
        compose, cwd, directory, durability=durability, dialect=dialect, runtime=runtime, storage=storage
    )


def in_memory(
    compose: Compose[M], cwd: StrPath | None, *, dialect: DialectChoice, runtime: Runtime | None
) -> M:
    runtime = runtime if runtime is not None else Runtime()
    cwd_text = os.fspath(cwd) if cwd is not None else os.getcwd()
    chosen, locked = dialect_for_new(dialect, None)
    header = make.ordered(
        chosen.headers.new,
        type="session",
        version=CURRENT_VERSION,
        id=runtime.session_id(chosen.new_session_id),
        timestamp=runtime.now(),
        cwd=cwd_text,
    )
    state = SessionState.build(
        cwd=cwd_text,
        session_dir="",
        storage=MemoryStorage(),
        header=header,
        dialect=chosen,
        layout_locked=locked,
        runtime=runtime,
    )
    return compose(state, Persistence(state))


def holding(
    compose: Compose[M], header: Entry, entries: Sequence[Entry], cwd: StrPath | None, runtime: Runtime | None
) -> M:
    """An in-memory session holding ``header`` and ``entries`` as given (auto dialect, no slot)."""
    state = SessionState.build(
        cwd=os.fspath(cwd) if cwd is not None else os.getcwd(),
        session_dir="",
        storage=MemoryStorage(),
        header=header,
        entries=entries,
        runtime=runtime,
    )
    return compose(state, Persistence(state))


def fork_from(
    compose: Compose[M],
    source_path: StrPath,
    cwd: StrPath,
    session_dir: StrPath | None,
    *,
    dialect: DialectChoice,
    reset_inherited_cost: bool,
    repair_interrupted_tail: bool,
    runtime: Runtime | None,
    storage: SessionStorage | None,
) -> M:
    runtime = _runtime(runtime, storage)
    store = runtime.sessions()
    source = Path(source_path)
    blobs = runtime.blob_store()
    directory = session_dir_for(cwd, session_dir)
    chosen, locked = dialect_for_new(dialect, directory, runtime.store)
    # The copied history is sanitised by the new session's rules (omp's forkFrom).
    keep = chosen.keeps_openai_replay
    loaded = parse_session(source, store.read_session(source), blobs, lambda _has_slot: keep)
    timestamp = runtime.now()
    session_id = runtime.session_id(chosen.new_session_id)
    header = make.fork_from_header(
        chosen.headers.fork_from, session_id, timestamp, os.fspath(cwd), loaded.header
    )
    entries = fork_entries(loaded.entries, reset_inherited_cost, repair_interrupted_tail, runtime)
    path = session_file_path(directory, timestamp, session_id)
    state = SessionState.build(
        cwd=os.fspath(cwd),
        session_dir=os.fspath(directory),
        storage=store.new_storage(path, blobs, durability="os"),
        header=header,
        entries=entries,
        dialect=chosen,
        layout_locked=locked,
        runtime=runtime,
    )
    persistence = Persistence(state, ensured=True, has_slot=locked and chosen.title_slot)
    persistence.rewrite_all()
    return compose(state, persistence)


def persist_copy(
    compose: Compose[M],
    source: SessionState,
    session_dir: StrPath | None,
    *,
    storage: SessionStorage | None,
) -> M:
    """omp 18's ``persistCopy``: a new persistent session (new id and file) in ``session_dir``
    (default: the project directory of the source's cwd) holding a copy of every entry of
    ``source`` (same ids), its title state and workspace directories; written at once."""
    runtime = source.runtime.with_store(storage)
    dialect = source.dialect
    directory = session_dir_for(source.cwd, session_dir)
    header, path = new_header_and_path(runtime, source.cwd, directory, dialect=dialect)
    header = make.ordered(
        (*dialect.headers.new, "title", "titleSource", "additionalDirectories"),
        **{key: value for key, value in header.items() if key != "additionalDirectories"},
        title=source.session_name,
        titleSource=source.title_source,
        additionalDirectories=list(source.additional_directories) or None,
    )
    store = runtime.sessions()
    state = SessionState.build(
        cwd=source.cwd,
        session_dir=os.fspath(directory),
        storage=store.new_storage(path, runtime.blob_store(), durability="os"),
        header=header,
        entries=copy.deepcopy(list(source.index.entries)),
        dialect=dialect,
        layout_locked=True,
        runtime=runtime,
    )
    state.session_name, state.title_source = source.session_name, source.title_source
    state.title_updated_at = source.title_updated_at
    persistence = Persistence(state, ensured=True, has_slot=dialect.title_slot)
    persistence.rewrite_all()
    runtime.remember_terminal_session(source.cwd, os.fspath(path))
    return compose(state, persistence)
