"""omp 18.3.4's secret rules, applied the way omp applies them (internal; the public name is
`omp_session.redact`).

omp's `src/secrets/` builds one `SecretObfuscator` from three sources, in this order
(`buildSecretObfuscator`): secret-shaped environment variables (`collectEnvSecrets`: a name matching
`KEY|SECRET|TOKEN|PASSWORD|PASS|AUTH|CREDENTIAL|PRIVATE|OAUTH` followed by `_` or the end, a value of
at least 8 characters, then the passwords of `scheme://user:password@host` values), the
`secrets.yml` entries (global `<agent dir>/secrets.yml`, then project `<cwd>/.omp/secrets.yml`, a
project entry overriding a global one with the same `content`), and the built-in credential
patterns (`patterns.ts`, the first being pi-ai's `SENSITIVE_TOKEN_RE`). `obfuscate(text)` then:

1. replaces every plain replace-mode secret (longest first) by its `replacement`, or by a
   deterministic same-length scramble seeded with Bun's wyhash of the secret;
2. replaces every plain obfuscate-mode secret of at least 8 characters (longest first) by its
   keyed placeholder `$$[NAME_]BASE[:HINT]$$` (BASE: 12 base-36 characters of HMAC-SHA256 under
   the per-install key, HINT the case of the secret);
3. runs every regex entry in order over the text with the placeholders so far expanded back to
   their secrets; an obfuscate-mode match of at least 8 characters becomes a placeholder of its
   value, a replace-mode match becomes its `replacement` or a scramble the regex does not match.

This module ports that pass for text that does not already hold placeholders of an earlier pass
(a stored session holds the raw text: omp obfuscates on the way to the provider and deobfuscates
on the way back). The fixed-point machinery omp keeps for re-obfuscating its own output (origin
tags, spill-over stabilisation) never changes such text and is not ported. Golden outputs of omp's
own code are in `tests/golden/omp_secrets/` (see its README); the port matches them byte for byte.

JavaScript regular expressions are translated to Python's (`compile_js_regex`); strings are
compared as Python strings (code points), where JavaScript counts UTF-16 units: the two differ
only for characters outside the Basic Multilingual Plane inside a match.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote

from omp_session.errors import SessionError

__all__ = [
    "BUILTIN_CREDENTIAL_PATTERNS",
    "OmpObfuscation",
    "OmpSecretObfuscator",
    "SecretEntry",
    "SecretsConfigError",
    "build_omp_entries",
    "builtin_credential_entries",
    "collect_env_secrets",
    "compile_js_regex",
    "load_secrets",
    "wyhash",
]

Mode = Literal["obfuscate", "replace"]


class SecretsConfigError(SessionError):
    """A `secrets.yml` that cannot be read at all (omp warns and skips it; we refuse to guess)."""


# ── Bun.hash (wyhash, Zig std's final v4 as Bun ships it) ─────────────────────────────────────────

_M64 = (1 << 64) - 1
_WY = (0xA0761D6478BD642F, 0xE7037ED1A0B428DB, 0x8EBC6AF09C88C6E3, 0x589965CC75374CC3)


def _mum(a: int, b: int) -> tuple[int, int]:
    x = a * b
    return x & _M64, (x >> 64) & _M64


def _mix(a: int, b: int) -> int:
    lo, hi = _mum(a, b)
    return lo ^ hi


def _r8(data: bytes, i: int) -> int:
    return int.from_bytes(data[i : i + 8], "little")


def _r4(data: bytes, i: int) -> int:
    return int.from_bytes(data[i : i + 4], "little")


def wyhash(data: bytes, seed: int = 0) -> int:
    """`Bun.hash(string)` for the UTF-8 bytes of the string (64-bit wyhash, seed 0)."""
    s0 = seed ^ _mix(seed ^ _WY[0], _WY[1])
    state = [s0, s0, s0]
    n = len(data)
    if n <= 16:
        if n >= 4:
            end = n - 4
            quarter = (n >> 3) << 2
            a = (_r4(data, 0) << 32) | _r4(data, quarter)
            b = (_r4(data, end) << 32) | _r4(data, end - quarter)
        elif n > 0:
            a = (data[0] << 16) | (data[n >> 1] << 8) | data[n - 1]
            b = 0
        else:
            a = b = 0
    else:
        i = 0
        if n >= 48:
            while i + 48 < n:
                for k in range(3):
                    state[k] = _mix(_r8(data, i + 16 * k) ^ _WY[k + 1], _r8(data, i + 16 * k + 8) ^ state[k])
                i += 48
            state[0] ^= state[1] ^ state[2]
        rest = data[i:]
        j = 0
        while j + 16 < len(rest):
            state[0] = _mix(_r8(rest, j) ^ _WY[1], _r8(rest, j + 8) ^ state[0])
            j += 16
        a = _r8(data, n - 16)
        b = _r8(data, n - 8)
    a ^= _WY[1]
    b ^= state[0]
    a, b = _mum(a, b)
    return _mix(a ^ _WY[0] ^ n, b ^ _WY[1])


# ── JavaScript regular expressions ────────────────────────────────────────────────────────────────

# JavaScript's \s (WhiteSpace + LineTerminator), written out for Python.
_JS_SPACE = "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
_END = "\x00END\x00"  # JavaScript's `$`, resolved once the flags are known
_REGEX_LITERAL = re.compile(r"^/((?:[^\\/]|\\.)*)/([ gimsuy]*)$")


def _translate_js_pattern(source: str) -> str:
    """JavaScript pattern syntax to Python's: \\s/\\S as JavaScript defines them, named groups,
    `$` that matches only at the very end, `\\d`/`\\w`/`\\b` in ASCII (the flag does that)."""
    out: list[str] = []
    i = 0
    in_class = False
    n = len(source)
    while i < n:
        ch = source[i]
        if ch == "\\" and i + 1 < n:
            nxt = source[i + 1]
            if nxt == "s":
                out.append(_JS_SPACE if in_class else f"[{_JS_SPACE}]")
            elif nxt == "S":
                out.append(f"[^{_JS_SPACE}]" if not in_class else "\\S")
            elif nxt == "k" and i + 2 < n and source[i + 2] == "<":
                close = source.index(">", i)
                out.append(f"(?P={source[i + 3 : close]})")
                i = close + 1
                continue
            elif nxt == "/":
                out.append("/")
            else:
                out.append(ch + nxt)
            i += 2
            continue
        if in_class:
            if ch == "]":
                in_class = False
            elif ch == "[":
                out.append("\\[")
                i += 1
                continue
            out.append(ch)
        elif ch == "[":
            if source.startswith("[]", i):
                out.append("(?!)")  # `[]` matches nothing in JavaScript
                i += 2
                continue
            if source.startswith("[^]", i):
                out.append("[\\s\\S]")  # and `[^]` anything
                i += 3
                continue
            in_class = True
            out.append(ch)
            if source.startswith("[^", i):
                out.append("^")
                i += 1
        elif ch == "(" and source.startswith("(?<", i) and i + 3 < n and source[i + 3] not in "=!":
            out.append("(?P<")
            i += 3
            continue
        elif ch == "$":
            out.append(_END)
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def compile_js_regex(pattern: str, flags: str | None = None) -> re.Pattern[str]:
    """omp's `compileSecretRegex`: a `/pattern/flags` literal is unwrapped (its flags merged with
    `flags`), and the pattern compiled with JavaScript's meaning of i, m and s."""
    resolved = pattern
    resolved_flags = flags or ""
    literal = _REGEX_LITERAL.match(pattern)
    if literal:
        resolved = literal.group(1)
        resolved_flags = resolved_flags + literal.group(2)
    py_flags = re.ASCII
    if "i" in resolved_flags:
        py_flags |= re.IGNORECASE
    if "s" in resolved_flags:
        py_flags |= re.DOTALL
    translated = _translate_js_pattern(resolved)
    if "m" in resolved_flags:
        py_flags |= re.MULTILINE
        translated = translated.replace(_END, "(?=[\\n\\r\\u2028\\u2029]|\\Z)")
    translated = translated.replace(_END, "\\Z")
    if "s" not in resolved_flags:
        # JavaScript's `.` excludes \r, \u2028 and \u2029 as well as \n.
        translated = _replace_dot(translated)
    try:
        return re.compile(translated, py_flags)
    except re.error as error:
        raise ValueError(f"invalid regular expression {pattern!r}: {error}") from None


