"""Drive the Python SessionManager under an omp 18 dialect the way the reference harnesses drove
omp 18.2.3 (``tests/conformance_omp18/README.md``) and omp 18.3.4 (``tests/conformance_omp183/``,
which adds ``$HOME``, listing, picker, ``continueRecent`` and ``dropSession`` ops), producing RAW
results for their ``normalize.py``. Every op is a call of the public API; nothing is emulated.

Errors: the oracle records ``{"__error__": message, "__error_name__": name}``. Our errors are our
own (``SessionError`` subclasses naming file and line); :func:`oracle_error` words the few that a
case prints the way omp 18 words them, so the golden files can be compared as they are.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from typing_extensions import TypeIs

from omp_session import SessionManager, load_session_file
from omp_session.errors import CorruptSessionError, SessionNotFoundError, UnsupportedByDialectError
from omp_session.format.title_slot import TitleSlot, encode_slot, parsed_slot_dict
from omp_session.store import SessionStorage
from omp_session.store.file_sessions import FileSessionStorage, session_storage
from tests.conformance_harness import PROBE, blob_names, lines_raw, tree_flat, tree_return

NO_MANAGER = "no current SessionManager: start with create/open/continueRecent/inMemory/forkFrom"


# -- session files, or rows of a ``store`` (tests/postgres runs the corpus on PostgreSQL) -----------


def _rows_of(store: SessionStorage | None) -> TypeIs[SessionStorage]:
    """Whether ``store`` keeps sessions as rows of a database; else they are files (the default
    store, or a ``FileSessionStorage`` with a tuning of its own: the read strategies), which the
    harness reads and lists as files."""
    return store is not None and not isinstance(store, FileSessionStorage)


def _put(target: Path, data: bytes, store: Any) -> None:
    """Write a whole session at ``target``: a file, or the row of a database ``store``."""
    # (a pins file stays a file)
    if store is None or isinstance(store, FileSessionStorage) or not target.name.endswith(".jsonl"):
        target.write_bytes(data)
        return
    found = store.stat_session(target)
    store.write_session(target, data, expected_size=found.size if found is not None else None)


def _read(path: Path, store: SessionStorage | None) -> bytes:
    return session_storage(store).read_session(path)


def _exists(path: str | None, store: SessionStorage | None) -> bool:
    if path is None:
        return False
    return store.session_exists(Path(path)) if _rows_of(store) else os.path.exists(path)


def _lines(path: Path, store: SessionStorage | None) -> list[str]:
    return lines_raw(path, session_storage(store))


def _list_dir(directory: Path, store: SessionStorage | None) -> list[str]:
    if not _rows_of(store):
        return sorted(os.listdir(directory))
    names = [found.path.name for found in store.list_sessions(directory)]
    return sorted(names + [folder.name for folder in store.list_directories(directory)])


def _session_paths(directory: Path, store: SessionStorage | None) -> list[Path]:
    """``directory/*.jsonl`` and ``directory/*/*.jsonl``."""
    if not _rows_of(store):
        return [*directory.glob("*.jsonl"), *directory.glob("*/*.jsonl")]
    folders = [directory, *store.list_directories(directory)]
    return [found.path for folder in folders for found in store.list_sessions(folder)]


def oracle_error(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, CorruptSessionError):
        message = (
            f'Cannot resume session "{exc.path}": the session header is missing or malformed. '
            "The file was not modified."
        )
    elif isinstance(exc, SessionNotFoundError):
        message = f"ENOENT: no such file or directory, stat '{exc.path}'"
    elif isinstance(exc, UnsupportedByDialectError):
        message = str(exc).split(" in ")[0]
    else:
        message = str(exc)
    return {"__error__": message, "__error_name__": "Error"}


def snapshot(manager: SessionManager) -> dict[str, Any]:
    roots = manager.get_tree()
    return {
        "header": manager.get_header(),
        # A lazily opened session answers a sequence over its index; the corpus records the array.
        "entries": list(manager.get_entries()),
        "leafId": manager.get_leaf_id(),
        "context": manager.build_session_context().to_dict(),
        "tree_flat": tree_flat(roots),
        "tree_roots": [root.entry.get("id") for root in roots],
        "usage": manager.get_usage_statistics().to_dict(),
    }


def run_load_case(
    case_file: Path,
    work: Path,
    agent_dir: Path,
    dialect: str = "18.2",
    storage: SessionStorage | None = None,
) -> dict[str, Any]:
    """Run a load case on a file (or on a row of ``storage``: the factories are given it)."""
    directory = work / "load"
    directory.mkdir()
    target = directory / "input.jsonl"
    _put(target, case_file.read_bytes(), storage)
    before = _read(target, storage)
    os.chdir(directory)  # omp 18 gives a fresh header the process cwd
    raw: dict[str, Any] = {"dir": str(directory)}
    try:
        manager = SessionManager.open(target, dialect=dialect, storage=storage)
    except Exception as exc:
        raw["load_error"] = oracle_error(exc)
    else:
        raw.update(snapshot(manager))
        raw["sessionName"] = manager.get_session_name()
        raw["titleSource"] = manager.get_title_source()
        manager.close()
    raw["file_changed_by_load"] = _read(target, storage) != before
    if raw["file_changed_by_load"]:
        raw["file_after_load_raw"] = _lines(target, storage)

    shutil.rmtree(agent_dir / "blobs", ignore_errors=True)
    directory2 = work / "append"
    directory2.mkdir()
    target2 = directory2 / "input.jsonl"
    _put(target2, case_file.read_bytes(), storage)
    os.chdir(directory2)
    returns: list[Any]
    try:
        manager2 = SessionManager.open(target2, dialect=dialect, storage=storage)
    except Exception as exc:
        returns = [oracle_error(exc), {"__error__": NO_MANAGER, "__error_name__": "Error"}]
    else:
        returns = [str(target2), manager2.append_message(dict(PROBE))]
        manager2.close()
    raw["after_append"] = {
        "dir": str(directory2),
        "returns": returns,
        "file_lines_raw": _lines(target2, storage),
        "blobs": blob_names(agent_dir),
    }
    return raw


def _substitute(value: Any, directory: str, returns: list[Any], home: str = "$HOME") -> Any:
    if isinstance(value, str):
        if value.startswith("$") and value[1:].isdigit():
            return returns[int(value[1:])]
        return value.replace("$DIR", directory).replace("$HOME", home)
    if isinstance(value, list):
        return [_substitute(v, directory, returns, home) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, directory, returns, home) for k, v in value.items()}
    return value


def read_file(path: str | None, store: SessionStorage | None = None) -> list[Any] | None:
    if path is None or not _exists(path, store):
        return None
    out = []
    for line in _lines(Path(path), store):
        try:
            out.append(json.loads(line))
        except ValueError:
            out.append({"__unparseable_line__": line})
    return out


def read_title_slot(path: str | None, store: SessionStorage | None = None) -> dict[str, Any] | None:
    if path is None or not _exists(path, store):
        return None
    data = _read(Path(path), store)
    end = data.find(b"\n")
    if end < 0:
        return None
    slot = parsed_slot_dict(data[:end])
    if slot is None:
        return None
    return {**slot, "line_bytes": end + 1}


def _compaction(m: SessionManager, a: dict[str, Any]) -> str:
    return m.append_compaction(
        a["summary"],
        a.get("shortSummary"),
        a.get("firstKeptEntryId"),
        a["tokensBefore"],
        a.get("details"),
        a.get("fromExtension"),
        a.get("preserveData"),
        tokens_after=a.get("tokensAfter"),
        method=a.get("method"),
        provider_replay_through_entry_id=a.get("providerReplayThroughEntryId"),
    )


_SESSION_INIT_KEYS = {
    "agent": "agent",
    "modelRole": "model_role",
    "resolvedModel": "resolved_model",
    "readOnly": "read_only",
    "outputSchemaMode": "output_schema_mode",
    "restrictToolNames": "restrict_tool_names",
    "spawns": "spawns",
    "readSummarize": "read_summarize",
    "advisor": "advisor",
    "isolated": "isolated",
    "compactionThreshold": "compaction_threshold",
}


def _model_usage(m: SessionManager, a: dict[str, Any]) -> str | None:
    extra: dict[str, Any] = {}
    if "parentId" in a:
        extra["parent_id"] = a["parentId"]
    return m.append_model_usage(
        a["purpose"],
        a["api"],
        a["provider"],
        a["model"],
        a["usage"],
        a["stopReason"],
        role=a.get("role"),
        error_message=a.get("errorMessage"),
        session_id=a.get("sessionId"),
        **extra,
    )


def _add_workspace(m: SessionManager, a: dict[str, Any]) -> str | None:
    return m.add_workspace_directory(a["directory"])


_OPS: dict[str, Callable[[SessionManager, dict[str, Any]], Any]] = {
    "appendMessage": lambda m, a: m.append_message(a["message"]),
    "appendThinkingLevelChange": lambda m, a: m.append_thinking_level_change(
        a.get("level"), a.get("configured")
    ),
    "appendModelChange": lambda m, a: m.append_model_change(
        a["model"], a.get("role"), a.get("resolvedModelIsFallback", False)
    ),
    "appendServiceTierChange": lambda m, a: m.append_service_tier_change(a["serviceTier"]),
    "appendModeChange": lambda m, a: m.append_mode_change(a["mode"], a.get("data")),
    "appendSessionInit": lambda m, a: m.append_session_init(
        a["systemPrompt"],
        a["task"],
        a["tools"],
        a.get("outputSchema"),
        **{py: a[js] for js, py in _SESSION_INIT_KEYS.items() if js in a},
    ),
    "appendCompaction": _compaction,
    "appendCustomEntry": lambda m, a: m.append_custom_entry(a["customType"], a.get("data")),
    "appendCustomMessageEntry": lambda m, a: m.append_custom_message_entry(
        a["customType"], a["content"], a["display"], a.get("details"), a.get("attribution", "agent")
    ),
    "appendMCPToolSelection": lambda m, a: m.append_mcp_tool_selection(a["selectedToolNames"]),
    "appendTtsrInjection": lambda m, a: m.append_ttsr_injection(a["ruleNames"]),
    "appendLabelChange": lambda m, a: m.append_label_change(a["targetId"], a.get("label")),
    "appendResetBoundary": lambda m, a: m.append_reset_boundary(),
    "appendModelUsage": _model_usage,
    "appendCredentialPin": lambda m, a: m.append_credential_pin(a["provider"], a["hash"]),
    "getCredentialPins": lambda m, a: m.get_credential_pins(),
    "appendMessageToBranch": lambda m, a: m.append_message_to_branch(a["message"], a["parentId"]),
    "branchWithSummary": lambda m, a: m.branch_with_summary(
        a["entryId"], a["summary"], a.get("details"), a.get("fromExtension")
    ),
    "branch": lambda m, a: m.branch(a["entryId"]),
    "resetLeaf": lambda m, a: m.reset_leaf(),
    "createBranchedSession": lambda m, a: m.create_branched_session(a["leafId"]),
    "setSessionName": lambda m, a: m.set_session_name(a["name"], a.get("source", "auto"), a.get("trigger")),
    "getSessionName": lambda m, a: m.get_session_name(),
    "getTitleSource": lambda m, a: m.get_title_source(),
    "getTitleRevision": lambda m, a: m.get_title_revision(),
    "getLeafId": lambda m, a: m.get_leaf_id(),
    "getHeader": lambda m, a: m.get_header(),
    "getBranch": lambda m, a: [e.get("id") for e in m.get_branch(a.get("fromId"))],
    "getChildren": lambda m, a: [e.get("id") for e in m.get_children(a["parentId"])],
    "getLabel": lambda m, a: m.get_label(a["id"]),
    "getEntry": lambda m, a: m.get_entry(a["id"]),
    "getTree": lambda m, a: tree_return(m),
    "getUsageStatistics": lambda m, a: m.get_usage_statistics().to_dict(),
    "getLastModelChangeRole": lambda m, a: m.get_last_model_change_role(),
    "buildSessionContext": lambda m, a: m.build_session_context(
        transcript=bool((a.get("options") or {}).get("transcript")),
        collapse_compacted_history=bool((a.get("options") or {}).get("collapseCompactedHistory")),
        keep_dangling_tool_calls=bool((a.get("options") or {}).get("keepDanglingToolCalls")),
    ).to_dict(),
    "serializeTitleSlot": lambda m, a: encode_slot(
        TitleSlot(a.get("title") or "", a["updatedAt"], a.get("source"))
    ).decode("utf-8"),
    "discardEntryDurably": lambda m, a: m.discard_entry_durably(a["entryId"]),
    "addWorkspaceDirectory": _add_workspace,
    "removeWorkspaceDirectory": lambda m, a: m.remove_workspace_directory(a["directory"]),
    "setAdditionalDirectories": lambda m, a: [m.set_additional_directories(a["directories"]), None][1],
    "getAdditionalDirectories": lambda m, a: m.get_additional_directories(),
    "seal": lambda m, a: m.seal(),
    "ensureOnDisk": lambda m, a: m.ensure_on_disk(),
    "rewriteEntries": lambda m, a: m.rewrite_entries(),
    "flush": lambda m, a: m.flush(),
    "getRecordedCwd": lambda m, a: m.get_recorded_cwd(),
}


def _fork(m: SessionManager) -> dict[str, Any] | None:
    result = m.fork()
    return (
        None
        if result is None
        else {"oldSessionFile": result.old_session_file, "newSessionFile": result.new_session_file}
    )


def _batch(m: SessionManager, a: dict[str, Any]) -> list[Any]:
    def run() -> list[Any]:
        out = []
        for step in a["ops"]:
            name = {
                "appendCustomEntry": "append_custom_entry",
                "appendResetBoundary": "append_reset_boundary",
            }.get(step["op"], step["op"])
            method = getattr(m, name)
            out.append(method(*step.get("args", [])))
        return out

    result: list[Any] = m.append_entries_atomically(run)
    return result


def _files(directory: Path, home: Path, store: SessionStorage | None) -> list[dict[str, Any]]:
    """Session files of ``directory`` (and its sub-directories) and of the default session dirs
    below the agent dir ``home``."""
    homes = (
        [
            found.path
            for folder in store.list_directories(home / "sessions")
            for found in store.list_sessions(folder)
        ]
        if _rows_of(store)
        else list(home.glob("sessions/*/*.jsonl"))
    )
    paths = [*_session_paths(directory, store), *homes]
    return [{"path": str(p), "file_lines_raw": _lines(p, store)} for p in sorted(paths)]


def _manager_op(
    name: str, args: dict[str, Any], dialect: str, store: SessionStorage | None
) -> SessionManager:
    """The manager a ``create``/``open``/``continueRecent``/``inMemory``/``forkFrom`` op makes."""
    if name == "create":
        return SessionManager.create(args["cwd"], args.get("dir"), dialect=dialect, storage=store)
    if name == "open":
        return SessionManager.open(
            args["file"],
            args.get("dir"),
            dialect=dialect,
            throw_if_missing=bool(args.get("throwIfMissing")),
            storage=store,
        )
    if name == "continueRecent":
        return SessionManager.continue_recent(args["cwd"], args.get("dir"), dialect=dialect, storage=store)
    if name == "forkFrom":
        return SessionManager.fork_from(
            args["source"],
            args["cwd"],
            args.get("dir"),
            dialect=dialect,
            reset_inherited_cost=bool(args.get("resetInheritedCost")),
            repair_interrupted_tail=bool(args.get("repairInterruptedTail")),
            storage=store,
        )
    return SessionManager.in_memory(args.get("cwd"), dialect=dialect)


def _infos(found: list[Any]) -> list[dict[str, Any]]:
    return [info.to_dict() for info in found]


#: Ops that need no current manager: ``(args, dialect, store) -> result``.
_STATIC_OPS: dict[str, Callable[[dict[str, Any], str, SessionStorage | None], Any]] = {
    "list": lambda a, d, s: _infos(SessionManager.list(a["cwd"], a.get("dir"), dialect=d, storage=s)),
    "listAll": lambda a, d, s: _infos(SessionManager.list_all(dialect=d, storage=s)),
    "listForPicker": lambda a, d, s: _infos(
        SessionManager.list_for_picker(a["cwd"], a.get("dir"), dialect=d, storage=s)
    ),
    "listAllForPicker": lambda a, d, s: _infos(SessionManager.list_all_for_picker(dialect=d, storage=s)),
    "findMostRecentSession": lambda a, d, s: SessionManager.find_most_recent_session(a["dir"], storage=s),
    "peekSessionInit": lambda a, d, s: SessionManager.peek_session_init(a["file"], storage=s),
    "listDir": lambda a, d, s: _list_dir(Path(a["dir"]), s),
    "sleep": lambda a, d, s: time.sleep(a["ms"] / 1000),
    "loadSessionFile": lambda a, d, s: load_session_file(
        a["file"], throw_if_missing=bool(a.get("throwIfMissing")), storage=s
    ).to_dict(),
}


#: Raw keys that describe the current manager (``None`` when a script made none).
_MANAGER_KEYS = (
    "file",
    "file_exists",
    "header",
    "sessionId",
    "sessionName",
    "entries",
    "leafId",
    "context",
    "tree_flat",
    "tree_roots",
    "usage",
    "title_slot",
    "manager_state",
)


def run_ops_case(
    ops: list[dict[str, Any]],
    directory: Path,
    agent_dir: Path,
    dialect: str = "18.2",
    home: Path | None = None,
    storage: SessionStorage | None = None,
) -> dict[str, Any]:
    """Run an op script; ``home`` is the sandbox HOME that ``$HOME`` stands for (the agent dir
    is then ``home/.omp/agent``, which the caller has made the process's agent dir). The
    sessions are files, else rows of ``storage`` (every factory and listing is given it)."""
    returns: list[Any] = []
    current: SessionManager | None = None
    for op in ops:
        args = _substitute(op, str(directory), returns, str(home) if home is not None else "$HOME")
        name = args["op"]
        result: Any = None
        try:
            if name in ("create", "open", "continueRecent", "inMemory", "forkFrom"):
                previous = current
                # omp has no writer lock; ours would refuse a second manager on one file, so the
                # previous manager is closed first when the new one may open its file (no script
                # goes back to an earlier manager with ``use``)
                if previous is not None and (
                    name == "continueRecent"
                    or (name == "open" and previous.get_session_file() == os.path.abspath(args["file"]))
                ):
                    previous.close()
                    previous = current = None
                current = _manager_op(name, args, dialect, storage)
                result = current.get_session_file() if name != "inMemory" else None
                if previous is not None:
                    previous.close()
            elif name in _STATIC_OPS:
                result = _STATIC_OPS[name](args, dialect, storage)
            elif name == "writeFile":
                target = Path(args["file"])
                target.parent.mkdir(parents=True, exist_ok=True)
                _put(target, args["content"].encode("utf-8"), storage)
                result = args["file"]
            elif name == "readFile":
                result = read_file(
                    args.get("file") or (current.get_session_file() if current else None), storage
                )
            elif name == "readTitleSlot":
                result = read_title_slot(
                    args.get("file") or (current.get_session_file() if current else None), storage
                )
            elif current is None:
                result = {"__error__": NO_MANAGER, "__error_name__": "Error"}
            elif name == "fileExists":
                result = _exists(args.get("file") or current.get_session_file(), storage)
            elif name == "fork":
                result = _fork(current)
            elif name == "newSession":
                result = current.new_session(
                    args.get("parentSession"),
                    provider_prompt_cache_key=args.get("providerPromptCacheKey"),
                    session_dir=args.get("sessionDir"),
                )
            elif name == "dropSession":
                current.drop_session(args["file"])
            elif name == "getSessionDir":
                result = current.get_session_dir()
            elif name == "isSessionOnDisk":
                result = current.is_session_on_disk()
            elif name == "persistCopy":
                previous, current = current, current.persist_copy(session_dir=args.get("sessionDir"))
                previous.close()
                result = current.get_session_file()
            elif name == "moveTo":
                current.move_to(args["cwd"], args.get("dir"))
                result = current.get_session_file()
            elif name == "appendEntriesAtomically":
                result = _batch(current, args)
            elif name in _OPS:
                result = _OPS[name](current, args)
            else:
                result = {"__error__": f"no method {name}", "__error_name__": "Error"}
        except UnsupportedByDialectError:
            result = {"__error__": f"no method {name}", "__error_name__": "Error"}
        except Exception as exc:  # the reference harness records every throw the same way
            result = oracle_error(exc)
        returns.append(result)
    if current is None:  # a script of static ops only
        return {
            "dir": str(directory),
            "returns": returns,
            "files": _files(directory, agent_dir, storage),
            "blobs": blob_names(agent_dir),
            **{key: None for key in _MANAGER_KEYS},
            **({"home": str(home)} if home is not None else {}),
        }
    file = current.get_session_file()
    raw = {
        "dir": str(directory),
        "returns": returns,
        "file": file,
        "file_exists": _exists(file, storage),
        "files": _files(directory, agent_dir, storage),
        "sessionId": current.get_session_id(),
        "sessionName": current.get_session_name(),
        "blobs": blob_names(agent_dir),
        "title_slot": read_title_slot(file, storage),
        "manager_state": {
            "sessionName": current.get_session_name(),
            "titleSource": current.get_title_source(),
            "titleRevision": current.get_title_revision(),
            "additionalDirectories": current.get_additional_directories(),
            "recordedCwd": current.get_recorded_cwd(),
            "isSessionOnDisk": current.is_session_on_disk(),
        },
        **snapshot(current),
    }
    if home is not None:
        raw["home"] = str(home)
    current.close()
    return raw
