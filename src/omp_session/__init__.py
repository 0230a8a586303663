"""omp-session: a byte-compatible, crash-safe Python session store for oh-my-pi sessions.

>>> from omp_session import SessionManager
>>> session = SessionManager.in_memory("/work/project")
>>> first = session.append_message({"role": "user", "content": "hello", "timestamp": 0})
>>> [m["content"] for m in session.build_session_context().messages]
['hello']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from omp_session.dialects import OMP_13_19, OMP_18_2, OMP_18_3, Dialect
from omp_session.errors import (
    AmbiguousEntryError,
    AmbiguousSessionError,
    CorruptSessionError,
    EntryNotFoundError,
    ForeignSessionError,
    NoMatchingSessionError,
    NoRowsUnderRootError,
    NotASessionError,
    PersistenceError,
    ReadOnlySessionError,
    ReadStrategyError,
    SecretsConfigError,
    SessionChangedError,
    SessionError,
    SessionLockedError,
    SessionNotFoundError,
    StoreReadError,
    TargetExistsError,
    UnknownDialectError,
    UnsafeNameError,
    UnstableEntryIdError,
    UnsupportedByDialectError,
    UnsupportedConversion,
    UnsupportedToolSchema,
    UnwritableValueError,
    WorkspaceError,
)
from omp_session.manager.runtime import Runtime
from omp_session.manager.session_manager import ForkResult, SessionManager
from omp_session.model.context import SessionContext
from omp_session.model.llm import convert_to_llm
from omp_session.model.tree import SessionTreeNode, build_session_context
from omp_session.model.usage import UsageStatistics
from omp_session.store.loading import SessionLoadResult, load_session_file
from omp_session.store.tuning import ReadStrategy, Tuning
from omp_session.tools.listing import SessionInfo

__version__ = "0.1.0"

if TYPE_CHECKING:
    from omp_session.store.postgres import PostgresStorage


def __getattr__(name: str) -> Any:
    # PostgresStorage needs the optional psycopg: imported only when asked for.
    if name == "PostgresStorage":
        from omp_session.store.postgres import PostgresStorage

        return PostgresStorage
    raise AttributeError(f"module 'omp_session' has no attribute {name!r}")


__all__ = [
    "OMP_13_19",
    "OMP_18_2",
    "OMP_18_3",
    "AmbiguousEntryError",
    "AmbiguousSessionError",
    "CorruptSessionError",
    "Dialect",
    "EntryNotFoundError",
    "ForeignSessionError",
    "ForkResult",
    "NoMatchingSessionError",
    "NoRowsUnderRootError",
    "NotASessionError",
    "PersistenceError",
    "PostgresStorage",
    "ReadOnlySessionError",
    "ReadStrategy",
    "ReadStrategyError",
    "Runtime",
    "SecretsConfigError",
    "SessionChangedError",
    "SessionContext",
    "SessionError",
    "SessionInfo",
    "SessionLoadResult",
    "SessionLockedError",
    "SessionManager",
    "SessionNotFoundError",
    "SessionTreeNode",
    "StoreReadError",
    "TargetExistsError",
    "Tuning",
    "UnknownDialectError",
    "UnsafeNameError",
    "UnstableEntryIdError",
    "UnsupportedByDialectError",
    "UnsupportedConversion",
    "UnsupportedToolSchema",
    "UnwritableValueError",
    "UsageStatistics",
    "WorkspaceError",
    "__version__",
    "build_session_context",
    "convert_to_llm",
    "load_session_file",
]
