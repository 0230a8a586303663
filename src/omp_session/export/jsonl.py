"""One branch of a session as a new, valid session file (what omp's ``createBranchedSession`` writes).

The new file has a fresh session id, ``parentSession`` = the source path, and the entries of the
root→leaf path with their ids, parents and timestamps unchanged, except that label entries are
dropped and the labels of the kept entries are re-created at the end (spec §6.5). Unlike omp, the
path stays connected where a label entry was dropped, the title is kept, and the file is written
atomically. The source file is only read.

Image blob references (``blob:sha256:…``) are copied as they are: the new file uses the same blob
store as the source.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from omp_session.errors import EntryNotFoundError, SessionError
from omp_session.export.files import write_atomically
from omp_session.format import entry_factory as make
from omp_session.format.codec import encode_line
from omp_session.format.ids import new_entry_id, new_session_id, now_iso
from omp_session.manager import SessionManager
from omp_session.store import SessionStorage
from omp_session.store.paths import session_file_path
from omp_session.tools.reading import read_session, resolve_entry

Entry = dict[str, Any]

__all__ = ["branch_entries", "export_jsonl"]


def branch_entries(session: SessionManager, leaf_id: str) -> list[Entry]:
    """The path to ``leaf_id`` without label entries, followed by fresh entries for its labels."""
    path = session.get_branch(leaf_id)
    if not path:
        raise EntryNotFoundError(leaf_id)
    kept = make.reparent_without_labels(path)
    used = {str(entry.get("id")) for entry in kept}
    on_path = set(used)
    previous = kept[-1].get("id") if kept else None
    for target, label in session.get_labels().items():
        if target in on_path:
            label_id = new_entry_id(used)
            used.add(label_id)
            kept.append(make.typed(label_id, previous, now_iso(), "label", targetId=target, label=label))
            previous = label_id
    return kept


def export_jsonl(
    path: Path | str,
    output: Path | str | None = None,
    leaf_id: str | None = None,
    *,
    stands_for: Path | None = None,
    parent_session: str | None = None,
    storage: SessionStorage | None = None,
) -> Path:
    """Write the current branch (or the branch to ``leaf_id``) of ``path`` (a file, else a row
    of ``storage``) as a new session file.

    Without ``output`` the file goes next to the source with omp's name
    (``<timestamp>_<id>.jsonl``), so omp lists it with the project's sessions. An existing
    ``output`` is never overwritten. Returns the new file's path. ``stands_for`` names the session
    that ``path`` is a copy of (a redacted copy: the new file goes beside that one) and
    ``parent_session`` the ``parentSession`` to record (default: the absolute source path).
    """
    source = Path(path)
    with read_session(source, storage=storage) as session:
        leaf = resolve_entry(session, leaf_id) if leaf_id is not None else session.get_leaf_id()
        if leaf is None:
            raise SessionError(f"{source}: the session has no entries to export")
        entries = branch_entries(session, leaf)
        source_header = session.get_header()
    session_id, timestamp = new_session_id(), now_iso()
    cwd = source_header.get("cwd")
    parent = parent_session if parent_session is not None else os.path.abspath(stands_for or source)
    header = make.header(session_id, timestamp, cwd if isinstance(cwd, str) else "", parent)
    if isinstance(source_header.get("title"), str):
        header["title"] = source_header["title"]
    beside = (stands_for or source).parent
    target = Path(output) if output is not None else session_file_path(beside, timestamp, session_id)
    data = b"".join(encode_line(record) for record in [header, *entries])
    return write_atomically(target, data, overwrite=False)
