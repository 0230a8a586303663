"""The indexed file path: private to the file backend (docs/architecture.md).

The offset index of a session file (``offsets``, ``builder``, ``trust``, ``extension``,
``stored_ids``, ``markers``), the lazy reads it serves (``lazy_store``, ``lines``, ``entry_cache``,
``lazy_index`` with its views), the open paths that use it (``fast_open``, with ``skim_open``),
each by the name of its read strategy (``strategies``: entered from ``file_sessions.open_file``),
and the table of where each entry's line is with the rewrite that copies unchanged lines from it
(``line_table``, ``rewrite``: ``FileStorage``'s ``write_entries``).

Nothing outside the file backend (``store/file.py``, ``store/file_sessions.py``) imports this
package: the manager and the tools see the ``Storage`` and ``EntryIndex`` protocols only, and an
import-linter contract keeps it so (``pyproject.toml``).
"""

__all__: list[str] = []
