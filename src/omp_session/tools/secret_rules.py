"""omp-session's own table of secret shapes, applied on top of omp's rules (internal; the public
name is `omp_session.redact`, the table is documented in docs/sharing.md).

Each rule is one documented token shape with a confidence:

- ``high``: a vendor prefix or an armoured block that nothing else has (``ghp_…``, ``AKIA…``,
  ``-----BEGIN … PRIVATE KEY-----``);
- ``medium``: a shape that needs its context (a password in a URL, the value after
  ``Authorization: Bearer``, a quoted ``password = "…"``);
- ``low``: a high-entropy value assigned to a secret-sounding name (``FOO_TOKEN=…``), the tier that
  can be wrong both ways.

A rule masks either its whole match or one group of it (the password of a database URL, not the
URL). Validators reject the near misses a shape alone would take: placeholders such as
``${DB_PASSWORD}`` or ``<password>``, words joined by dashes, UUIDs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

__all__ = ["CONFIDENCE_ORDER", "RULES", "Confidence", "Rule", "looks_random", "shannon_entropy"]

Confidence = Literal["high", "medium", "low"]
CONFIDENCE_ORDER: dict[str, int] = {"high": 0, "medium": 1, "low": 2}


@dataclass(frozen=True)
class Rule:
    """One token shape: its kind (the placeholder's name), confidence, pattern and masked group."""

    kind: str
    confidence: Confidence
    description: str
    pattern: re.Pattern[str]
    group: int = 0
    validate: Callable[[str], bool] | None = None
    #: Lower-case substrings at least one of which every match contains: a text holding none is
    #: not searched (a search costs ~50 µs per 500 characters, a substring test a fraction).
    probes: tuple[str, ...] = ()


def shannon_entropy(text: str) -> float:
    """Bits per character of ``text``'s own character distribution."""
    if not text:
        return 0.0
    counts: dict[str, int] = {}
    for ch in text:
        counts[ch] = counts.get(ch, 0) + 1
    total = len(text)
    return -sum(c / total * math.log2(c / total) for c in counts.values())


_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_PLACEHOLDER_VALUE = re.compile(
    r"""^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|<[^>]*>|\{\{.*\}\}|%\(?[A-Za-z_]+\)?s?|\*+|x+|X+|\.\.\.+|…
    |(?i:password|passwd|secret|changeme|example|placeholder|redacted|your[-_]?\w*|none|null|true|false|
    undefined|test|dummy|sample|xxx+)|\[REDACTED[^\]]*\]|\$\$[A-Z0-9_:]+\$\$)$""",
    re.VERBOSE,
)


def looks_random(value: str, *, min_entropy: float = 3.0) -> bool:
    """A token that looks generated rather than written: at least two character classes among
    upper, lower and digits, no run of dictionary-like lowercase words only, and enough entropy."""
    classes = sum(bool(re.search(p, value)) for p in ("[A-Z]", "[a-z]", "[0-9]"))
    if classes < 2:
        return False
    if re.fullmatch(r"[a-z]+(?:[-_.][a-z]+)*[-_.]?[0-9]{0,4}", value):
        return False
    parts = [part for part in re.split(r"[-_.]", value) if part]
    if len(parts) >= 3 and sum(part.isalpha() and part.islower() for part in parts) * 4 >= len(parts) * 3:
        return False  # words joined by separators: a name, not a key
    return shannon_entropy(value) >= min_entropy


def _not_placeholder(value: str) -> bool:
    return not _PLACEHOLDER_VALUE.match(value.strip("\"'\\"))


_CONSTANT_NAME = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
_CAMEL_WORDS = re.compile(r"^[A-Za-z][a-z]+(?:[A-Z][a-z]+)+$")
_DOTTED_NAME = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)+$")


def _secret_value(value: str) -> bool:
    """A value that can be a password: not a placeholder, not an environment variable's name
    (``GOOGLE_CLOUD_PROJECT``), not one lower-case word (``keyless``)."""
    if len(value) < 6 or not _not_placeholder(value) or value.startswith(("$", "%", "{{")):
        return False
    if _CONSTANT_NAME.match(value):
        return False
    return not (value.isalpha() and value.islower())


