"""Small rules shared by every provider encoder (pi-ai ``utils.ts``, ``dialect/demotion.ts``)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from omp_session import errors

__all__ = [
    "DEMOTED",
    "NON_VISION_IMAGE_PLACEHOLDER",
    "UnsupportedConversion",
    "is_blank",
    "js_slice",
    "normalize_system_prompts",
    "render_demoted_thinking",
    "sanitize_tool_call_id",
    "thinking_dialect",
    "well_formed",
]

NON_VISION_IMAGE_PLACEHOLDER = "[image omitted: model does not support vision]"


# Raised when a body would need a pi-ai rule not reproduced here (defined with every public error).
UnsupportedConversion = errors.UnsupportedConversion


# A key that marks a text block made from demoted thinking (pi-ai marks it with a symbol that is never
# serialised). The encoders build new dicts for the wire, so this key never reaches a request body.
DEMOTED = "\x00demoted"

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# JavaScript's String.prototype.trim() removes these (ECMAScript WhiteSpace + LineTerminator).
_JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def well_formed(text: str) -> str:
    """``String.prototype.toWellFormed()``: every lone surrogate becomes U+FFFD."""
    return _LONE_SURROGATE.sub("\ufffd", text)


def js_trim(text: str) -> str:
    return text.strip(_JS_WHITESPACE)


def js_trim_end(text: str) -> str:
    return text.rstrip(_JS_WHITESPACE)


def is_blank(text: Any) -> bool:
    """``!text || text.trim() === ""`` for a value that should be a string."""
    return not isinstance(text, str) or js_trim(text) == ""


def js_slice(text: str, end: int) -> str:
    """``text.slice(0, end)`` in UTF-16 code units (ids are ASCII in practice; exotic ones stay right)."""
    if text.isascii():
        return text[:end]
    units = text.encode("utf-16-le", "surrogatepass")[: end * 2]
    return units.decode("utf-16-le", "surrogatepass")


def js_length(text: str) -> int:
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def sanitize_tool_call_id(identifier: str, limit: int = 64) -> str:
    """``id.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, limit)`` (one underscore per UTF-16 unit)."""
    out = []
    for char in identifier:
        if char.isascii() and (char.isalnum() or char in "_-"):
            out.append(char)
        else:
            out.append("_" * (2 if ord(char) > 0xFFFF else 1))
    return "".join(out)[:limit]


def normalize_system_prompts(system_prompt: str | Sequence[str] | None) -> list[str]:
    """pi-ai ``normalizeSystemPrompts``: a list of the non-blank prompts, well-formed (no redaction:
    omp leaves credential redaction off unless the user turns ``secrets.enabled`` on)."""
    if system_prompt is None:
        return []
    prompts = [system_prompt] if isinstance(system_prompt, str) else list(system_prompt)
    return [well_formed(prompt) for prompt in prompts if isinstance(prompt, str) and js_trim(prompt) != ""]


def thinking_dialect(model_id: str) -> str:
    """The text form a target model reads demoted reasoning in (pi-catalog ``preferredDialect``).

    Only the families whose rendering is golden-tested are told apart; every other model id gets
    pi-ai's fallback dialect (``xml``), which is what pi-ai does for ids it does not classify.
    """
    lowered = model_id.lower().rsplit("/", 1)[-1]
    if "claude" in lowered:
        return "anthropic"
    if "gemma" in lowered:
        return "gemma"
    if "gemini" in lowered:
        return "gemini"
    if "deepseek" in lowered:
        return "deepseek"
    if "qwen" in lowered:
        return "qwen3"
    if re.match(r"(gpt|o[1-9]|codex|chatgpt)", lowered):
        return "harmony"
    return "xml"


def render_demoted_thinking(model_id: str, text: str) -> str:
    """pi-ai ``renderDemotedThinking``: earlier reasoning as text in the target model's own dialect.

    Claude models read it bare (Anthropic's classifier refuses tagged replays of reasoning); Harmony and
    Gemma get a plain ``<think>`` block; Gemini a ```` ```thinking ```` fence; the rest their dialect's
    delimiters.
    """
    if not text:
        return ""
    text = well_formed(text)
    dialect = thinking_dialect(model_id)
    if dialect == "anthropic":
        return text
    if dialect == "gemini":
        return f"```thinking\n{text}\n```"
    if dialect in ("harmony", "gemma", "deepseek", "qwen3"):
        return f"<think>\n{text}\n</think>"
    return _render_delimited("<thinking>", "</thinking>", text)


def _render_delimited(open_tag: str, close_tag: str, text: str) -> str:
    stripped = text.strip(" \t\n\r\f\v")
    if stripped.startswith(open_tag) and stripped.endswith(close_tag):
        # Already wrapped: pi-ai unwraps one layer instead of nesting tags (simple, single-block case).
        inner = stripped[len(open_tag) : -len(close_tag)]
        if open_tag not in inner and close_tag not in inner:
            text = inner.strip(" \t\n\r\f\v")
    return f"{open_tag}\n{text}\n{close_tag}"


def is_record(value: Any) -> bool:
    return isinstance(value, Mapping)
