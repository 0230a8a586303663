"""The sessions under a root, as the index page lists them, and safe lookup of one session by URL.

A root is laid out as omp lays out its sessions directory: ``<root>/<encoded cwd>/<file>.jsonl``;
files directly in the root are listed too (``--dir`` may point at one project's directory). The
listing is the library's (:func:`omp_session.tools.listing.list_store`) with the store catalog's
database in the agent dir, shared with the command line (the viewer writes no session, only that
cache; one in this process's memory when the agent dir cannot be written).

Internal module (part of the viewer, whose API is :mod:`omp_session.web`); not part of the public API.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Generic, TypeVar

from omp_session.store import SessionStorage
from omp_session.store.file_sessions import stored_session_exists
from omp_session.store.paths import is_within, validate_name
from omp_session.tools.listing import SessionInfo, SessionList, StoreState, list_store, store_state
from omp_session.tools.listing_cache import ListingCache

__all__ = ["Freshest", "Listing", "SessionCatalog", "SessionSummary", "resolve_ref"]

_Value = TypeVar("_Value")

#: A session URL names at most ``<project>/<sub-dir>/<file>`` (sub-agent sessions live one level down).
_MAX_REF_PARTS = 3


@dataclass(frozen=True)
class SessionSummary:
    """One row of the index: a :class:`SessionInfo` and where it sits under the root."""

    ref: str
    project: str
    info: SessionInfo

    @property
    def path(self) -> Path:
        return Path(self.info.path)

    @property
    def id(self) -> str:
        return self.info.id

    @property
    def cwd(self) -> str:
        return self.info.cwd

    @property
    def title(self) -> str:
        """The session's title, else its first real prompt (a leading ``/mode`` is skipped)."""
        return self.info.title or self.info.first_prompt or self.info.first_message

    @property
    def first_message(self) -> str:
        return self.info.first_message

    @property
    def created(self) -> datetime | None:
        return self.info.created

    @property
    def modified(self) -> datetime:
        return self.info.modified

    @property
    def last_activity(self) -> datetime:
        return self.info.last_activity or self.info.modified

    @property
    def message_count(self) -> int:
        return self.info.message_count

    @property
    def size(self) -> int:
        return self.info.size

    @property
    def cost(self) -> float:
        return self.info.cost

    @property
    def parent_session(self) -> str | None:
        return self.info.parent_session_path


def resolve_ref(root: Path, ref: str, storage: SessionStorage | None = None) -> Path | None:
    """The session file (or row of ``storage``) a URL's ``ref`` names, or ``None`` if it could
    leave ``root``.

    Refused: empty parts, ``.``/``..``, backslashes, NUL, more than three parts, anything not ending in
    ``.jsonl``, and paths whose real location (symlinks followed) is outside ``root``.
    """
    parts = ref.split("/")
    if not 1 <= len(parts) <= _MAX_REF_PARTS or not parts[-1].endswith(".jsonl"):
        return None
    try:
        for part in parts:
            validate_name(part)
    except ValueError:
        return None
    candidate = root.joinpath(*parts)
    if not is_within(root, candidate) or not stored_session_exists(candidate, storage):
        return None
    return candidate


def _summary(root: Path, info: SessionInfo) -> SessionSummary:
    ref = Path(info.path).relative_to(root).as_posix()
    project = ref.rsplit("/", 1)[0] if "/" in ref else ""
    return SessionSummary(ref, project, info)


class Freshest(Generic[_Value]):
    """Runs ``compute`` for many threads at once, one run at a time: each caller gets the result of
    a run that started after it asked (never an older one), and the callers that ask while a run
    is under way share the next run instead of each making their own."""

    def __init__(self, compute: Callable[[], _Value]) -> None:
        self._compute = compute
        self._changed = threading.Condition()
        self._started = 0  # runs begun
        self._finished = 0  # the number of the last run that ended with a value
        self._running = False
        self._value: _Value | None = None

    def get(self) -> _Value:
        with self._changed:
            wanted = self._started + 1  # a run begun before now is not fresh enough
            while self._finished < wanted:
                if self._running:
                    self._changed.wait()
                    continue
                self._running = True
                self._started += 1
                number = self._started
                self._changed.release()
                try:
                    value = self._compute()
                except BaseException:
                    self._changed.acquire()
                    self._running = False
                    self._changed.notify_all()  # a waiter runs it again
                    raise
                self._changed.acquire()
                self._running = False
                self._value, self._finished = value, number
                self._changed.notify_all()
            return self._value  # type: ignore[return-value]  # set with _finished


