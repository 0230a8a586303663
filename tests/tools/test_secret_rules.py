"""Every rule of our table: its positives are masked (whole value gone, the right kind named) and
its near misses are left alone."""

from __future__ import annotations

import pytest

from omp_session.tools.redaction import Redactor
from omp_session.tools.secret_rules import RULES, looks_random, shannon_entropy

# (kind, text, value that must disappear). The texts avoid omp's built-in shapes where the kind
# is ours alone, and use them where both apply (either may then name it).
POSITIVES: list[tuple[str, str, str]] = [
    (
        "private-key",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----",
        "MIIEowIBAAKCAQEA7",
    ),
    (
        "private-key",
        "key: -----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1rZXktdjE\\n-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjE",
    ),
    (
        "private-key",
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF9xYz0BCAC\n-----END PGP PRIVATE KEY BLOCK-----",
        "lQOYBF9xYz0BCAC",
    ),
    (
        "private-key",
        "cut off: -----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkq8Xz93LmQp",
        "MHcCAQEEIBkq8Xz93LmQp",
    ),
    ("anthropic-key", "ANTHROPIC=sk-ant-admin01-Zx8Qw2Er4Ty6Ui8Op0As", "sk-ant-admin01-Zx8Qw2Er4Ty6Ui8Op0As"),
    ("openai-key", "key sk-svcacct-Ab12Cd34Ef56Gh78Ij90Kl", "sk-svcacct-Ab12Cd34Ef56Gh78Ij90Kl"),
    ("github-token", "ghp_" + "Ab3dE" * 8, "ghp_" + "Ab3dE" * 8),
    ("github-token", "github_pat_11ABCDEFG0123456789_abcdefXYZ", "github_pat_11ABCDEFG0123456789_abcdefXYZ"),
    ("gitlab-token", "glptt-0123456789abcdefABCD", "glptt-0123456789abcdefABCD"),
    ("slack-token", "xoxe-1-ABCDEFGHIJK123", "xoxe-1-ABCDEFGHIJK123"),
    (
        "slack-webhook",
        "https://hooks.slack.com/services/T0123ABCD/B0123ABCD/abcdefghijklmnopQRSTuvwx",
        "abcdefghijklmnopQRSTuvwx",
    ),
    ("stripe-key", "sk_live_0123456789abcdefXYZ", "sk_live_0123456789abcdefXYZ"),
    ("stripe-webhook-secret", "whsec_abcdefghij0123456789ABCD", "whsec_abcdefghij0123456789ABCD"),
    ("google-api-key", "AIzaSyD-abcdefghijklmnopqrstuvwxyz01234", "AIzaSyD-abcdefghijklmnopqrstuvwxyz01234"),
    ("google-oauth-secret", "GOCSPX-abcdefghijklmnopqrstuvwx12", "GOCSPX-abcdefghijklmnopqrstuvwx12"),
    ("aws-access-key-id", "id ABIAIOSFODNN7EXAMPL2", "ABIAIOSFODNN7EXAMPL2"),
    (
        "aws-secret-access-key",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    (
        "aws-secret-access-key",
        "AKIAIOSFODNN7EXAMPLE,wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    ("jwt", "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxMjM0In0.", "eyJzdWIiOiIxMjM0In0"),
    ("npm-token", "npm_" + "a1B2c3" * 6, "npm_" + "a1B2c3" * 6),
    ("huggingface-token", "hf_" + "Qw3Er5Ty7U" * 3 + "zz", "hf_" + "Qw3Er5Ty7U" * 3 + "zz"),
    ("sendgrid-key", "SG." + "a" * 22 + "." + "B" * 43, "SG." + "a" * 22 + "." + "B" * 43),
    ("pypi-token", "pypi-AgEIcHlwaS5vcmc" + "x1Y2z3" * 10, "pypi-AgEIcHlwaS5vcmc" + "x1Y2z3" * 10),
    ("digitalocean-token", "dop_v1_" + "0123456789abcdef" * 4, "dop_v1_" + "0123456789abcdef" * 4),
    ("shopify-token", "shpat_" + "0123456789abcdef" * 2, "shpat_" + "0123456789abcdef" * 2),
    (
        "age-secret-key",
        "AGE-SECRET-KEY-1" + "QWERTYUIOPASDFGHJKLZXCVBNM0123456789QWERTYUIOPASDFGHJKLZXC",
        "AGE-SECRET-KEY-1" + "QWERTYUIOPASDFGHJKLZXCVBNM0123456789QWERTYUIOPASDFGHJKLZXC",
    ),
    ("discord-webhook", "https://discord.com/api/webhooks/123456789/" + "aB3_" * 16, "aB3_" * 16),
    ("telegram-bot-token", "bot 123456789:AA" + "bC4d" * 8 + "e", "123456789:AA" + "bC4d" * 8 + "e"),
    ("twilio-key", "SK" + "0123456789abcdef" * 2, "SK" + "0123456789abcdef" * 2),
    ("hashicorp-vault-token", "hvs." + "Ab1Cd2" * 16, "hvs." + "Ab1Cd2" * 16),
    (
        "azure-storage-key",
        "DefaultEndpointsProtocol=https;AccountKey=" + "Ab1+" * 21 + "Ab==;",
        "Ab1+" * 21 + "Ab==",
    ),
    ("database-password", "postgres://app:Pa55word-x9@db:5432/app", "Pa55word-x9"),
    ("database-password", "mongodb+srv://root:K9%40zz-secret@cluster0.mongodb.net", "K9%40zz-secret"),
    ("url-password", "https://deploy:Gh7Tq2Lp9@git.example.com/repo.git", "Gh7Tq2Lp9"),
    ("authorization-header", "Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA=="),
    ("authorization-header", '{\\"authorization\\": \\"Token abc123def456\\"}', "abc123def456"),
    ("bearer-token", "use bearer Xy7Kp2Qr9Lm4Nb6V", "Xy7Kp2Qr9Lm4Nb6V"),
    ("basic-auth", "curl -u admin:Tr0ub4dor3 https://x", "Tr0ub4dor3"),
    ("password-assignment", 'db_password = "correct horse"'.replace(" horse", "Horse9"), "correctHorse9"),
    ("password-assignment", 'config = {\\"client_secret\\": \\"s3cr3t-val\\"}', "s3cr3t-val"),
    ("high-entropy-assignment", "SESSION_COOKIE=Zk3j9QxL2mN8vB4cR7tY1wE6", "Zk3j9QxL2mN8vB4cR7tY1wE6"),
    ("high-entropy-assignment", "export MY_API_KEY=8f3KdL0qPz7XwR2mVb9T", "8f3KdL0qPz7XwR2mVb9T"),
]

NEAR_MISSES: list[tuple[str, str]] = [
    ("private-key", "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A\n-----END PUBLIC KEY-----"),
    (
        "private-key",
        "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkq\n-----END CERTIFICATE-----",
    ),
    ("anthropic-key", "sk-ant-short"),
    ("openai-key", "pip install sk-learn-tutorial-for-beginners"),
    ("openai-key", "task-0123456789abcdefghij0123"),
    ("github-token", "ghp_tooShort123"),
    ("github-token", "the ghp_ prefix is GitHub's"),
    ("gitlab-token", "glpat-short"),
    ("slack-token", "xoxb-123"),
    ("slack-webhook", "https://hooks.slack.com/services/"),
    ("stripe-key", "pk_live_0123456789abcdefXYZ"),
    ("stripe-key", "sk_live_short"),
    ("google-api-key", "AIzaShort"),
    ("aws-access-key-id", "AKIA0123"),
    ("aws-access-key-id", "XAKIAIOSFODNN7EXAMPLE1"),
    ("aws-secret-access-key", "aws_secret_access_key = ${AWS_SECRET}"),
    ("jwt", "eyJhbGciOi.eyJzdWIi"),
    ("npm-token", "npm_install"),
    ("database-password", "postgres://app@db:5432/app"),
    ("database-password", "postgres://app:${DB_PASSWORD}@db/app"),
    ("database-password", "postgres://app:<password>@db/app"),
    ("database-password", "mysql://root:@localhost/db"),
    ("url-password", "http://localhost:8080/path"),
    ("authorization-header", "Authorization: Bearer <token>"),
    ("bearer-token", "a bearer of bad news"),
    ("bearer-token", "bearer of-the-ring-16chars"),
    ("basic-auth", "curl -u admin https://x"),
    ("password-assignment", 'password = "changeme"'),
    ("password-assignment", 'password: "${PASSWORD}"'),
    ("password-assignment", 'secretEnv: "GOOGLE_CLOUD_PROJECT"'),
    ("password-assignment", 'apiKey: "keyless"'),
    ("high-entropy-assignment", "syntaxKeyword: ColorValueSchema"),
    ("high-entropy-assignment", "tokenLimit = cfgMemoriesPhase1InputTokenLimit.get"),
    ("high-entropy-assignment", "token_expiry_seconds=3600"),
    ("high-entropy-assignment", "SESSION_ID=0192ab3c-4d5e-6f70-8192-a3b4c5d6e7f8"),
    ("high-entropy-assignment", "PRIMARY_KEY=user_id_and_tenant_id"),
    ("high-entropy-assignment", "KEY_PATH=/home/user/.ssh/id_ed25519"),
    ("high-entropy-assignment", "keyboard: us-international-alt"),
    ("google-oauth-secret", "GOCSPX-short"),
    ("discord-webhook", "https://discord.com/api/webhooks/123/short"),
    ("pypi-token", "pypi-AgEIshort"),
    ("telegram-bot-token", "call 12345:AAshort"),
    ("shopify-token", "shpat_nothex-at-all-zzzzzzzzzzzzzzzzzzzz"),
    ("huggingface-token", "hf_hub_download"),
    ("sendgrid-key", "SG.short.value"),
    ("digitalocean-token", "dop_v1_short"),
    ("age-secret-key", "AGE-SECRET-KEY-1SHORT"),
    ("twilio-key", "SKETCHY0123456789abcdef0123456789abcdef"),
    ("hashicorp-vault-token", "hvs.short"),
    ("azure-storage-key", "AccountKey=short=="),
    ("stripe-webhook-secret", "whsec_short"),
    ("slack-token", "xoxo-hugs-and-kisses"),
]


def test_every_rule_kind_has_a_positive_and_a_near_miss() -> None:
    kinds = {rule.kind for rule in RULES}
    assert kinds <= {kind for kind, _t, _v in POSITIVES}
    assert kinds <= {kind for kind, _t in NEAR_MISSES}
    assert len(kinds) >= 30


@pytest.mark.parametrize(
    ("kind", "text", "value"), POSITIVES, ids=[f"{k}-{i}" for i, (k, _t, _v) in enumerate(POSITIVES)]
)
def test_positive_is_masked(kind: str, text: str, value: str) -> None:
    redactor = Redactor()
    out = redactor.redact_text(text)
    assert value not in out
    assert "[REDACTED:" in out
    found = {f.kind for f in Redactor().find(text)}
    assert found, text
    # Where omp's built-in rule (applied first) has the same shape, it may name the value.
    assert kind in found or out.count("[REDACTED:") >= 1


@pytest.mark.parametrize(
    ("kind", "text"), NEAR_MISSES, ids=[f"{k}-{i}" for i, (k, _t) in enumerate(NEAR_MISSES)]
)
def test_near_miss_is_left_alone(kind: str, text: str) -> None:
    redactor = Redactor()
    assert redactor.redact_text(text) == text
    assert Redactor().find(text) == []
    assert redactor.report.total_values == 0


def test_our_own_kind_is_named_for_shapes_omp_does_not_have() -> None:
    for kind, text, _value in POSITIVES:
        if kind in {"database-password", "private-key", "slack-webhook", "twilio-key", "azure-storage-key"}:
            assert kind in {f.kind for f in Redactor().find(text)}, text


def test_placeholders_are_stable_per_value_and_numbered_per_kind() -> None:
    a, b = "ghp_" + "Ab3dE" * 8, "ghp_" + "Zz9yX" * 8
    redactor = Redactor()
    out = redactor.redact_text(f"{a} {b} {a}") + "|" + redactor.redact_text(f"{b}")
    first, second = "[REDACTED:github-token#1]", "[REDACTED:github-token#2]"
    assert out == f"{first} {second} {first}|{second}"
    assert redactor.report.values["github-token"] == 2
    assert redactor.report.occurrences["github-token"] == 4
    # A new output starts again at #1.
    assert Redactor().redact_text(b) == "[REDACTED:github-token#1]"


def test_min_confidence_drops_the_lower_tiers() -> None:
    text = "SESSION_COOKIE=Zk3j9QxL2mN8vB4cR7tY1wE6 https://u:Gh7Tq2Lp9@x.org"
    assert Redactor(min_confidence="high").redact_text(text) == text
    medium = Redactor(min_confidence="medium").redact_text(text)
    assert "Zk3j9QxL2mN8vB4cR7tY1wE6" in medium and "Gh7Tq2Lp9" not in medium


def test_entropy_helpers() -> None:
    assert shannon_entropy("aaaa") == 0.0
    assert shannon_entropy("abcd") == 2.0
    assert looks_random("Zk3j9QxL2mN8vB4c")
    assert not looks_random("user-id-and-tenant")
    assert not looks_random("ALLUPPERCASEWORDS")


def test_keys_of_tool_arguments_are_not_structure() -> None:
    token = "ghp_" + "Ab3dE" * 8
    entry = {
        "type": "message",
        "id": "a1",
        "parentId": None,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {
            "role": "assistant",
            "content": [
                {
                    "type": "toolCall",
                    "id": "call_1",
                    "name": "x",
                    "arguments": {"id": token, "type": token, "image": {"type": "image", "data": token}},
                },
                {"type": "image", "data": token, "mimeType": "image/png"},
            ],
        },
    }
    out = Redactor().redact_entry(entry)
    assert out["id"] == "a1" and out["message"]["content"][0]["id"] == "call_1"
    arguments = out["message"]["content"][0]["arguments"]
    assert token not in str(arguments)
    # Image bytes of the message itself are kept (no pattern can read a picture).
    assert out["message"]["content"][1]["data"] == token