def _replace_dot(source: str) -> str:
    out: list[str] = []
    i = 0
    in_class = False
    while i < len(source):
        ch = source[i]
        if ch == "\\" and i + 1 < len(source):
            out.append(source[i : i + 2])
            i += 2
            continue
        if in_class:
            if ch == "]":
                in_class = False
        elif ch == "[":
            in_class = True
        elif ch == ".":
            out.append("[^\\n\\r\\u2028\\u2029]")
            i += 1
            continue
        out.append(ch)
        i += 1
    return "".join(out)


# ── Entries ───────────────────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class SecretEntry:
    """One of omp's `SecretEntry` values (`secrets.yml` item, environment value or built-in)."""

    type: Literal["plain", "regex"]
    content: str
    mode: Mode = "obfuscate"
    replacement: str | None = None
    flags: str | None = None
    friendly_name: str | None = None
    literal_prefixes: tuple[str, ...] | None = None
    source: str = "secrets.yml"


_B = "(?<![A-Za-z0-9_-])"
_E = "(?![A-Za-z0-9_-])"
#: pi-ai 18.3.4's SENSITIVE_TOKEN_RE (the first built-in pattern).
SENSITIVE_TOKEN_SOURCE = (
    "(?<![a-zA-Z0-9_*-])(gh[opusr]_[a-zA-Z0-9_*]{36,}|github_pat_[a-zA-Z0-9_*]{36,}|glpat-[a-zA-Z0-9_*-]{20,}"
    "|sk-proj-[a-zA-Z0-9_*-]{36,}|sk-ant-[a-zA-Z0-9_*-]{36,}|sk-[a-zA-Z0-9_*-]{48,})(?![a-zA-Z0-9_*-])"
)

