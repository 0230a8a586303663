"""One session entry → an :class:`EntryView`: heading, badges, blocks, usage (a tree row's text is
the display model's, :func:`omp_session.rendering.windowed_tree.row_text`).

Every entry type of spec §3 and every message role of spec §4 has a readable form; unknown types and
roles are shown as JSON rather than dropped, so the viewer never hides what is in the file.

Internal module (part of the viewer, whose API is :mod:`omp_session.web`); not part of the public API.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from omp_session.model.context import entry_to_message
from omp_session.model.usage import UsageStatistics
from omp_session.rendering import blocks as b
from omp_session.rendering.format import clock_time, one_line, usage_line
from omp_session.rendering.images import ImageSource
from omp_session.rendering.markdown import highlight_code, lexer_for_path
from omp_session.tools.entry_kinds import Classified, EntryKind, classify, model_of_change, state_value

__all__ = ["EntryView", "ToolCalls", "entry_view"]

Entry = dict[str, Any]


class ToolCalls(dict[str, dict[str, Any]]):
    """Tool calls seen so far by call id (calls come before their results in file order), and the
    ``details`` of every tool result by call id when the caller knows them in advance: an edit's
    call is drawn with the diff (and the file's line numbers) its result reports."""

    def __init__(self, results: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self.results: Mapping[str, Any] = results or {}

    def remember(self, content: Any) -> list[str]:
        """Note the tool calls of an assistant's ``content`` by id; their names, in order."""
        names = []
        for item in content if isinstance(content, list) else []:
            if isinstance(item, dict) and item.get("type") == "toolCall":
                names.append(str(item.get("name")))
                if isinstance(item.get("id"), str):
                    self[item["id"]] = item
        return names


Builder = Callable[[str, Entry, ImageSource, ToolCalls], "EntryView"]


@dataclass
class EntryView:
    """What the templates need to draw one entry in the transcript."""

    key: str
    type: str
    kind: str
    heading: str
    timestamp: str = ""
    iso: str = ""
    badges: list[str] = field(default_factory=list)
    blocks: list[b.Block] = field(default_factory=list)
    usage: UsageStatistics | None = None
    usage_text: str = ""
    error: str = ""
    refs: list[tuple[str, str]] = field(default_factory=list)
    in_context: bool = False
    meta: bool = False


def entry_view(
    key: str, entry: Entry, images: ImageSource, calls: ToolCalls, found: Classified | None = None
) -> EntryView:
    """The view of ``entry`` (``key`` is its DOM key: the entry id, or a synthetic ``~n``).

    What the entry is comes from the one classifier of the display model
    (:func:`omp_session.tools.entry_kinds.classify`), shared with ``show``, ``tree`` and Markdown;
    ``found`` is its answer for ``entry`` when the caller has it already (a big session's export
    classifies each entry once for all its passes).
    """
    entry_type = entry.get("type")
    entry_type = entry_type if isinstance(entry_type, str) else "unknown"
    if found is None:
        found = classify(entry)
    builder = (_MESSAGE_BUILDERS if found.is_message else _BUILDERS).get(found.kind)
    if builder is not None:
        view = builder(key, cast(Entry, found.fields), images, calls)
    elif found.is_message:
        view = _unknown_role(key, cast(Entry, found.fields))
    else:
        view = _unknown(key, entry, entry_type)
    view.type = entry_type
    iso = entry.get("timestamp")
    view.iso = iso if isinstance(iso, str) else ""
    view.timestamp = clock_time(view.iso)
    view.in_context = entry_to_message(entry) is not None
    return view


# -- message entries ---------------------------------------------------------------------------


def _unknown_role(key: str, message: Entry) -> EntryView:
    role = message.get("role")
    view = EntryView(key, "message", "unknown", f"Message · role {role!r}")
    view.blocks = [b.json_block(message, "message")]
    return view


def _user(key: str, message: Entry, images: ImageSource, _calls: ToolCalls) -> EntryView:
    role = str(message.get("role"))
    heading = {"user": "User", "developer": "Developer"}.get(role, role)
    blocks = b.content_blocks(message.get("content"), images)
    view = EntryView(key, "message", "user", heading)
    view.blocks = blocks
    if message.get("synthetic"):
        view.badges.append("synthetic")
    if message.get("attribution") == "agent":
        view.badges.append("by agent")
    return view


def _assistant(key: str, message: Entry, images: ImageSource, calls: ToolCalls) -> EntryView:
    content = message.get("content")
    calls.remember(content)  # for the results that follow: a result is drawn with its call
    view = EntryView(key, "message", "assistant", "Assistant")
    view.blocks = b.assistant_blocks(content, images, calls.results)
    model = message.get("model")
    if isinstance(model, str):
        view.badges.append(model)
    stop = message.get("stopReason")
    if isinstance(stop, str) and stop not in ("stop", "toolUse"):
        view.badges.append(stop)
    error = message.get("errorMessage")
    view.error = error if isinstance(error, str) else ""
    _set_usage(view, message.get("usage"))
    return view


def _tool_result(key: str, message: Entry, images: ImageSource, calls: ToolCalls) -> EntryView:
    name = message.get("toolName")
    name = name if isinstance(name, str) else "tool"
    call_id = message.get("toolCallId")
    call = calls.get(call_id) if isinstance(call_id, str) else None
    failed = bool(message.get("isError"))
    hint = b.summarize_args(call.get("arguments"), 70) if call else ""
    view = EntryView(key, "message", "tool", f"Result · {name}")
    view.blocks = b.result_blocks(message.get("content"), images, b.language_for_call(call))
    if hint:
        view.badges.append(hint)
    if failed:
        view.badges.append("error")
    if message.get("prunedAt") is not None:
        view.badges.append("pruned")
    details = message.get("details")
    if details is not None:
        view.blocks.append(b.json_block(details, "details"))
        if name == "task" and isinstance(details, dict):
            _set_usage(view, details.get("usage"))
    return view


def _execution(key: str, message: Entry, _images: ImageSource, _calls: ToolCalls) -> EntryView:
    python = message.get("role") == "pythonExecution"
    source = message.get("code" if python else "command")
    source = source if isinstance(source, str) else ""
    title = "Python" if python else "Bash"
    view = EntryView(key, "message", "exec", title)
    view.blocks.append(b.Block("code", highlight_code(source, "python" if python else "bash")))
    output = message.get("output")
    view.blocks.append(b.output_block(output if isinstance(output, str) else ""))
    exit_code = message.get("exitCode")
    if message.get("cancelled"):
        view.badges.append("cancelled")
    elif isinstance(exit_code, int) and exit_code != 0:
        view.badges.append(f"exit {exit_code}")
    if message.get("truncated"):
        view.badges.append("truncated")
    if message.get("excludeFromContext"):
        view.badges.append("not sent to the model")
    return view


def _custom_role(key: str, message: Entry, images: ImageSource, _calls: ToolCalls) -> EntryView:
    custom_type = message.get("customType")
    view = EntryView(key, "message", "custom", f"Custom · {custom_type}")
    view.blocks = b.content_blocks(message.get("content"), images)
    if message.get("display") is False:
        view.badges.append("hidden in omp")
    if message.get("details") is not None:
        view.blocks.append(b.json_block(message["details"], "details"))
    return view


def _file_mention(key: str, message: Entry, images: ImageSource, _calls: ToolCalls) -> EntryView:
    raw_files = message.get("files")
    files: list[Any] = raw_files if isinstance(raw_files, list) else []
    view = EntryView(key, "message", "user", "File mention")
    for item in files:
        if not isinstance(item, dict):
            continue
        path = str(item.get("path"))
        content = item.get("content")
        block = b.output_block(
            content if isinstance(content, str) else "", title=path, language=lexer_for_path(path)
        )
        block.collapsed = True
        view.blocks.append(block)
        if isinstance(item.get("image"), dict):
            view.blocks.append(b.image_block(item["image"], images))
    return view


def _summary_role(key: str, message: Entry, _images: ImageSource, _calls: ToolCalls) -> EntryView:
    view = EntryView(key, "message", "summary", str(message.get("role")))
    view.blocks = [b.markdown_block(str(message.get("summary", "")))]
    return view


_MESSAGE_BUILDERS: dict[EntryKind, Builder] = {
    EntryKind.USER: _user,
    EntryKind.DEVELOPER: _user,
    EntryKind.ASSISTANT: _assistant,
    EntryKind.TOOL_RESULT: _tool_result,
    EntryKind.BASH: _execution,
    EntryKind.PYTHON: _execution,
    EntryKind.CUSTOM_MESSAGE: _custom_role,
    EntryKind.FILE_MENTION: _file_mention,
    EntryKind.BRANCH_SUMMARY: _summary_role,
    EntryKind.COMPACTION: _summary_role,
}


# -- other entry types ---------------------------------------------------------------------------


def _compaction(key: str, entry: Entry, _images: ImageSource, _calls: ToolCalls) -> EntryView:
    short = entry.get("shortSummary")
    kind = EntryKind.COMPACTION.value
    view = EntryView(key, kind, kind, "Compaction")
    tokens = entry.get("tokensBefore")
    if isinstance(tokens, int | float):
        view.badges.append(f"{int(tokens):,} tokens before")
    if isinstance(short, str) and short:
        view.badges.append(short)
    kept = entry.get("firstKeptEntryId")
    if isinstance(kept, str):
        view.refs.append(("kept from", kept))
    if entry.get("fromExtension"):
        view.badges.append("from extension")
    view.blocks = [b.markdown_block(str(entry.get("summary") or ""))]
    if entry.get("details") is not None:
        view.blocks.append(b.json_block(entry["details"], "details"))
    return view


def _branch_summary(key: str, entry: Entry, _images: ImageSource, _calls: ToolCalls) -> EntryView:
    summary = str(entry.get("summary") or "")
    view = EntryView(key, EntryKind.BRANCH_SUMMARY.value, "summary", "Branch summary")
    from_id = entry.get("fromId")
    if isinstance(from_id, str) and from_id != "root":
        view.refs.append(("returned to", from_id))
    view.blocks = [b.markdown_block(summary)] if summary else [b.Block("note", title="(empty summary)")]
    if entry.get("details") is not None:
        view.blocks.append(b.json_block(entry["details"], "details"))
    return view


def _custom_message(key: str, entry: Entry, images: ImageSource, calls: ToolCalls) -> EntryView:
    return _custom_role(key, entry, images, calls)


def _label(key: str, entry: Entry, _images: ImageSource, _calls: ToolCalls) -> EntryView:
    label = entry.get("label")
    text = f"label “{label}”" if isinstance(label, str) and label else "label cleared"
    view = _meta(key, "Label", text)
    target = entry.get("targetId")
    if isinstance(target, str):
        view.refs.append(("on", target))
    return view


def _meta(key: str, heading: str, text: str) -> EntryView:
    view = EntryView(key, "", "meta", heading, meta=True)
    view.blocks = [b.Block("note", title=text)]
    return view


def _simple(kind: EntryKind, heading: str, fmt: str = "{}") -> Builder:
    def build(key: str, entry: Entry, _images: ImageSource, _calls: ToolCalls) -> EntryView:
        return _meta(key, heading, fmt.format(state_value(kind, entry) or "none"))

    return build


def _model_change(key: str, entry: Entry, _images: ImageSource, _calls: ToolCalls) -> EntryView:
    role = entry.get("role")
    suffix = f" (role {role})" if isinstance(role, str) else ""
    # model_of_change reads both omp's {model} and v1/pi's {provider, modelId} (issue 9, 13 #7).
    return _meta(key, "Model", f"model → {model_of_change(entry) or 'none'}{suffix}")


def _session_init(key: str, entry: Entry, _images: ImageSource, _calls: ToolCalls) -> EntryView:
    view = EntryView(key, "session_init", "custom", "Sub-agent start")
    view.blocks = [b.markdown_block(str(entry.get("task") or ""))]
    prompt = b.output_block(str(entry.get("systemPrompt") or ""), title="system prompt")
    prompt.collapsed = True
    view.blocks.append(prompt)
    tools = entry.get("tools")
    view.badges.append("tools: " + ", ".join(str(t) for t in (tools if isinstance(tools, list) else [])))
    return view


def _custom_entry(key: str, entry: Entry, _images: ImageSource, _calls: ToolCalls) -> EntryView:
    view = _meta(key, "Custom", f"custom · {entry.get('customType')}")
    if "data" in entry:
        view.blocks.append(b.json_block(entry["data"], "data"))
    return view


def _unknown(key: str, entry: Entry, kind: str) -> EntryView:
    view = EntryView(key, kind, "unknown", f"Entry · {kind}", meta=True)
    view.blocks = [b.json_block(entry, "entry")]
    return view


def _reset_boundary(key: str, _entry: Entry, _images: ImageSource, _calls: ToolCalls) -> EntryView:
    # omp 18's /clear: a visible divider; the model context starts after the last one.
    view = _meta(key, "Context cleared", "/clear — the model sees only what follows")
    view.kind = "reset"
    return view


def _title_change(key: str, entry: Entry, _images: ImageSource, _calls: ToolCalls) -> EntryView:
    source = entry.get("source")
    text = f"title → “{entry.get('title')}”" + (f" ({source})" if isinstance(source, str) else "")
    view = _meta(key, "Title", text)
    previous = entry.get("previousTitle")
    if isinstance(previous, str):
        view.badges.append(f"was “{one_line(previous, 60)}”")
    return view


def _model_usage(key: str, entry: Entry, _images: ImageSource, _calls: ToolCalls) -> EntryView:
    # Spend of a side request (a title, a memory pass…): a cost line, never part of the context.
    model = f"{entry.get('provider')}/{entry.get('model')}"
    view = _meta(key, "Model usage", f"{entry.get('purpose')} · {model}")
    view.kind = "usage"
    _set_usage(view, entry.get("usage"))
    if view.usage_text:
        view.blocks[0].title = f"{entry.get('purpose')} · {model} · {view.usage_text}"
    return view


def _credential_pin(key: str, entry: Entry, _images: ImageSource, _calls: ToolCalls) -> EntryView:
    digest = entry.get("hash")
    short = f"{digest[:8]}…" if isinstance(digest, str) and len(digest) > 8 else str(digest)
    return _meta(key, "Credential", f"account pinned for {entry.get('provider')} ({short})")


_BUILDERS: dict[EntryKind, Builder] = {
    EntryKind.COMPACTION: _compaction,
    EntryKind.BRANCH_SUMMARY: _branch_summary,
    EntryKind.CUSTOM_MESSAGE: _custom_message,
    EntryKind.LABEL: _label,
    EntryKind.MODEL_CHANGE: _model_change,
    EntryKind.SESSION_INIT: _session_init,
    EntryKind.CUSTOM_ENTRY: _custom_entry,
    EntryKind.RESET_BOUNDARY: _reset_boundary,
    EntryKind.TITLE_CHANGE: _title_change,
    EntryKind.MODEL_USAGE: _model_usage,
    EntryKind.CREDENTIAL_PIN: _credential_pin,
}
#: Heading and line of the simple state changes (the value comes from the display model).
_STATE_LINES = {
    EntryKind.THINKING_LEVEL_CHANGE: ("Thinking", "thinking level → {}"),
    EntryKind.SERVICE_TIER_CHANGE: ("Service tier", "service tier → {}"),
    EntryKind.MODE_CHANGE: ("Mode", "mode → {}"),
    EntryKind.TTSR_INJECTION: ("Rules", "rules injected: {}"),
    EntryKind.MCP_TOOL_SELECTION: ("MCP tools", "MCP tools: {}"),
}
_BUILDERS.update({kind: _simple(kind, heading, line) for kind, (heading, line) in _STATE_LINES.items()})


def _set_usage(view: EntryView, usage: Any) -> None:
    if isinstance(usage, dict):
        view.usage = UsageStatistics()
        view.usage.add_usage(usage)
        view.usage_text = usage_line(view.usage)
