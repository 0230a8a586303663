"""omp 18.3.4's replacement and placeholder arithmetic (Bun's hash is
`omp_session.format.bun_hash`): the deterministic scramble of
a replace-mode secret, the HMAC-keyed placeholder base, the search for a replacement a regex does
not match again (internal; used by :mod:`omp_session.tools.omp_obfuscator`)."""

from __future__ import annotations

import hashlib
import hmac
import re

from omp_session.format.bun_hash import bun_hash

__all__ = [
    "REPLACEMENT_CHARS",
    "build_hash_base",
    "build_keyed_replacement_run",
    "generate_deterministic_replacement",
    "infer_case_hint",
    "regex_has_unresolvable_short_match_fallback",
]

# ── Replacements and placeholders ─────────────────────────────────────────────────────────────────

REPLACEMENT_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_NONMATCHING_CHARS = REPLACEMENT_CHARS + "!#$%&()*+,-./:;<=>?@[]^_{|}~"
_HASH_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_MIN_OBFUSCATE_LEN = 8
_MAX_FRIENDLY_LEN = 32
_PLACEHOLDER_RE = re.compile(r"\$\$(?:[A-Z0-9]+_)?[A-Z0-9]{4,}(?::[ULCM])?\$\$")
_UNPREFIXED_RE = re.compile(r"^\$\$[A-Z0-9]+_([A-Z0-9]{4,}(?::[ULCM])?)\$\$$")
_PREFIXED_BODY_RE = re.compile(r"^([A-Z0-9]+)_([A-Z0-9]{4,}(?::[ULCM])?)$")
_NON_ALNUM = re.compile(r"[^A-Za-z0-9]")


def _js_length(text: str) -> int:
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def generate_deterministic_replacement(secret: str) -> str:
    """omp's `generateDeterministicReplacement` (a `ZZ` sentinel, then Bun-hash-seeded characters)."""
    length = len(secret)
    if length == 0:
        return ""
    h = bun_hash(secret)
    chars = ["Z"] if length == 1 else ["Z", "Z"]
    for i in range(len(chars), length):
        h ^= (i + 1) * 0x9E3779B97F4A7C15
        chars.append(REPLACEMENT_CHARS[abs(h) % len(REPLACEMENT_CHARS)])
    return "".join(chars)


def _ensure_distinct(replacement: str, secret: str) -> str:
    if not replacement or replacement != secret:
        return replacement
    alt = REPLACEMENT_CHARS[1] if replacement[0] == REPLACEMENT_CHARS[0] else REPLACEMENT_CHARS[0]
    return alt + replacement[1:]


def _sanitize_friendly_name(name: str) -> str | None:
    cleaned = _NON_ALNUM.sub("", name).upper()[:_MAX_FRIENDLY_LEN]
    return cleaned or None


def _sanitize_for_collision(value: str) -> str:
    return _NON_ALNUM.sub("", value).upper()


def _label_collides(label: str, secret: str) -> bool:
    if not secret:
        return False
    if secret in label:
        return True
    return len(label) >= _MAX_FRIENDLY_LEN and secret.startswith(label)


def _hmac_digest(key: str, message: str) -> bytes:
    return hmac.new(key.encode("utf-8"), message.encode("utf-8", "surrogatepass"), hashlib.sha256).digest()


def build_hash_base(key: str, value: str) -> str:
    """omp's `buildHashBase`: 64 bits of HMAC-SHA256(key, value) as 12 base-36 digits, low first."""
    v = int.from_bytes(_hmac_digest(key, value)[:8], "big")
    tag = []
    for _ in range(12):
        tag.append(_HASH_CHARS[v % 36])
        v //= 36
    return "".join(tag)


def build_keyed_replacement_run(key: str, length: int) -> str:
    out: list[str] = []
    block = 0
    while len(out) < length:
        digest = _hmac_digest(key, f"replace-chunk\0{length}\0{block}")
        for byte in digest:
            if len(out) >= length:
                break
            out.append(REPLACEMENT_CHARS[byte % len(REPLACEMENT_CHARS)])
        block += 1
    return "".join(out)


def infer_case_hint(secret: str) -> str | None:
    has_upper = has_lower = False
    capitalized = True
    seen_first = False
    for ch in secret:
        upper = "A" <= ch <= "Z"
        lower = "a" <= ch <= "z"
        if not upper and not lower:
            continue
        if upper:
            has_upper = True
            if seen_first:
                capitalized = False
        else:
            has_lower = True
            if not seen_first:
                capitalized = False
        seen_first = True
    if not has_upper and not has_lower:
        return None
    if has_upper and not has_lower:
        return "U"
    if has_lower and not has_upper:
        return "L"
    return "C" if capitalized else "M"


def _build_placeholder(hint: str | None, base: str, friendly: str | None) -> str:
    prefix = f"{friendly}_" if friendly else ""
    return f"$${prefix}{base}:{hint}$$" if hint else f"$${prefix}{base}$$"


def _unprefixed(placeholder: str) -> str | None:
    match = _UNPREFIXED_RE.match(placeholder)
    return f"$${match.group(1)}$$" if match else None


def _search(regex: re.Pattern[str], text: str, pos: int) -> re.Match[str] | None:
    return regex.search(text, pos) if pos <= len(text) else None


def _rematches_in_context(candidate: str, regex: re.Pattern[str], text: str, start: int, end: int) -> bool:
    probe = text[:start] + candidate + text[end:]
    span_end = start + len(candidate)
    pos = max(0, start - 512)
    while True:
        match = _search(regex, probe, pos)
        if match is None:
            return False
        if match.start() >= span_end:
            return False
        if match.end() > start:
            return True
        pos = match.end() if match.end() > match.start() else match.end() + 1


def _find_nonmatching(value: str, regex: re.Pattern[str], text: str, start: int, end: int) -> str | None:
    length = len(value)
    if length == 0:
        return None
    baseline = _NONMATCHING_CHARS[0] * length
    for position in range(length):
        for ch in _NONMATCHING_CHARS:
            candidate = baseline[:position] + ch + baseline[position + 1 :]
            if candidate != value and not _rematches_in_context(candidate, regex, text, start, end):
                return candidate
    for ch in _NONMATCHING_CHARS:
        candidate = ch * length
        if candidate != value and not _rematches_in_context(candidate, regex, text, start, end):
            return candidate
    filler = _NONMATCHING_CHARS[0]
    for ws in " \t":
        full = ws * length
        if full != value and not _rematches_in_context(full, regex, text, start, end):
            return full
        for pos in range(length):
            candidate = filler * pos + ws + filler * (length - pos - 1)
            if candidate != value and not _rematches_in_context(candidate, regex, text, start, end):
                return candidate
    return None


def regex_has_unresolvable_short_match_fallback(regex: re.Pattern[str]) -> bool:
    for length in (1, 2):
        probe = "\0" * length
        if _find_nonmatching(probe, regex, probe, 0, length) is None:
            return True
    return False
