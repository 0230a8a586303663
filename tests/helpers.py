"""Small builders shared by the session-core tests: messages, raw entries and session files."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

TS = "2025-06-02T14:00:00.000Z"
HEADER = {"type": "session", "version": 3, "id": "sess-1", "timestamp": TS, "cwd": "/work/proj"}


def user(text: str = "hi", timestamp: int = 1) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": timestamp}


def assistant(
    text: str = "ok",
    *,
    provider: str = "anthropic",
    model: str = "claude-sonnet-4-5",
    usage: dict[str, Any] | None = None,
    timestamp: int = 2,
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "anthropic-messages",
        "provider": provider,
        "model": model,
    }
    if usage is not None:
        message["usage"] = usage
    message["stopReason"] = "stop"
    message["timestamp"] = timestamp
    return message


def usage(inp: int, out: int, cost: float | None = None, premium: int | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {
        "input": inp,
        "output": out,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": inp + out,
    }
    if premium is not None:
        result["premiumRequests"] = premium
    if cost is not None:
        result["cost"] = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost}
    return result


def entry(
    entry_id: str, parent: str | None, kind: str = "message", timestamp: str = TS, **fields: Any
) -> dict[str, Any]:
    """A raw v3 entry; a ``message`` entry gets a user message whose content is its id."""
    result: dict[str, Any] = {"type": kind, "id": entry_id, "parentId": parent, "timestamp": timestamp}
    if kind == "message" and "message" not in fields:
        fields["message"] = user(entry_id)
    result.update(fields)
    return result


def msg(entry_id: str, parent: str | None, message: dict[str, Any], timestamp: str = TS) -> dict[str, Any]:
    return entry(entry_id, parent, "message", timestamp, message=message)


def jsonl(records: Iterable[Any]) -> bytes:
    """Compact JSON lines, as omp writes them."""
    return b"".join(
        json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n" for r in records
    )


def write_session(
    path: Path, entries: Iterable[dict[str, Any]], header: dict[str, Any] | None = None
) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(jsonl([header if header is not None else HEADER, *entries]))
    return path


def read_lines(path: Path) -> list[dict[str, Any]]:
    """Every line of a session file parsed as JSON (split on ``\\n`` only)."""
    raw = path.read_bytes().split(b"\n")
    assert raw[-1] == b"", "every line must end in \\n"
    return [json.loads(line) for line in raw[:-1]]


def ids(entries: Iterable[dict[str, Any]]) -> list[Any]:
    return [e.get("id") for e in entries]


def contents(messages: Iterable[dict[str, Any]]) -> list[Any]:
    """The ``content`` (user text) or the role of each context message, for compact assertions."""
    out: list[Any] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            out.append(content)
        elif message.get("role") == "assistant":
            out.append("A:" + "".join(b.get("text", "") for b in content or []))
        else:
            out.append(message.get("role"))
    return out


def within(seconds: float, func: Callable[[], T]) -> T:
    """Run ``func`` in a daemon thread; fail (instead of hanging the suite) if it takes too long."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = func()
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"did not finish within {seconds}s (hang)"
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value
