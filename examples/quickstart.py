"""Create a session in a temporary directory, branch, compact, and print the tree and the context.

Run with ``make run`` (or ``python examples/quickstart.py``).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from omp_session import SessionManager, SessionTreeNode


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1_750_000_000_000}


def assistant(text: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": {
            "input": 120,
            "output": 30,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 150,
            "cost": {"input": 0.0004, "output": 0.0005, "cacheRead": 0, "cacheWrite": 0, "total": 0.0009},
        },
        "stopReason": "stop",
        "timestamp": 1_750_000_001_000,
    }


def print_tree(roots: list[SessionTreeNode], leaf: str | None) -> None:
    for root in roots:
        for node, depth in root.walk():
            entry = node.entry
            message = entry.get("message") or {}
            what = message.get("role", entry["type"])
            text = message.get("content") if isinstance(message.get("content"), str) else ""
            if not text and isinstance(message.get("content"), list):
                text = " ".join(b.get("text", "") for b in message["content"] if b.get("type") == "text")
            text = text or entry.get("summary", "")
            marks = (f"  [{node.label}]" if node.label else "") + ("  <- leaf" if entry["id"] == leaf else "")
            print(f"{'  ' * depth}{entry['id']} {what}: {text[:50]}{marks}")


def main() -> None:
    with (
        tempfile.TemporaryDirectory() as tmp,
        SessionManager.create("/work/demo-project", Path(tmp)) as session,
    ):
        session.append_model_change("anthropic/claude-sonnet-4-5")
        question = session.append_message(user("How do I read a JSONL file in Python?"))
        session.append_message(assistant("Split on newlines and json.loads each line."))
        session.append_label_change(question, "first question")
        session.append_message(user("And what about a huge file?"))
        session.append_message(assistant("Stream it line by line instead of reading it all."))

        # Go back to the first answer and try another direction, with a summary of what we left.
        session.branch_with_summary(question, "We discussed streaming large files.")
        session.append_message(user("Show me orjson instead."))
        kept = session.append_message(assistant("orjson.loads(line) is several times faster."))
        session.append_compaction("The user wants fast JSONL parsing.", "fast JSONL", kept, 1_234)
        session.append_message(user("Thanks!"))

        print(f"session file: {session.get_session_file()}\n")
        print("tree:")
        print_tree(session.get_tree(), session.get_leaf_id())
        context = session.build_session_context()
        print("\ncontext at the leaf:")
        print(
            json.dumps(
                {
                    **context.to_dict(),
                    "messages": [
                        {"role": m["role"], "text": m.get("summary") or m.get("content")}
                        for m in context.messages
                    ],
                },
                indent=2,
                default=str,
            )
        )
        print(f"\nusage: {session.get_usage_statistics().to_dict()}")


if __name__ == "__main__":
    main()
