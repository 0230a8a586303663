"""Sessions written by our own SessionManager, for the command-line tests."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from omp_session import SessionManager

USAGE: dict[str, Any] = {
    "input": 100,
    "output": 20,
    "cacheRead": 5,
    "cacheWrite": 7,
    "totalTokens": 132,
    "cost": {"input": 0.001, "output": 0.002, "cacheRead": 0, "cacheWrite": 0, "total": 0.003},
}


def assistant(*blocks: dict[str, Any], model: str = "claude-sonnet-4-5") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": list(blocks),
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": model,
        "usage": USAGE,
        "stopReason": "toolUse",
        "timestamp": 2,
    }


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}


def tool_result(call_id: str, name: str, output: str, *, error: bool = False) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [text(output)],
        "isError": error,
        "timestamp": 3,
    }


PNG = base64.b64encode(bytes(range(256)) * 8).decode()  # 2 KiB: stored as a blob on disk


def agent_session(directory: Path) -> tuple[Path, dict[str, str]]:
    """A realistic session: thinking, tool calls with results (one failing), an image, a branch.

    Returns the file and the ids of its notable entries.
    """
    ids: dict[str, str] = {}
    with SessionManager.create("/work/demo", directory) as session:
        ids["user"] = session.append_message(
            {
                "role": "user",
                "content": [
                    text("What is in this picture? Also list the files."),
                    {"type": "image", "data": PNG, "mimeType": "image/png"},
                ],
                "timestamp": 1,
            }
        )
        ids["call"] = session.append_message(
            assistant(
                {"type": "thinking", "thinking": "The user wants two things.\nFirst the image."},
                {"type": "redactedThinking", "data": "xyz"},
                text("Let me look."),
                tool_call("c1", "bash", command="ls"),
                tool_call("c2", "read", path="missing.txt"),
            )
        )
        ids["result1"] = session.append_message(tool_result("c1", "bash", "a.txt\nb.txt"))
        ids["result2"] = session.append_message(tool_result("c2", "read", "ENOENT: missing.txt", error=True))
        ids["answer"] = session.append_message(
            assistant(text("Two files: a.txt and b.txt. The picture is noise."))
        )
        session.branch(ids["user"])
        ids["retry"] = session.append_message(assistant(text("A retry on another branch.")))
        session.append_label_change(ids["user"], "question")
        path = session.get_session_file()
    assert path is not None
    return Path(path), ids
