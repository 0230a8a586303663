"""Redaction for sharing sessions: omp 18.3.4's secret rules plus omp-session's own, stable
placeholders, the store-wide scan and scrubbing in place (docs/sharing.md).

>>> from omp_session.redact import Redactor
>>> r = Redactor()
>>> r.redact_text("token ghp_" + "a1B2c3D4e5" * 4 + " and again ghp_" + "a1B2c3D4e5" * 4)
'token [REDACTED:github-token#1] and again [REDACTED:github-token#1]'
>>> r.report.summary_lines()[-1]
'pattern redaction is a floor: review before sharing'

The engine lives in ``omp_session.tools`` (redaction, secret_rules, omp_secrets, omp_obfuscator,
omp_replacement,
session_redaction); this module is its public name.
"""

from __future__ import annotations

from omp_session.tools.omp_obfuscator import OmpSecretObfuscator
from omp_session.tools.omp_secrets import (
    SecretEntry,
    SecretsConfigError,
    build_omp_entries,
    builtin_credential_entries,
    collect_env_secrets,
    load_secrets,
)
from omp_session.tools.redaction import (
    FLOOR_WARNING,
    Finding,
    PathAnonymizer,
    RedactionReport,
    Redactor,
    fingerprint,
    masked_preview,
)
from omp_session.tools.secret_rules import RULES, Rule
from omp_session.tools.session_redaction import (
    RedactionOptions,
    ScanFinding,
    ScrubResult,
    make_redactor,
    plan_scrub,
    redact_session_bytes,
    scan_file,
    scrub_file,
)

__all__ = [
    "FLOOR_WARNING",
    "RULES",
    "Finding",
    "OmpSecretObfuscator",
    "PathAnonymizer",
    "RedactionOptions",
    "RedactionReport",
    "Redactor",
    "Rule",
    "ScanFinding",
    "ScrubResult",
    "SecretEntry",
    "SecretsConfigError",
    "build_omp_entries",
    "builtin_credential_entries",
    "collect_env_secrets",
    "fingerprint",
    "load_secrets",
    "make_redactor",
    "masked_preview",
    "plan_scrub",
    "redact_session_bytes",
    "scan_file",
    "scrub_file",
]