#: omp 18.3.4's CREDENTIAL_PATTERNS: (friendly name, source, flags, literal prefixes).
BUILTIN_CREDENTIAL_PATTERNS: tuple[tuple[str, str, str | None, tuple[str, ...]], ...] = (
    (
        "Credential",
        SENSITIVE_TOKEN_SOURCE,
        "i",
        ("gho_", "ghp_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "sk-"),
    ),
    ("AWSAccessKey", f"{_B}(?:AKIA|ASIA)[A-Z0-9]{{16}}{_E}", None, ("AKIA", "ASIA")),
    ("GoogleAPIKey", f"{_B}AIza[A-Za-z0-9_-]{{30,}}{_E}", None, ("AIza",)),
    ("SlackToken", f"{_B}xox[abprs]-[A-Za-z0-9-]{{10,}}{_E}", None, ("xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-")),
    ("NpmToken", f"{_B}npm_[A-Za-z0-9]{{30,}}{_E}", None, ("npm_",)),
    (
        "StripeKey",
        f"{_B}(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{{20,}}{_E}",
        None,
        ("sk_live_", "sk_test_", "rk_live_", "rk_test_"),
    ),
    ("StripeWebhookSecret", f"{_B}whsec_[A-Za-z0-9]{{20,}}{_E}", None, ("whsec_",)),
    ("HuggingFaceToken", f"{_B}hf_[A-Za-z0-9]{{30,}}{_E}", None, ("hf_",)),
    ("SendGridKey", f"{_B}SG\\.[A-Za-z0-9_-]{{22}}\\.[A-Za-z0-9_-]{{43}}{_E}", None, ("SG.",)),
    (
        "JWT",
        f"{_B}eyJ[A-Za-z0-9_-]{{10,}}\\.eyJ[A-Za-z0-9_-]{{10,}}\\.[A-Za-z0-9_-]{{10,}}{_E}",
        None,
        ("eyJ",),
    ),
    ("BearerToken", f"(?<=\\bBearer )[A-Za-z0-9._~+/=-]{{20,}}{_E}", "i", ("Bearer ",)),
    (
        "PrivateKey",
        "-----BEGIN [A-Z ]*PRIVATE KEY-----[\\s\\S]*?-----END [A-Z ]*PRIVATE KEY-----",
        None,
        ("-----BEGIN ",),
    ),
)


def builtin_credential_entries() -> list[SecretEntry]:
    """omp's `builtinCredentialSecretEntries`: every built-in pattern as an obfuscate regex."""
    return [
        SecretEntry(
            "regex", source, "obfuscate", None, flags, name, prefixes, source="builtin"
        )
        for name, source, flags, prefixes in BUILTIN_CREDENTIAL_PATTERNS
    ]


_MIN_ENV_VALUE_LENGTH = 8
_SECRET_ENV_NAME = re.compile(r"(?:KEY|SECRET|TOKEN|PASSWORD|PASS|AUTH|CREDENTIAL|PRIVATE|OAUTH)(?:_|$)", re.I)
_CONNECTION_URL_PASSWORD = re.compile(r"^[a-z][a-z0-9+.-]*://[^/:@?#\s]*:([^/?#\s]+)@", re.I | re.ASCII)


def collect_env_secrets(environ: Mapping[str, str]) -> list[SecretEntry]:
    """omp's `collectEnvSecrets` over `environ` (pass `os.environ` for the live environment)."""
    entries: list[SecretEntry] = []
    seen: set[str] = set()
    for name, value in environ.items():
        if not value or len(value) < _MIN_ENV_VALUE_LENGTH or not _SECRET_ENV_NAME.search(name):
            continue
        if value in seen:
            continue
        seen.add(value)
        entries.append(SecretEntry("plain", value, source=f"env:{name}"))
    for name, value in environ.items():
        match = _CONNECTION_URL_PASSWORD.match(value or "")
        if not match:
            continue
        password = match.group(1)
        if len(password) >= _MIN_ENV_VALUE_LENGTH and password not in seen:
            seen.add(password)
            entries.append(SecretEntry("plain", password, source=f"env:{name}"))
        try:
            decoded = unquote(password, errors="strict")
        except UnicodeDecodeError:
            continue
        if decoded != password and len(decoded) >= _MIN_ENV_VALUE_LENGTH and decoded not in seen:
            seen.add(decoded)
            entries.append(SecretEntry("plain", decoded, source=f"env:{name}"))
    return entries


def _parse_yaml(text: str, path: Path) -> Any:
    try:
        import yaml
    except ImportError:  # pragma: no cover - the `redact` extra installs it
        raise SecretsConfigError(
            f"{path}: reading secrets.yml needs PyYAML (pip install 'omp-session[redact]')"
        ) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise SecretsConfigError(f"{path}: not valid YAML: {error}") from None


def _load_secrets_file(path: Path, warnings: list[str]) -> list[SecretEntry]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    raw = _parse_yaml(text, path)
    if not isinstance(raw, list):
        warnings.append(f"{path}: secrets.yml must be a YAML array")
        return []
    entries: list[SecretEntry] = []
    for index, item in enumerate(raw):
        problem = _validate_entry(item)
        if problem:
            warnings.append(f"{path}[{index}]: {problem}")
            continue
        assert isinstance(item, dict)
        friendly = item.get("friendlyName")
        if friendly is not None and (not isinstance(friendly, str) or _sanitize_friendly_name(friendly) is None):
            warnings.append(f"{path}[{index}]: friendlyName must be a string with a letter or digit")
            friendly = None
        entries.append(
            SecretEntry(
                item["type"],
                item["content"],
                item.get("mode") or "obfuscate",
                item.get("replacement"),
                item.get("flags"),
                friendly,
                source=str(path),
            )
        )
    return entries


def _validate_entry(item: object) -> str | None:
    if not isinstance(item, dict):
        return "entry must be an object"
    if item.get("type") not in ("plain", "regex"):
        return 'type must be "plain" or "regex"'
    content = item.get("content")
    if not isinstance(content, str) or not content:
        return "content must be a non-empty string"
    if item.get("mode") not in (None, "obfuscate", "replace"):
        return 'mode must be "obfuscate" or "replace"'
    if item.get("replacement") is not None and not isinstance(item.get("replacement"), str):
        return "replacement must be a string"
    if item.get("flags") is not None and not isinstance(item.get("flags"), str):
        return "flags must be a string"
    if item["type"] == "regex":
        try:
            regex = compile_js_regex(content, item.get("flags"))
        except ValueError:
            return "invalid regex pattern"
        if (item.get("mode") or "obfuscate") == "replace" and item.get("replacement") is None:
            if _regex_has_unresolvable_short_match_fallback(regex):
                return "regex matches every 1-2 character candidate with no custom replacement"
    return None


def load_secrets(cwd: str | os.PathLike[str], agent_dir: str | os.PathLike[str],
                 warnings: list[str] | None = None) -> list[SecretEntry]:
    """omp's `loadSecrets`: global then project `secrets.yml`, project entries overriding global
    ones with the same content. Problems omp only warns about are appended to `warnings`."""
    sink = warnings if warnings is not None else []
    global_entries = _load_secrets_file(Path(agent_dir) / "secrets.yml", sink)
    project_entries = _load_secrets_file(Path(cwd) / ".omp" / "secrets.yml", sink)
    if not global_entries:
        return project_entries
    if not project_entries:
        return global_entries
    project_contents = {entry.content for entry in project_entries}
    return [e for e in global_entries if e.content not in project_contents] + project_entries


def build_omp_entries(
    cwd: str | os.PathLike[str] | None,
    agent_dir: str | os.PathLike[str] | None,
    environ: Mapping[str, str] | None,
    warnings: list[str] | None = None,
) -> list[SecretEntry]:
    """The entries `buildSecretObfuscator` composes: environment, secrets.yml, built-ins."""
    env_entries = collect_env_secrets(environ) if environ is not None else []
    file_entries = load_secrets(cwd, agent_dir, warnings) if cwd is not None and agent_dir is not None else []
    return [*env_entries, *file_entries, *builtin_credential_entries()]


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
    """omp's `generateDeterministicReplacement` (a `ZZ` sentinel, then wyhash-seeded characters)."""
    length = len(secret)
    if length == 0:
        return ""
    h = wyhash(secret.encode("utf-8", "surrogatepass"))
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


def _regex_has_unresolvable_short_match_fallback(regex: re.Pattern[str]) -> bool:
    for length in (1, 2):
        probe = "\0" * length
        if _find_nonmatching(probe, regex, probe, 0, length) is None:
            return True
    return False


@dataclass
class _Regex:
    regex: re.Pattern[str]
    mode: Mode
    replacement: str | None
    friendly_name: str | None
    probes: tuple[str, ...] | None
    ignore_case: bool
    entry: SecretEntry


@dataclass(frozen=True)
class OmpObfuscation:
    """One value an obfuscate pass replaced: the value, what it became, and the entry behind it."""

    value: str
    output: str
    entry: SecretEntry


@dataclass
class _Segment:
    scan_start: int
    scan_end: int
    text_start: int
    text_end: int
    placeholder: bool


@dataclass
class OmpSecretObfuscator:
    """A port of omp 18.3.4's `SecretObfuscator` for text without earlier placeholders.

    `obfuscate(text)` returns exactly what omp's `obfuscate` returns for the same entries and key;
    `replaced` records, per call, every value replaced and the entry that matched it."""

    entries: list[SecretEntry]
    key: str
    _plain: dict[str, int] = field(default_factory=dict)
    _regexes: list[_Regex] = field(default_factory=list)
    _mappings: dict[int, tuple[str, str, SecretEntry]] = field(default_factory=dict)
    _replace: dict[str, tuple[str, SecretEntry | None]] = field(default_factory=dict)
    _deobfuscate: dict[str, str] = field(default_factory=dict)
    _configured: set[str] = field(default_factory=set)
    _current_regex_values: set[str] = field(default_factory=set)
    _base_by_key: dict[str, str] = field(default_factory=dict)
    _base_owners: dict[str, str] = field(default_factory=dict)
    _next_index: int = 0
    replaced: list[OmpObfuscation] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._replace[self.key] = (_ensure_distinct(generate_deterministic_replacement(self.key), self.key), None)
        self._configured.add(self.key)
        for entry in self.entries:
            if entry.type == "plain":
                self._configured.add(entry.content)
                continue
            try:
                regex = compile_js_regex(entry.content, entry.flags)
            except ValueError:
                continue
            if entry.mode == "replace" and entry.replacement is None:
                if _regex_has_unresolvable_short_match_fallback(regex):
                    continue
            ignore_case = bool(regex.flags & re.IGNORECASE)
            prefixes = entry.literal_prefixes
            probes = (
                tuple(p.lower() if ignore_case else p for p in prefixes)
                if prefixes and all(prefixes)
                else None
            )
            self._regexes.append(_Regex(regex, entry.mode, entry.replacement, entry.friendly_name, probes,
                                        ignore_case, entry))
        index = 0
        for entry in self.entries:
            if entry.type != "plain":
                continue
            if entry.mode == "obfuscate":
                if _js_length(entry.content) < _MIN_OBFUSCATE_LEN:
                    continue
                placeholder = self._create_placeholder(entry.content, entry.friendly_name)
                self._plain[entry.content] = index
                self._mappings[index] = (entry.content, placeholder, entry)
                index += 1
            else:
                replacement = entry.replacement
                if replacement is None:
                    replacement = _ensure_distinct(generate_deterministic_replacement(entry.content), entry.content)
                self._replace[entry.content] = (replacement, entry)
        self._next_index = index

    # placeholders

    def _create_placeholder(self, secret: str, friendly_name: str | None) -> str:
        hint = infer_case_hint(secret)
        requested = _sanitize_friendly_name(friendly_name) if friendly_name else None
        sanitized = (
            requested
            if requested is not None
            and friendly_name is not None
            and not self._friendly_collides(_sanitize_for_collision(friendly_name), friendly_name, secret)
            else None
        )
        preferred = _build_placeholder(hint, self._preferred_base(secret), sanitized)
        if not self._conflicts(preferred, secret):
            self._register(preferred, secret)
            return preferred
        attempt = 1
        while True:
            base = self._fallback_base(secret, attempt)
            placeholder = _build_placeholder(hint, base, sanitized)
            if not self._conflicts(placeholder, secret):
                self._register(placeholder, secret)
                return placeholder
            attempt += 1

    def _preferred_base(self, key: str) -> str:
        existing = self._base_by_key.get(key)
        if existing is not None:
            return existing
        attempt = 0
        while True:
            base = build_hash_base(self.key, key if attempt == 0 else f"{key}\0{attempt}")
            owner = self._base_owners.get(base)
            if owner is None or owner == key:
                self._base_owners[base] = key
                self._base_by_key[key] = base
                return base
            attempt += 1

    def _fallback_base(self, key: str, start: int) -> str:
        attempt = start
        while True:
            owner = f"{key}\0collision\0{attempt}"
            base = build_hash_base(self.key, owner)
            if base not in self._base_owners:
                self._base_owners[base] = owner
                return base
            attempt += 1

    def _collides(self, placeholder: str, secret: str) -> bool:
        existing = self._deobfuscate.get(placeholder)
        return existing is not None and existing != secret

    def _conflicts(self, placeholder: str, secret: str) -> bool:
        if self._collides(placeholder, secret):
            return True
        if placeholder in self._configured and placeholder != secret:
            return True
        bare = _unprefixed(placeholder)
        if bare is None:
            return False
        return self._collides(bare, secret) or (bare in self._configured and bare != secret)

    def _register(self, placeholder: str, secret: str) -> None:
        if self._deobfuscate.get(placeholder, secret) == secret:
            self._deobfuscate[placeholder] = secret
        bare = _unprefixed(placeholder)
        if bare is not None and self._deobfuscate.get(bare, secret) == secret:
            self._deobfuscate[bare] = secret

    def _prefix_is_secret_shaped(self, prefix: str) -> bool:
        for value in self._configured:
            if _label_collides(prefix, _sanitize_for_collision(value)):
                return True
        for value in self._current_regex_values:
            if _label_collides(prefix, _sanitize_for_collision(value)):
                return True
        for secret, _placeholder, _entry in self._mappings.values():
            if _label_collides(prefix, _sanitize_for_collision(secret)):
                return True
        return any(entry.regex.search(prefix) for entry in self._regexes)

    def _friendly_collides(self, sanitized: str, raw: str, secret: str) -> bool:
        if self._prefix_is_secret_shaped(sanitized):
            return True
        if _label_collides(sanitized, _sanitize_for_collision(secret)):
            return True
        return any(entry.regex.search(raw) for entry in self._regexes)

    def _for_current_input(self, placeholder: str) -> str:
        bare = _unprefixed(placeholder)
        if bare is None:
            return placeholder
        match = re.match(r"^([A-Z0-9]+)_", placeholder[2:-2])
        if match is None or not self._prefix_is_secret_shaped(match.group(1)):
            return placeholder
        return bare

    def _is_generated(self, placeholder: str) -> bool:
        if placeholder in self._deobfuscate:
            return True
        match = _PREFIXED_BODY_RE.match(placeholder[2:-2])
        if match is None or self._prefix_is_secret_shaped(match.group(1)):
            return False
        return f"$${match.group(2)}$$" in self._deobfuscate

    def _lookup(self, placeholder: str) -> str | None:
        direct = self._deobfuscate.get(placeholder)
        if direct is not None:
            return direct
        bare = _unprefixed(placeholder)
        return self._deobfuscate.get(bare) if bare is not None else None

    def _known_ranges(self, text: str) -> list[tuple[int, int]]:
        ranges: list[tuple[int, int]] = []
        pos = 0
        while True:
            match = _search(_PLACEHOLDER_RE, text, pos)
            if match is None:
                return ranges
            if self._is_generated(match.group(0)):
                ranges.append((match.start(), match.end()))
                pos = match.end()
            else:
                pos = match.end() - 2

    # the pass

    def _may_match(self, entry: _Regex, text: str) -> bool:
        if entry.probes is None:
            return True
        haystack = text.lower() if entry.ignore_case else text
        return any(probe in haystack for probe in entry.probes)

    def _regex_values(self, text: str) -> set[str]:
        values: set[str] = set()
        for entry in self._regexes:
            if not self._may_match(entry, text):
                continue
            for match in entry.regex.finditer(text):
                if match.group(0):
                    values.add(match.group(0))
        return values

    def collect_regex_secret_values(self, text: str) -> set[str]:
        """omp's `collectRegexSecretValuesForObfuscation` (without the replace-regex simulation)."""
        values = self._regex_values(text)
        replaced = self._apply_replace_phase(text, record=False)
        values |= self._regex_values(replaced)
        return values

    def _apply_replace_phase(self, text: str, *, record: bool) -> str:
        result = text
        for secret, (replacement, entry) in sorted(self._replace.items(), key=lambda kv: -_js_length(kv[0])):
            if secret and secret in result:
                if record:
                    self.replaced.append(
                        OmpObfuscation(secret, replacement, entry or SecretEntry("plain", secret, "replace",
                                                                                 source="placeholder-key"))
                    )
                result = self._replace_outside(result, secret, replacement)
        return result

    def _replace_outside(self, text: str, search: str, replacement: str) -> str:
        out: list[str] = []
        pending = 0
        for start, end in self._known_ranges(text):
            if text[start:end] == search:
                continue
            out.append(text[pending:start].replace(search, replacement))
            out.append(text[start:end])
            pending = end
        out.append(text[pending:].replace(search, replacement))
        return "".join(out)

    def obfuscate(self, text: str, shared_regex_values: Iterable[str] = ()) -> str:
        """The text with every secret replaced, as omp's `SecretObfuscator.obfuscate` returns it."""
        shared = set(shared_regex_values)
        self._current_regex_values = self.collect_regex_secret_values(text) | shared
        result = self._apply_replace_phase(text, record=True)
        self._current_regex_values |= self._regex_values(result)
        result = self._strip_unsafe_prefixes(result)
        for secret, index in sorted(self._plain.items(), key=lambda kv: -_js_length(kv[0])):
            value, placeholder, entry = self._mappings[index]
            current = self._for_current_input(placeholder)
            if secret in result:
                before = result
                result = self._replace_outside(result, secret, current)
                if result != before:
                    self.replaced.append(OmpObfuscation(value, current, entry))
        for entry in self._regexes:
            if not self._may_match(entry, result):
                continue
            result = self._apply_regex(entry, result)
            if entry.mode == "replace":
                self._current_regex_values |= self._regex_values(result)
        self._current_regex_values = set()
        return result

    def _strip_unsafe_prefixes(self, text: str) -> str:
        out: list[str] = []
        cursor = 0
        pos = 0
        while True:
            match = _search(_PLACEHOLDER_RE, text, pos)
            if match is None:
                break
            placeholder = match.group(0)
            replacement = self._for_current_input(placeholder) if _unprefixed(placeholder) else placeholder
            if replacement == placeholder:
                pos = match.end() - 2
                continue
            out.append(text[cursor : match.start()])
            out.append(replacement)
            cursor = pos = match.end()
        out.append(text[cursor:])
        return "".join(out)

    def _scan(self, text: str) -> tuple[str, list[_Segment], list[tuple[int, int]]]:
        ranges = self._known_ranges(text)
        scan: list[str] = []
        segments: list[_Segment] = []
        length = 0
        cursor = 0

        def append(value: str, start: int, end: int, placeholder: bool) -> None:
            nonlocal length
            if not value:
                return
            segments.append(_Segment(length, length + len(value), start, end, placeholder))
            scan.append(value)
            length += len(value)

        for start, end in ranges:
            append(text[cursor:start], cursor, start, False)
            placeholder = text[start:end]
            append(self._lookup(placeholder) or placeholder, start, end, True)
            cursor = end
        append(text[cursor:], cursor, len(text), False)
        return "".join(scan), segments, ranges

    @staticmethod
    def _segment_at(segments: list[_Segment], index: int) -> _Segment:
        for segment in segments:
            if segment.scan_start <= index < segment.scan_end:
                return segment
        raise AssertionError("regex match did not map to source text")

    def _map(self, segments: list[_Segment], start: int, end: int) -> tuple[int, int, bool, bool, int, int]:
        first = self._segment_at(segments, start)
        last = self._segment_at(segments, end - 1)
        text_start = first.text_start if first.placeholder else first.text_start + (start - first.scan_start)
        text_end = last.text_end if last.placeholder else last.text_start + (end - last.scan_start)
        cut = (first.placeholder and start > first.scan_start) or (last.placeholder and end < last.scan_end)
        preserve = False
        resume = start
        first_placeholder = -1
        for segment in segments:
            if segment.scan_start >= end or segment.scan_end <= start:
                continue
            if segment.placeholder:
                preserve = True
                if first_placeholder == -1:
                    first_placeholder = segment.scan_start
                resume = max(resume, segment.scan_end)
        return text_start, text_end, cut, preserve, resume, first_placeholder

    @staticmethod
    def _past_adjacent(segments: list[_Segment], index: int) -> int:
        cursor = index
        while True:
            for segment in segments:
                if segment.scan_start == cursor and segment.placeholder:
                    cursor = segment.scan_end
                    break
            else:
                return cursor

    def _apply_regex(self, entry: _Regex, text: str) -> str:
        scan, segments, ranges = self._scan(text)
        regex = entry.regex
        matches: list[tuple[int, int, str, int, bool, str | None, int, int]] = []
        pos = 0
        while True:
            match = _search(regex, scan, pos)
            if match is None:
                break
            if match.end() == match.start():
                pos = match.end() + 1
                continue
            pos = match.end()
            s_start, s_end = match.start(), match.end()
            scan_value = match.group(0)
            scan_length = len(scan_value)
            t_start, t_end, cut, preserve, resume, first_ph = self._map(segments, s_start, s_end)
            if cut:
                handled = False
                if first_ph > match.start():
                    prefix = _search(regex, scan, match.start())
                    if prefix is not None and prefix.group(0) and prefix.start() < first_ph:
                        p_start, p_end = prefix.start(), min(prefix.end(), first_ph)
                        mapped = self._map(segments, p_start, p_end)
                        if not mapped[2] and p_end > p_start:
                            s_start, s_end = p_start, p_end
                            scan_value = scan[p_start:p_end]
                            t_start, t_end, cut, preserve = mapped[0], mapped[1], mapped[2], mapped[3]
                            pos = self._past_adjacent(segments, p_end)
                            handled = True
                if not handled and resume < s_end:
                    mapped = self._map(segments, resume, s_end)
                    if not mapped[2]:
                        s_start = resume
                        scan_value = scan[resume:s_end]
                        t_start, t_end, cut, preserve = mapped[0], mapped[1], mapped[2], mapped[3]
                        pos = self._past_adjacent(segments, s_end)
                        handled = True
                if not handled:
                    pos = self._past_adjacent(segments, resume)
                    continue
            if entry.mode == "replace":
                canonical = scan_value
            else:
                if any(t_start >= a and t_end <= b for a, b in ranges if t_start < b and t_end > a):
                    continue
                canonical = self._canonical(text, t_start, t_end, ranges)
            default = None
            if entry.mode == "replace" and entry.replacement is None and not preserve:
                default = self._regex_replacement(scan_value, regex, scan, s_start, s_end)
            matches.append((t_start, t_end, canonical, scan_length, preserve, default, s_start, s_end))
        result = text
        for t_start, t_end, canonical, scan_length, preserve, default, s_start, s_end in reversed(matches):
            if entry.mode == "replace":
                if preserve:
                    span = result[t_start:t_end]
                    redacted = (
                        self._fixed_outside(span, entry.replacement)
                        if entry.replacement is not None
                        else self._chunks_outside(span, regex, scan, s_start)
                    )
                    self.replaced.append(OmpObfuscation(canonical, redacted, entry.entry))
                    result = result[:t_start] + redacted + result[t_end:]
                else:
                    replacement = entry.replacement if entry.replacement is not None else default
                    assert replacement is not None
                    self.replaced.append(OmpObfuscation(canonical, replacement, entry.entry))
                    result = result[:t_start] + replacement + result[t_end:]
                continue
            if scan_length < _MIN_OBFUSCATE_LEN:
                continue
            index = self._find_index(canonical)
            if index is None:
                index = self._next_index
                self._next_index += 1
                self._mappings[index] = (canonical, self._create_placeholder(canonical, entry.friendly_name),
                                         entry.entry)
            placeholder = self._for_current_input(self._mappings[index][1])
            self.replaced.append(OmpObfuscation(canonical, placeholder, entry.entry))
            result = result[:t_start] + placeholder + result[t_end:]
        return result

    def _canonical(self, text: str, start: int, end: int, ranges: list[tuple[int, int]]) -> str:
        out: list[str] = []
        cursor = start
        for a, b in ranges:
            if b <= start or a >= end:
                continue
            lo, hi = max(a, start), min(b, end)
            out.append(text[cursor:lo])
            placeholder = text[lo:hi]
            out.append(self._lookup(placeholder) or placeholder)
            cursor = hi
        out.append(text[cursor:end])
        return "".join(out)

    def _find_index(self, secret: str) -> int | None:
        if secret in self._plain:
            return self._plain[secret]
        for index, (value, _placeholder, _entry) in self._mappings.items():
            if value == secret:
                return index
        return None

    def _regex_replacement(self, value: str, regex: re.Pattern[str], scan: str, start: int, end: int) -> str:
        replacement = generate_deterministic_replacement(value)
        if replacement == value or _rematches_in_context(replacement, regex, scan, start, end):
            stable = _find_nonmatching(value, regex, scan, start, end)
            if stable is not None:
                return stable
            if len(value) <= 2:
                return build_keyed_replacement_run(self.key, len(value))
            return self._chunk_marker(value)
        return replacement

    def _chunk_marker(self, chunk: str) -> str:
        if len(chunk) <= 2:
            return "Z" * len(chunk)
        return "ZZ" + build_keyed_replacement_run(self.key, len(chunk) - 2)

    def _outside_pieces(self, span: str) -> list[tuple[bool, str]]:
        pieces: list[tuple[bool, str]] = []
        pending = 0
        for start, end in self._known_ranges(span):
            pieces.append((False, span[pending:start]))
            pieces.append((True, span[start:end]))
            pending = end
        pieces.append((False, span[pending:]))
        return pieces

    def _fixed_outside(self, span: str, replacement: str) -> str:
        emitted = False
        out: list[str] = []
        for is_placeholder, piece in self._outside_pieces(span):
            if is_placeholder:
                out.append(piece)
            elif piece:
                if not emitted:
                    emitted = True
                    out.append(replacement)
                elif replacement.startswith(piece):
                    out.append(replacement)
        return "".join(out)

    def _chunks_outside(self, span: str, regex: re.Pattern[str], scan: str, scan_start: int) -> str:
        cursor = scan_start
        out: list[str] = []
        for is_placeholder, piece in self._outside_pieces(span):
            if is_placeholder:
                cursor += len(self._lookup(piece) or piece)
                out.append(piece)
                continue
            start = cursor
            cursor += len(piece)
            if not piece:
                continue
            marker = self._chunk_marker(piece)
            if _rematches_in_context(marker, regex, scan, start, cursor):
                stable = _find_nonmatching(piece, regex, scan, start, cursor)
                if stable is not None:
                    marker = stable
            out.append(marker)
        return "".join(out)