def _high_entropy(value: str) -> bool:
    """The lowest tier: a value with a digit among its letters (a CamelCase type name such as
    ``ColorValueSchema`` is not one), not a UUID, path or URL, 3.5+ bits per character."""
    return (
        _not_placeholder(value)
        and not _UUID.match(value)
        and not value.startswith(("/", "./", "http", "[REDACTED"))
        and any(c.isdigit() for c in value)
        and not _CAMEL_WORDS.match(value)
        and not _DOTTED_NAME.match(value)
        and looks_random(value, min_entropy=3.5)
    )


def _random_body(value: str) -> bool:
    body = value.split("-", 1)[1] if value.startswith("sk-") else value
    return looks_random(body.replace("proj-", "", 1), min_entropy=3.2)


_L = r"(?<![A-Za-z0-9_-])"  # the token starts here
_R = r"(?![A-Za-z0-9_-])"  # and ends here
_Q = r"""\\*["'`]?"""  # an optional quote, possibly escaped (JSON inside a JSON string)


def _rx(source: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(source, flags | re.ASCII)


RULES: tuple[Rule, ...] = (
    Rule(
        "private-key",
        "high",
        "PEM or OpenSSH private key block, BEGIN to END (any algorithm, PGP blocks included)",
        _rx(
            r"-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----[\s\S]*?"
            r"-----END ([A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----"
        ),
        probes=("private key",),
    ),
    Rule(
        "private-key",
        "high",
        "the start of a private key block whose END was cut off (the armour line and the body after it)",
        _rx(r"-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----(?:[A-Za-z0-9+/=\s:,-]|\\[nr])+"),
        probes=("private key",),
    ),
    Rule(
        "anthropic-key",
        "high",
        "Anthropic API, admin or OAuth key: sk-ant-…",
        _rx(_L + r"sk-ant-[A-Za-z0-9_-]{20,}" + _R),
        probes=("sk-ant-",),
    ),
    Rule(
        "openai-key",
        "high",
        "OpenAI key: sk-, sk-proj-, sk-svcacct-, sk-admin- and at least 20 random characters",
        _rx(_L + r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}" + _R),
        validate=_random_body,
        probes=("sk-",),
    ),
    Rule(
        "github-token",
        "high",
        "GitHub token: ghp_/gho_/ghu_/ghs_/ghr_ and 36+ characters, or github_pat_…",
        _rx(
            r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})(?![A-Za-z0-9_])"
        ),
        probes=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    Rule(
        "gitlab-token",
        "high",
        "GitLab personal, pipeline-trigger or deploy token: glpat-/glptt-/gldt- and 20+ characters",
        _rx(_L + r"gl(?:pat|ptt|dt|rt|cbt|soat)-[A-Za-z0-9_-]{20,}" + _R),
        probes=("glpat-", "glptt-", "gldt-", "glrt-", "glcbt-", "glsoat-"),
    ),
    Rule(
        "slack-token",
        "high",
        "Slack token: xoxa-/xoxb-/xoxp-/xoxr-/xoxs-/xoxe- and 10+ characters",
        _rx(_L + r"xox[abeprs]-[A-Za-z0-9-]{10,}" + _R),
        probes=("xoxa-", "xoxb-", "xoxe-", "xoxp-", "xoxr-", "xoxs-"),
    ),
    Rule(
        "slack-webhook",
        "high",
        "the secret part of a Slack incoming-webhook URL",
        _rx(r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9]+/[A-Za-z0-9]+/([A-Za-z0-9]{16,})"),
        group=1,
        probes=("hooks.slack.com",),
    ),
    Rule(
        "stripe-key",
        "high",
        "Stripe secret or restricted key: sk_live_/sk_test_/rk_live_/rk_test_ (pk_ keys are public)",
        _rx(_L + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}" + _R),
        probes=("_live_", "_test_"),
    ),
    Rule(
        "stripe-webhook-secret",
        "high",
        "Stripe webhook signing secret: whsec_…",
        _rx(_L + r"whsec_[A-Za-z0-9+/=]{20,}" + _R),
        probes=("whsec_",),
    ),
    Rule(
        "google-api-key",
        "high",
        "Google API key: AIza and 35 characters",
        _rx(_L + r"AIza[A-Za-z0-9_-]{35}" + _R),
        probes=("aiza",),
    ),
    Rule(
        "google-oauth-secret",
        "high",
        "Google OAuth client secret: GOCSPX-…",
        _rx(_L + r"GOCSPX-[A-Za-z0-9_-]{24,}" + _R),
        probes=("gocspx-",),
    ),
    Rule(
        "aws-access-key-id",
        "high",
        "AWS access key id: AKIA/ASIA/ABIA/ACCA and 16 upper-case letters or digits",
        _rx(r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
        probes=("akia", "asia", "abia", "acca"),
    ),
    Rule(
        "aws-secret-access-key",
        "high",
        "AWS secret access key: 40 base64 characters assigned to a *secret_access_key name",
        _rx(
            r"(?i:aws_?secret_?access_?key|secret_?access_?key|aws_?secret_?key|SecretAccessKey)"
            + _Q
            + r"\s*[:=]\s*"
            + _Q
            + r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
        group=1,
        probes=("secret", "akia", "asia", "redacted:aws"),
    ),
    Rule(
        "aws-secret-access-key",
        "high",
        "AWS secret access key: 40 base64 characters right after an access key id (a key pair)",
        _rx(
            r"(?:(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}|\[REDACTED:aws-access-key-id#[0-9]+\])"
            r"(?:[\s,;:|=\"'\\]|\\[nt]){1,12}"
            r"(?:[A-Za-z_ ]{0,40}[:=]\s*[\"'\\]*)?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
        group=1,
        validate=lambda v: looks_random(v, min_entropy=3.5),
        probes=("secret", "akia", "asia", "redacted:aws"),
    ),
    Rule(
        "jwt",
        "high",
        "JSON Web Token: three base64url parts, the first two starting eyJ",
        _rx(_L + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.(?:[A-Za-z0-9_-]{8,})?" + _R),
        probes=("eyj",),
    ),
    Rule(
        "npm-token",
        "high",
        "npm access token: npm_ and 36 characters",
        _rx(_L + r"npm_[A-Za-z0-9]{36}" + _R),
        probes=("npm_",),
    ),
    Rule(
        "huggingface-token",
        "high",
        "Hugging Face token: hf_ and 30+ characters",
        _rx(_L + r"hf_[A-Za-z0-9]{30,}" + _R),
        probes=("hf_",),
    ),
    Rule(
        "sendgrid-key",
        "high",
        "SendGrid API key: SG.<22>.<43>",
        _rx(_L + r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}" + _R),
        probes=("sg.",),
    ),
    Rule(
        "pypi-token",
        "high",
        "PyPI upload token: pypi-AgEIcHlwaS5vcmc…",
        _rx(_L + r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}" + _R),
        probes=("pypi-",),
    ),
    Rule(
        "digitalocean-token",
        "high",
        "DigitalOcean token: dop_v1_/doo_v1_/dor_v1_ and 64 hex digits",
        _rx(_L + r"do[opr]_v1_[a-f0-9]{64}" + _R),
        probes=("_v1_",),
    ),
    Rule(
        "shopify-token",
        "high",
        "Shopify token: shpat_/shpss_/shpca_/shppa_ and 32 hex digits",
        _rx(_L + r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}" + _R),
        probes=("shpat_", "shpss_", "shpca_", "shppa_"),
    ),
    Rule(
        "age-secret-key",
        "high",
        "age encryption secret key: AGE-SECRET-KEY-1…",
        _rx(r"AGE-SECRET-KEY-1[0-9A-Z]{58}"),
        probes=("age-secret-key-1",),
    ),
    Rule(
        "discord-webhook",
        "high",
        "the token of a Discord webhook URL",
        _rx(r"https://(?:canary\.|ptb\.)?discord(?:app)?\.com/api/webhooks/[0-9]+/([A-Za-z0-9_-]{50,})"),
        group=1,
        probes=("/api/webhooks/",),
    ),
    Rule(
        "telegram-bot-token",
        "high",
        "Telegram bot token: bot id, colon, AA and 33 characters",
        _rx(r"(?<![0-9])[0-9]{8,10}:AA[A-Za-z0-9_-]{33}" + _R),
        probes=(":aa",),
    ),
    Rule(
        "twilio-key",
        "high",
        "Twilio API key sid: SK and 32 hex digits",
        _rx(r"(?<![A-Za-z0-9])SK[0-9a-f]{32}(?![A-Za-z0-9])"),
        probes=("sk",),
    ),
    Rule(
        "hashicorp-vault-token",
        "high",
        "HashiCorp Vault service token: hvs. and 90+ characters",
        _rx(_L + r"hvs\.[A-Za-z0-9_-]{90,}" + _R),
        probes=("hvs.",),
    ),
    Rule(
        "azure-storage-key",
        "high",
        "Azure storage account key in a connection string (AccountKey=…)",
        _rx(r"AccountKey=([A-Za-z0-9+/]{86}==)"),
        group=1,
        probes=("accountkey=",),
    ),
    Rule(
        "database-password",
        "high",
        "password in a database URL: postgres/mysql/mongodb/redis/amqp/…://user:PASSWORD@host",
        _rx(
            r"(?i:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?|mssql|sqlserver|oracle"
            r"|cockroachdb|clickhouse|jdbc:[a-z]+|couchdb|neo4j(?:\+s)?|snowflake)://[^\s:/@'\"\\]*:([^\s@/'\"\\]+)@"
        ),
        group=1,
        validate=_secret_value,
        probes=("://",),
    ),
    Rule(
        "url-password",
        "medium",
        "password in any other URL's user information: scheme://user:PASSWORD@host",
        _rx(r"\b[a-z][a-z0-9+.-]*://[^\s:/@'\"\\]+:([^\s@/'\"\\]+)@[A-Za-z0-9]", re.I),
        group=1,
        validate=_secret_value,
        probes=("://",),
    ),
    Rule(
        "authorization-header",
        "high",
        "credentials of an Authorization header: Bearer, Basic, Token or Digest and the value",
        _rx(
            r"(?i:(?:proxy-)?authorization)"
            + _Q
            + r"\s*[:=]\s*"
            + _Q
            + r"(?i:bearer|basic|token|digest)\s+([A-Za-z0-9._~+/=-]{8,})"
        ),
        group=1,
        validate=_not_placeholder,
        probes=("authorization",),
    ),
    Rule(
        "bearer-token",
        "medium",
        "a Bearer token outside an Authorization header (16+ characters that look random)",
        _rx(r"(?<![A-Za-z])(?i:bearer)\s+([A-Za-z0-9._~+/-]{16,}=*)" + _R),
        group=1,
        validate=lambda v: _not_placeholder(v) and looks_random(v),
        probes=("bearer",),
    ),
    Rule(
        "basic-auth",
        "medium",
        "the password of curl's -u/--user user:password",
        _rx(r"(?:^|\s)(?:-u|--user)\s*[=\s]\s*['\"]?[^\s:'\"]+:([^\s'\"]{6,})"),
        group=1,
        validate=_secret_value,
        probes=("-u", "--user"),
    ),
    Rule(
        "password-assignment",
        "medium",
        "a quoted value assigned to password/secret/api_key/token/client_secret (any spelling)",
        _rx(
            r"(?i:password|passwd|passphrase|secret|api[_-]?key|access[_-]?token|auth[_-]?token"
            r"|client[_-]?secret|private[_-]?key)[A-Za-z0-9_]*"
            + _Q
            + r"\s*(?::=|=>|[:=])\s*\\*[\"']([^\"'\s\\]{6,})\\*[\"']"
        ),
        group=1,
        validate=_secret_value,
        probes=("pass", "secret", "api", "token", "private"),
    ),
    Rule(
        "high-entropy-assignment",
        "low",
        "a high-entropy value (16+ characters, 3.5+ bits each) assigned to a KEY/SECRET/TOKEN/… name",
        _rx(
            r"(?i:key|secret|token|passw(?:or)?d|pwd|pass|auth|credential|private|cookie"
            r"|signature|salt)[A-Za-z0-9_]*"
            + _Q
            + r"\s*(?::=|=>|[:=])\s*"
            + _Q
            + r"([A-Za-z0-9+/=_.~-]{16,})"
        ),
        group=1,
        validate=_high_entropy,
        probes=(
            "key",
            "secret",
            "token",
            "pass",
            "pwd",
            "auth",
            "credential",
            "private",
            "cookie",
            "signature",
            "salt",
        ),
    ),
)
