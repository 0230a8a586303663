"""The text of a message, and whether a user's text is a prompt: the rules that a session's listing
summary and its display model share (spec §6.9).

They live here, below the store, because the listing (``store/listing/``) reads them as well as the
views; ``tools/content.py`` and ``tools/summary.py`` re-export them. Pure.

Internal module (re-exported by :mod:`omp_session.tools.summary`); not part of the public API.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["is_prompt", "is_slash_command", "message_text"]

#: ``/mode``, ``/model sonnet``, ``/skill:review``: a command to the agent, not a prompt.
_SLASH_COMMAND = re.compile(r"^/[A-Za-z][\w-]*(:[\w-]+)?(\s|$)")
#: What Codex sends as a user message before the user types anything (its rollouts, imported):
#: the working directory and shell, the AGENTS.md instructions. Context for the model, not a prompt.
_AGENT_PREAMBLE = re.compile(
    r"^\s*(<(environment_context|user_instructions)>|# AGENTS\.md instructions for )"
)


def message_text(message: Mapping[str, Any]) -> str:
    """The text of a message on one line, omp's rule (``extractTextFromContent``, spec §6.9): string
    content as is, else its ``text`` blocks joined by a single space. The one owner of this rule:
    listing, summaries and the views all use it."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    blocks = content if isinstance(content, list) else ()
    return " ".join(
        b["text"]
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    )


def is_slash_command(text: str) -> bool:
    """True for a message that is a slash command (``/mode``) rather than a prompt; a path such as
    ``/etc/hosts is broken`` is a prompt."""
    return bool(_SLASH_COMMAND.match(text.strip()))


def is_prompt(text: str) -> bool:
    """True for a user text that says what a session is about: not empty, not a slash command,
    not the environment context an agent sends first (Codex's ``<environment_context>``, issue 30
    #5: imported Codex sessions were titled with it)."""
    return bool(text.strip()) and not is_slash_command(text) and not _AGENT_PREAMBLE.match(text)