@dataclass(frozen=True)
class Listing:
    """The sessions under the root at one state of the store: shared by every request made while
    the store stays in that state, so none of them may change ``summaries``."""

    summaries: list[SessionSummary]
    #: How many ``*.jsonl`` entries the scan could not read (shown on the index page).
    skipped: int
    #: Which listing this is: a new number whenever the store's state changed (a key for what is
    #: built from the listing, like a rendered index page).
    generation: int


class SessionCatalog:
    """Summaries of every session under ``root`` (thread-safe; writes only the catalog database).

    The listing is kept while the store's state (every file's size, mtime, ctime and inode: one
    ``stat`` each) stays the same, so concurrent index pages share one listing instead of each
    decoding 1,000 cached summaries under the lock (issue 25's load test: 19 s per index page)."""

    def __init__(self, root: Path, storage: SessionStorage | None = None) -> None:
        self.root = root
        #: Where the sessions live (``None``: files under the root).
        self.storage = storage
        self._cache = ListingCache.shared_or_in_memory()
        self._lock = threading.Lock()
        self._state: StoreState | None = None
        self._listing: Listing | None = None
        self._generation = 0
        # The requests asking at once share one scan of the store (one stat per file, tens of
        # milliseconds on a loaded machine); each still sees a scan begun after it asked.
        self._scan = Freshest(lambda: store_state(self.root, self.storage))

    @property
    def skipped(self) -> int:
        """How many ``*.jsonl`` entries the last scan could not read."""
        listing = self._listing
        return listing.skipped if listing is not None else 0

    def sessions(self) -> list[SessionSummary]:
        """Every valid session under the root, most recent activity first (a shared list)."""
        return self.listing().summaries

    def listing(self) -> Listing:
        """The sessions as the store is now: the kept listing when nothing changed since it was
        made, else a new one (made once, however many requests ask meanwhile)."""
        state = self._scan.get()  # outside the lock: stats only
        with self._lock:
            kept = self._listing
            if kept is not None and state is not None and state == self._state:
                return kept
            infos = list_store(self.root, cache=self._cache, storage=self.storage)
            self._generation += 1
            listing = Listing(
                [_summary(self.root, info) for info in infos],
                len(infos.skipped) if isinstance(infos, SessionList) else 0,
                self._generation,
            )
            # The state seen before the listing: a change in between makes the next request
            # list again (never the other way round).
            self._state, self._listing = state, listing
        return listing

    def locate(self, ref: str) -> Path | None:
        """The file of ``ref`` if it is a session inside the root (see :func:`resolve_ref`)."""
        return resolve_ref(self.root, ref, self.storage)

    def ref_of(self, path: str | os.PathLike[str]) -> str | None:
        """The URL ref of a path inside the root, else ``None``."""
        candidate = Path(path)
        if not candidate.is_absolute() or not is_within(self.root, candidate):
            return None
        try:
            ref = Path(os.path.realpath(candidate)).relative_to(os.path.realpath(self.root)).as_posix()
        except ValueError:
            return None
        return ref if resolve_ref(self.root, ref, self.storage) is not None else None

    def parent_ref(self, parent_session: str) -> str | None:
        """The ref of a header's ``parentSession``: a file path (branched sessions; also found by its
        ``<project>/<file>`` when the tree was copied from another machine) or a session id (forks)."""
        if "/" in parent_session:
            found = self.ref_of(parent_session)
            if found is None:
                tail = "/".join(Path(parent_session).parts[-2:])
                found = tail if resolve_ref(self.root, tail, self.storage) is not None else None
            return found
        return next((s.ref for s in self.sessions() if s.id == parent_session), None)
