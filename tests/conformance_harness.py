"""Drive the Python SessionManager the way the reference harness drove omp 13.19.0.

Produces RAW results in the shape that ``tests/conformance/normalize.py`` expects (see the corpus
README); the tests compare the normalised result with the golden ``*.expected.json`` files.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from omp_session import SessionManager
from omp_session.model.tree import SessionTreeNode
from omp_session.store import SessionStorage
from omp_session.store.file_sessions import FileSessionStorage

PROBE = {"role": "user", "content": "probe", "timestamp": 1700000000000}


def lines_raw(path: Path, storage: SessionStorage | None = None) -> list[str]:
    data = (storage or FileSessionStorage()).read_session(path)
    parts = data.decode("utf-8", errors="surrogateescape").split("\n")
    if parts and parts[-1] == "":
        parts.pop()
    return parts


def blob_names(agent_dir: Path) -> list[str]:
    blobs = agent_dir / "blobs"
    return sorted(p.name for p in blobs.iterdir()) if blobs.is_dir() else []


def tree_flat(roots: list[SessionTreeNode]) -> list[dict[str, Any]]:
    out = []
    for root in roots:
        for node, depth in root.walk():
            out.append(
                {
                    "id": node.entry.get("id"),
                    "parentId": node.entry.get("parentId"),
                    "type": node.entry.get("type"),
                    "label": node.label,
                    "children": [child.entry.get("id") for child in node.children],
                    "depth": depth + 1,
                }
            )
    return out


def tree_nested(node: SessionTreeNode, depth: int = 1) -> dict[str, Any] | None:
    if depth > 200:
        return None
    return {
        "id": node.entry.get("id"),
        "type": node.entry.get("type"),
        "label": node.label,
        "children": [tree_nested(child, depth + 1) for child in node.children],
    }


def tree_return(manager: SessionManager) -> dict[str, Any]:
    roots = manager.get_tree()
    flat = tree_flat(roots)
    return {
        "tree_depth": max((n["depth"] for n in flat), default=0),
        "tree": [tree_nested(root) for root in roots],
        "tree_roots": [root.entry.get("id") for root in roots],
        "tree_flat": flat,
    }


def snapshot(manager: SessionManager) -> dict[str, Any]:
    return {
        "header": manager.get_header(),
        # A lazily opened session answers a sequence over its index; the corpus records the array.
        "entries": list(manager.get_entries()),
        "leafId": manager.get_leaf_id(),
        "context": manager.build_session_context().to_dict(),
        "tree_flat": tree_flat(manager.get_tree()),
        "tree_roots": [root.entry.get("id") for root in manager.get_tree()],
        "usage": manager.get_usage_statistics().to_dict(),
    }


def put(storage: SessionStorage | None, source: Path, target: Path) -> None:
    """Copy the case file to ``target``: a file, or a new row of a database store."""
    write_session = getattr(storage, "write_session", None)
    if write_session is None:
        shutil.copyfile(source, target)
    else:
        write_session(target, source.read_bytes(), expected_size=None)


def run_load_case(
    case_file: Path, work: Path, agent_dir: Path, storage: SessionStorage | None = None
) -> dict[str, Any]:
    """The load protocol of the corpus README; with ``storage`` the session is a row of that store."""
    store = storage or FileSessionStorage()
    directory = work / "load"
    directory.mkdir()
    target = directory / "input.jsonl"
    put(storage, case_file, target)
    before = store.read_session(target)
    manager = SessionManager.open(target, storage=storage)
    raw = {"dir": str(directory), **snapshot(manager)}
    manager.close()
    raw["file_changed_by_load"] = store.read_session(target) != before

    shutil.rmtree(agent_dir / "blobs", ignore_errors=True)
    directory2 = work / "append"
    directory2.mkdir()
    target2 = directory2 / "input.jsonl"
    put(storage, case_file, target2)
    manager2 = SessionManager.open(target2, storage=storage)
    entry_id = manager2.append_message(dict(PROBE))
    manager2.close()
    raw["after_append"] = {
        "dir": str(directory2),
        "returns": [str(target2), entry_id],
        "file_lines_raw": lines_raw(target2, storage),
        "blobs": blob_names(agent_dir),
    }
    return raw


def _substitute(value: Any, directory: str, returns: list[Any]) -> Any:
    if isinstance(value, str):
        if value.startswith("$") and value[1:].isdigit():
            return returns[int(value[1:])]
        return value.replace("$DIR", directory)
    if isinstance(value, list):
        return [_substitute(v, directory, returns) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, directory, returns) for k, v in value.items()}
    return value


_APPENDS: dict[str, Callable[[SessionManager, dict[str, Any]], object]] = {
    "appendMessage": lambda m, a: m.append_message(a["message"]),
    "appendThinkingLevelChange": lambda m, a: m.append_thinking_level_change(a.get("level")),
    "appendModelChange": lambda m, a: m.append_model_change(a["model"], a.get("role")),
    "appendServiceTierChange": lambda m, a: m.append_service_tier_change(a["serviceTier"]),
    "appendModeChange": lambda m, a: m.append_mode_change(a["mode"], a.get("data")),
    "appendSessionInit": lambda m, a: m.append_session_init(
        a["systemPrompt"], a["task"], a["tools"], a.get("outputSchema")
    ),
    "appendCompaction": lambda m, a: m.append_compaction(
        a["summary"],
        a.get("shortSummary"),
        a.get("firstKeptEntryId"),
        a["tokensBefore"],
        a.get("details"),
        a.get("fromExtension"),
        a.get("preserveData"),
    ),
    "appendCustomEntry": lambda m, a: m.append_custom_entry(a["customType"], a.get("data")),
    "appendCustomMessageEntry": lambda m, a: m.append_custom_message_entry(
        a["customType"], a["content"], a["display"], a.get("details"), a.get("attribution", "agent")
    ),
    "appendMCPToolSelection": lambda m, a: m.append_mcp_tool_selection(a["selectedToolNames"]),
    "appendTtsrInjection": lambda m, a: m.append_ttsr_injection(a["ruleNames"]),
    "appendLabelChange": lambda m, a: m.append_label_change(a["targetId"], a.get("label")),
    "branchWithSummary": lambda m, a: m.branch_with_summary(
        a["entryId"], a["summary"], a.get("details"), a.get("fromExtension")
    ),
    "branch": lambda m, a: m.branch(a["entryId"]),
    "resetLeaf": lambda m, a: m.reset_leaf(),
    "createBranchedSession": lambda m, a: m.create_branched_session(a["leafId"]),
    # omp 13.19's setSessionName returns nothing
    "setSessionName": lambda m, a: [m.set_session_name(a["name"]), None][1],
    "getLeafId": lambda m, a: m.get_leaf_id(),
    "getBranch": lambda m, a: [e.get("id") for e in m.get_branch(a.get("fromId"))],
    "getChildren": lambda m, a: [e.get("id") for e in m.get_children(a["parentId"])],
    "getLabel": lambda m, a: m.get_label(a["id"]),
    "getEntry": lambda m, a: m.get_entry(a["id"]),
    "getTree": lambda m, a: tree_return(m),
    "buildSessionContext": lambda m, a: m.build_session_context().to_dict(),
}


def run_ops_case(
    ops: list[dict[str, Any]], directory: Path, agent_dir: Path, storage: SessionStorage | None = None
) -> dict[str, Any]:
    """The ops protocol of the corpus README; with ``storage`` every session is a row of that store."""
    store = storage or FileSessionStorage()

    def file_exists(manager: SessionManager) -> bool:
        file = manager.get_session_file()
        return file is not None and store.session_exists(Path(file))

    returns: list[Any] = []
    current: SessionManager | None = None
    for op in ops:
        args = _substitute(op, str(directory), returns)
        name = args["op"]
        try:
            if name in ("create", "open", "inMemory"):
                if current is not None:
                    current.close()
                if name == "create":
                    current = SessionManager.create(args["cwd"], args.get("dir"), storage=storage)
                    result: Any = current.get_session_file()
                elif name == "open":
                    current = SessionManager.open(args["file"], args.get("dir"), storage=storage)
                    result = current.get_session_file()
                else:
                    current = SessionManager.in_memory(args.get("cwd"))
                    result = None
            elif name == "list":
                listed = SessionManager.list(args["cwd"], args.get("dir"), storage=storage)
                result = [info.to_dict() for info in listed]
            elif name == "fileExists":
                assert current is not None
                result = file_exists(current)
            else:
                assert current is not None
                result = _APPENDS[name](current, args)
        except Exception as exc:  # the reference harness records every throw the same way
            result = {"__error__": str(exc), "__error_name__": "Error"}
        returns.append(result)
    assert current is not None
    current.flush()
    file = current.get_session_file()
    stored = sorted(found.path for found in store.list_sessions(directory))
    files = [{"path": str(p), "file_lines_raw": lines_raw(p, storage)} for p in stored]
    raw = {
        "dir": str(directory),
        "returns": returns,
        "file": file,
        "file_exists": file_exists(current),
        "files": files,
        "sessionId": current.get_session_id(),
        "sessionName": current.get_session_name(),
        "blobs": blob_names(agent_dir),
        **snapshot(current),
    }
    current.close()
    return raw
