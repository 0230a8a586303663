"""One session entry → an :class:`EntryView`: heading, badges, blocks, usage, tree-panel text.

Every entry type of spec §3 and every message role of spec §4 has a readable form; unknown types and
roles are shown as JSON rather than dropped, so the viewer never hides what is in the file.

Internal module (part of the viewer, whose API is :mod:`omp_session.web`); not part of the public API.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omp_session.model.context import entry_to_message
from omp_session.model.usage import UsageStatistics
from omp_session.web import blocks as b
from omp_session.web.format import clock_time, one_line, usage_line
from omp_session.web.images import ImageSource
from omp_session.web.markdown import highlight_code, lexer_for_path

__all__ = ["EntryView", "ToolCalls", "entry_view"]

Entry = dict[str, Any]
#: Tool calls seen so far by call id (calls come before their results in file order).
ToolCalls = dict[str, dict[str, Any]]


@dataclass
class EntryView:
    """What the templates need to draw one entry, in the transcript and in the tree panel."""

    key: str
    type: str
    kind: str
    heading: str
    tree_text: str
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


def entry_view(key: str, entry: Entry, images: ImageSource, calls: ToolCalls) -> EntryView:
    """The view of ``entry`` (``key`` is its DOM key: the entry id, or a synthetic ``~n``)."""
    kind = entry.get("type")
    kind = kind if isinstance(kind, str) else "unknown"
    builder = _BUILDERS.get(kind)
    view = builder(key, entry, images, calls) if builder else _unknown(key, entry, kind)
    view.type = kind
    view.tree_text = one_line(view.tree_text, 160)
    iso = entry.get("timestamp")
    view.iso = iso if isinstance(iso, str) else ""
    view.timestamp = clock_time(view.iso)
    view.in_context = entry_to_message(entry) is not None
    return view


# -- message entries ---------------------------------------------------------------------------


def _message(key: str, entry: Entry, images: ImageSource, calls: ToolCalls) -> EntryView:
    message = entry.get("message")
    if not isinstance(message, dict):
        return _unknown(key, entry, "message")
    role = message.get("role")
    builder = _ROLES.get(role) if isinstance(role, str) else None
    if builder is None:
        view = EntryView(key, "message", "unknown", f"Message · role {role!r}", f"{role}")
        view.blocks = [b.json_block(message, "message")]
        return view
    return builder(key, message, images, calls)


def _user(key: str, message: Entry, images: ImageSource, _calls: ToolCalls) -> EntryView:
    role = str(message.get("role"))
    heading = {"user": "User", "developer": "Developer"}.get(role, role)
    blocks = b.content_blocks(message.get("content"), images)
    view = EntryView(key, "message", "user", heading, f"{role}: {_text_of(message.get('content'))}")
    view.blocks = blocks
    if message.get("synthetic"):
        view.badges.append("synthetic")
    if message.get("attribution") == "agent":
        view.badges.append("by agent")
    return view


def _assistant(key: str, message: Entry, images: ImageSource, calls: ToolCalls) -> EntryView:
    content = message.get("content")
    tools = []
    for item in content if isinstance(content, list) else []:
        if isinstance(item, dict) and item.get("type") == "toolCall":
            tools.append(str(item.get("name")))
            if isinstance(item.get("id"), str):
                calls[item["id"]] = item
    text = _text_of(content)
    tree = f"assistant: {text}" if text else "assistant"
    if tools:
        tree += " → " + ", ".join(tools[:4]) + ("…" if len(tools) > 4 else "")
    view = EntryView(key, "message", "assistant", "Assistant", tree)
    view.blocks = b.assistant_blocks(content, images)
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
    view = EntryView(key, "message", "tool", f"Result · {name}", f"{name} {'✗' if failed else '✓'} {hint}")
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
    view = EntryView(key, "message", "exec", title, f"{'py' if python else '$'} {source}")
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
    view = EntryView(key, "message", "custom", f"Custom · {custom_type}", f"{custom_type}")
    view.blocks = b.content_blocks(message.get("content"), images)
    if message.get("display") is False:
        view.badges.append("hidden in omp")
    if message.get("details") is not None:
        view.blocks.append(b.json_block(message["details"], "details"))
    return view


def _file_mention(key: str, message: Entry, images: ImageSource, _calls: ToolCalls) -> EntryView:
    raw_files = message.get("files")
    files: list[Any] = raw_files if isinstance(raw_files, list) else []
    paths = [str(f.get("path")) for f in files if isinstance(f, dict)]
    view = EntryView(key, "message", "user", "File mention", "files: " + ", ".join(paths))
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
    view = EntryView(key, "message", "summary", str(message.get("role")), "summary")
    view.blocks = [b.markdown_block(str(message.get("summary", "")))]
    return view


_ROLES = {
    "user": _user,
    "developer": _user,
    "assistant": _assistant,
    "toolResult": _tool_result,
    "bashExecution": _execution,
    "pythonExecution": _execution,
    "custom": _custom_role,
    "hookMessage": _custom_role,
    "fileMention": _file_mention,
    "branchSummary": _summary_role,
    "compactionSummary": _summary_role,
}


# -- other entry types ---------------------------------------------------------------------------


def _compaction(key: str, entry: Entry, _images: ImageSource, _calls: ToolCalls) -> EntryView:
    short = entry.get("shortSummary")
    view = EntryView(key, "compaction", "compaction", "Compaction", f"compaction: {one_line(short or '')}")
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
    view = EntryView(
        key, "branch_summary", "summary", "Branch summary", f"branch summary: {one_line(summary)}"
    )
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
    view = EntryView(key, "", "meta", heading, text, meta=True)
    view.blocks = [b.Block("note", title=text)]
    return view


def _simple(heading: str, field_name: str, fmt: str = "{}") -> Any:
    def build(key: str, entry: Entry, _images: ImageSource, _calls: ToolCalls) -> EntryView:
        value = entry.get(field_name)
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value) or "none"
        return _meta(key, heading, fmt.format(value if value is not None else "none"))

    return build


def _model_change(key: str, entry: Entry, _images: ImageSource, _calls: ToolCalls) -> EntryView:
    role = entry.get("role")
    suffix = f" (role {role})" if isinstance(role, str) else ""
    return _meta(key, "Model", f"model → {entry.get('model')}{suffix}")


def _session_init(key: str, entry: Entry, _images: ImageSource, _calls: ToolCalls) -> EntryView:
    view = EntryView(
        key, "session_init", "custom", "Sub-agent start", f"session init: {one_line(entry.get('task'))}"
    )
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
    view = EntryView(key, kind, "unknown", f"Entry · {kind}", kind, meta=True)
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


_BUILDERS = {
    "message": _message,
    "compaction": _compaction,
    "branch_summary": _branch_summary,
    "custom_message": _custom_message,
    "label": _label,
    "model_change": _model_change,
    "thinking_level_change": _simple("Thinking", "thinkingLevel", "thinking level → {}"),
    "service_tier_change": _simple("Service tier", "serviceTier", "service tier → {}"),
    "mode_change": _simple("Mode", "mode", "mode → {}"),
    "ttsr_injection": _simple("Rules", "injectedRules", "rules injected: {}"),
    "mcp_tool_selection": _simple("MCP tools", "selectedToolNames", "MCP tools: {}"),
    "session_init": _session_init,
    "custom": _custom_entry,
    "reset_boundary": _reset_boundary,
    "title_change": _title_change,
    "model_usage": _model_usage,
    "credential_pin": _credential_pin,
}


def _set_usage(view: EntryView, usage: Any) -> None:
    if isinstance(usage, dict):
        view.usage = UsageStatistics()
        view.usage.add_usage(usage)
        view.usage_text = usage_line(view.usage)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return one_line(content)
    items = content if isinstance(content, list) else []
    texts = [
        item["text"]
        for item in items
        if isinstance(item, dict) and item.get("type") == "text" and isinstance(item.get("text"), str)
    ]
    if not texts and any(isinstance(item, dict) and item.get("type") == "image" for item in items):
        return "[image]"
    return one_line(" ".join(texts))
