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
   deterministic same-length scramble seeded with Bun's hash (wyhash) of the secret;
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

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote

from omp_session.errors import SecretsConfigError
from omp_session.tools.omp_replacement import (
    _sanitize_friendly_name,
    regex_has_unresolvable_short_match_fallback,
)

__all__ = [
    "BUILTIN_CREDENTIAL_PATTERNS",
    "SecretEntry",
    "SecretsConfigError",
    "build_omp_entries",
    "builtin_credential_entries",
    "collect_env_secrets",
    "compile_js_regex",
    "load_secrets",
]

Mode = Literal["obfuscate", "replace"]


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
    (
        "SlackToken",
        f"{_B}xox[abprs]-[A-Za-z0-9-]{{10,}}{_E}",
        None,
        ("xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-"),
    ),
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
        SecretEntry("regex", source, "obfuscate", None, flags, name, prefixes, source="builtin")
        for name, source, flags, prefixes in BUILTIN_CREDENTIAL_PATTERNS
    ]


_MIN_ENV_VALUE_LENGTH = 8
_SECRET_ENV_NAME = re.compile(
    r"(?:KEY|SECRET|TOKEN|PASSWORD|PASS|AUTH|CREDENTIAL|PRIVATE|OAUTH)(?:_|$)", re.I
)
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
        if friendly is not None and (
            not isinstance(friendly, str) or _sanitize_friendly_name(friendly) is None
        ):
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
        replace = (item.get("mode") or "obfuscate") == "replace"
        if replace and item.get("replacement") is None and regex_has_unresolvable_short_match_fallback(regex):
            return "regex matches every 1-2 character candidate with no custom replacement"
    return None


def load_secrets(
    cwd: str | os.PathLike[str], agent_dir: str | os.PathLike[str], warnings: list[str] | None = None
) -> list[SecretEntry]:
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
