"""A session whose every displayed field carries an XSS payload: text, thinking, tool names and
arguments, results, images (SVG by type, SVG claiming to be PNG, an SVG blob), labels, summaries,
custom types, an unknown entry type, the title, the cwd, and entry ids (DOM clobbering included)."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

from .support import write_session

PWN = "window.__pwned=1"
PAYLOADS = [
    f"<script>{PWN}</script>",
    f'<img src=x onerror="{PWN}">',
    f"[click me](javascript:{PWN})",
    f'<a href="javascript:{PWN}">raw link</a>',
    f'<svg onload="{PWN}"><circle r=5></circle></svg>',
    f'<iframe srcdoc="<script>parent.{PWN}</script>"></iframe>',
    f"</script><script>{PWN}</script>",
    f"<javascript:{PWN}>",
    f"![x](javascript:{PWN})",
    f'<details open ontoggle="{PWN}">x</details>',
    f"<style>body{{background:url(javascript:{PWN})}}</style>",
    f'" onmouseover="{PWN}" x="',
    f"```html\n<script>{PWN}</script>\n```",
]
TEXT = "\n\n".join(PAYLOADS)
SVG = f'<svg xmlns="http://www.w3.org/2000/svg" onload="{PWN}"><script>{PWN}</script></svg>'.encode()
EVIL_ID = f'"><img src=x onerror="{PWN}">'
TS = "2025-06-02T10:00:00.000Z"
Record = dict[str, Any]


def _entry(kind: str, entry_id: str, parent: str | None, **fields: Any) -> Record:
    return {"type": kind, "id": entry_id, "parentId": parent, "timestamp": TS, **fields}


def _message(entry_id: str, parent: str | None, **message: Any) -> Record:
    return _entry("message", entry_id, parent, message={"timestamp": 1, **message})


def _assistant() -> Record:
    usage = {
        "input": 1,
        "output": 1,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 2,
        "cost": {"total": 0.01},
    }
    call = {"command": TEXT, "path": f"<script>{PWN}</script>.py"}
    return _message(
        EVIL_ID,
        "__pwned",
        role="assistant",
        api="x",
        provider=f"<b>{PWN}</b>",
        model=f"<img src=x onerror={PWN}>",
        usage=usage,
        stopReason=f"<script>{PWN}</script>",
        errorMessage=f"<img src=x onerror={PWN}>",
        content=[
            {"type": "thinking", "thinking": TEXT},
            {"type": "text", "text": TEXT},
            {"type": "toolCall", "id": "call-1", "name": f"<img src=x onerror={PWN}>", "arguments": call},
        ],
    )


def _tool_result(svg_digest: str) -> Record:
    svg64 = base64.b64encode(SVG).decode()
    return _message(
        "res-1",
        EVIL_ID,
        role="toolResult",
        toolCallId="call-1",
        toolName=f"<svg onload={PWN}>",
        isError=False,
        content=[
            {"type": "text", "text": TEXT},
            {"type": "image", "mimeType": "image/svg+xml", "data": svg64},
            {"type": "image", "mimeType": "image/png", "data": svg64},
            {"type": "image", "mimeType": "image/png", "data": f"blob:sha256:{svg_digest}"},
            {"type": "image", "mimeType": "image/png", "data": f'"><script>{PWN}</script>'},
        ],
    )


def _later_entries() -> list[Record]:
    label = f'"><img src=x onerror={PWN}>'
    script = f"<script>{PWN}</script>"
    custom = {"customType": script, "content": TEXT, "display": True, "details": {"html": script}}
    bash = {
        "command": f"echo '{script}'",
        "output": TEXT,
        "exitCode": 0,
        "cancelled": False,
        "truncated": False,
    }
    files = [{"path": f"<img src=x onerror={PWN}>.html", "content": TEXT}]
    return [
        _entry("label", "lbl-1", "res-1", targetId="__pwned", label=label),
        _entry(
            "compaction",
            "cmp-1",
            "lbl-1",
            summary=TEXT,
            shortSummary=script,
            firstKeptEntryId=EVIL_ID,
            tokensBefore=10,
        ),
        _entry("branch_summary", "bs-1", "cmp-1", fromId=EVIL_ID, summary=TEXT),
        _entry("custom_message", "cm-1", "bs-1", **custom),
        _message("bash-1", "cm-1", role="bashExecution", **bash),
        _message("fm-1", "bash-1", role="fileMention", files=files),
        _entry(script, "unk-1", "fm-1", data=TEXT),
        _message(
            f"</script><script>{PWN}</script>",
            "unk-1",
            role="user",
            content=[{"type": "text", "text": "the end"}],
        ),
    ]


def xss_session(root: Path, blobs: Path) -> Path:
    """Write the session under ``root`` (and an SVG blob into ``blobs``); return its path."""
    blobs.mkdir(parents=True, exist_ok=True)
    svg_digest = hashlib.sha256(SVG).hexdigest()
    (blobs / svg_digest).write_bytes(SVG)
    header = {
        "type": "session",
        "version": 3,
        "id": f"<script>{PWN}</script>",
        "timestamp": TS,
        "cwd": f"/work/<img src=x onerror={PWN}>",
        "title": f"<script>{PWN}</script> XSS sampler",
    }
    records = [
        header,
        _message("__pwned", None, role="user", content=TEXT),
        _assistant(),
        _tool_result(svg_digest),
        *_later_entries(),
    ]
    return write_session(root / "-xss" / "2025-06-02T10-00-00-000Z_xss.jsonl", records)
