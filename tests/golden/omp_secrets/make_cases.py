"""Writes cases.json: the inputs the Bun harness runs through omp 18.3.4's obfuscator.

Deterministic (a seeded generator), so re-running it gives the same file:
    python tests/golden/omp_secrets/make_cases.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

rng = random.Random(18_3_4)
ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
UPPER_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
URLSAFE = ALNUM + "_-"


def rand(alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def key() -> str:
    return rand(URLSAFE, 43)


def builtin_values() -> list[str]:
    return [
        "ghp_" + rand(ALNUM, 36),
        "gho_" + rand(ALNUM, 40),
        "GHS_" + rand(ALNUM, 36),
        "github_pat_" + rand(ALNUM + "_", 60),
        "glpat-" + rand(URLSAFE, 20),
        "sk-proj-" + rand(URLSAFE, 48),
        "sk-ant-api03-" + rand(URLSAFE, 80),
        "sk-" + rand(ALNUM, 48),
        "AKIA" + rand(UPPER_DIGITS, 16),
        "ASIA" + rand(UPPER_DIGITS, 16),
        "AIza" + rand(URLSAFE, 35),
        "xoxb-" + rand("0123456789", 12) + "-" + rand(ALNUM, 24),
        "npm_" + rand(ALNUM, 36),
        "sk_live_" + rand(ALNUM, 24),
        "rk_test_" + rand(ALNUM, 30),
        "whsec_" + rand(ALNUM, 32),
        "hf_" + rand(ALNUM, 34),
        "SG." + rand(URLSAFE, 22) + "." + rand(URLSAFE, 43),
        "eyJ" + rand(URLSAFE, 20) + ".eyJ" + rand(URLSAFE, 30) + "." + rand(URLSAFE, 43),
    ]


def pem() -> str:
    body = "\n".join(rand(ALNUM + "+/", 64) for _ in range(4))
    return f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"


def near_misses() -> list[str]:
    return [
        "ghp_" + rand(ALNUM, 20),  # too short
        "xghp_" + rand(ALNUM, 36),  # left boundary
        "AKIA" + rand(UPPER_DIGITS, 15),  # one short
        "AKIA" + rand(UPPER_DIGITS, 17),  # right boundary
        "sk-" + rand(ALNUM, 20),
        "token_expiry_seconds=3600",
        "Bearer short",
        "eyJhbGciOi.notajwt",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBg\n-----END PUBLIC KEY-----",
        "AIza" + rand(URLSAFE, 10),
    ]


def wrap(value: str) -> list[str]:
    return [
        value,
        f"export TOKEN={value}\n",
        f'{{"headers": {{"Authorization": "Bearer {value}"}}}}',
        f"error: auth failed for {value}; retrying",
        f"(`{value}`)",
    ]


cases: list[dict[str, Any]] = []
values = builtin_values()
cases.append(
    {
        "name": "builtin patterns, each kind in several contexts",
        "env": {},
        "global_yml": None,
        "project_yml": None,
        "key": key(),
        "texts": [t for v in values for t in wrap(v)] + [pem(), "key:\n" + pem() + "\ntrailer"],
    }
)
cases.append(
    {
        "name": "near misses of the built-in patterns",
        "env": {},
        "global_yml": None,
        "project_yml": None,
        "key": key(),
        "texts": [*near_misses(), "Bearer " + rand(ALNUM + "._~+/=-", 30), "bearer " + rand(ALNUM, 25)],
    }
)
multi = values[:6]
cases.append(
    {
        "name": "several secrets in one text, repeated values",
        "env": {},
        "global_yml": None,
        "project_yml": None,
        "key": key(),
        "texts": [
            " ".join(multi),
            "\n".join(multi + multi),
            f"{multi[0]}{multi[0]}",
            f"a={multi[1]},b={multi[1]}",
        ],
    }
)
env_token = rand(ALNUM, 24)
env_pw = rand(ALNUM, 12) + "%2F" + rand(ALNUM, 4)
cases.append(
    {
        "name": "environment variables: the name rule and connection-URL passwords",
        "env": {
            "OPENAI_API_KEY": env_token,
            "MY_SECRET": "shortone",
            "GITHUB_TOKEN_FILE": "notasecretvalue",
            "PASSWORD": "tiny",
            "HOME": "/home/someone",
            "DATABASE_URL": f"postgres://app:{env_pw}@db.internal:5432/app",
            "KEYBOARD_LAYOUT": "us-international",
            "DB_PASS": "correct-horse-battery",
        },
        "global_yml": None,
        "project_yml": None,
        "key": key(),
        "texts": [
            f"the key is {env_token}.",
            "MY_SECRET=shortone and shortoneX",
            "layout us-international",
            f"connecting to postgres://app:{env_pw}@db.internal:5432/app",
            f"decoded {env_pw.replace('%2F', '/')}",
            "pw correct-horse-battery!",
            "tiny tiny",
        ],
    }
)
plain_ob = "hunter2-" + rand(ALNUM, 10)
plain_rep = "s3cr3t-" + rand(ALNUM, 9)
plain_rep_default = "Zebra-" + rand(ALNUM, 12)
cases.append(
    {
        "name": "secrets.yml plain entries: obfuscate, replace, default replacement, friendly names, short",
        "env": {},
        "global_yml": (
            f'- type: plain\n  content: "{plain_ob}"\n  friendlyName: db password\n'
            f'- type: plain\n  content: "{plain_rep}"\n  mode: replace\n  replacement: "<gone>"\n'
            f'- type: plain\n  content: "{plain_rep_default}"\n  mode: replace\n'
            "- type: plain\n  content: short\n"
            "- type: plain\n  content: ZZ\n  mode: replace\n"
            '- type: plain\n  content: ""\n'
            "- type: bogus\n  content: x\n"
        ),
        "project_yml": None,
        "key": key(),
        "texts": [
            f"login with {plain_ob} please",
            f"{plain_rep} and {plain_rep_default}",
            "short shorts ZZ top",
            f"{plain_ob}{plain_ob}",
            f"nested {plain_rep_default}{plain_ob}",
        ],
    }
)
cases.append(
    {
        "name": "secrets.yml regex entries: obfuscate, replace, flags, literal syntax, short matches",
        "env": {},
        "global_yml": (
            '- type: regex\n  content: "tok_[a-z0-9]{12}"\n  friendlyName: internal token\n'
            '- type: regex\n  content: "/ACME-[A-Z0-9]{10}/i"\n  mode: replace\n'
            '- type: regex\n  content: "pin=[0-9]{4}"\n'
            '- type: regex\n  content: "session=([a-f0-9]{16})"\n  mode: replace\n'
            '  replacement: "session=<redacted>"\n'
            '- type: regex\n  content: "(unclosed"\n'
            '- type: regex\n  content: "^line-[0-9]{8}$"\n  flags: m\n'
        ),
        "project_yml": None,
        "key": key(),
        "texts": [
            "tok_" + rand("abcdefghijklmnopqrstuvwxyz0123456789", 12) + " and TOK_ABCDEFGHIJKL",
            "order acme-" + rand(UPPER_DIGITS, 10) + " ACME-" + rand(UPPER_DIGITS, 10),
            "pin=1234 pin=98765432",
            "cookie: session=" + rand("0123456789abcdef", 16) + "; path=/",
            "line-12345678\nline-87654321 tail\nline-00000000",
        ],
    }
)
shared = "shared-" + rand(ALNUM, 12)
cases.append(
    {
        "name": "project secrets.yml overrides global entries with the same content",
        "env": {},
        "global_yml": f'- type: plain\n  content: "{shared}"\n  mode: replace\n  replacement: GLOBAL\n'
        f'- type: plain\n  content: "global-only-{rand(ALNUM, 8)}"\n',
        "project_yml": f'- type: plain\n  content: "{shared}"\n  friendlyName: proj\n',
        "key": key(),
        "texts": [f"value {shared} here"],
    }
)
k = key()
cases.append(
    {
        "name": "the placeholder key itself is redacted, plain secret inside a token",
        "env": {"API_TOKEN": "abcd1234efgh"},
        "global_yml": None,
        "project_yml": None,
        "key": k,
        "texts": [
            f"cat secret-placeholder.key\n{k}\n",
            "ghp_abcd1234efgh" + rand(ALNUM, 30),
            "Fabcd1234efgh",
        ],
    }
)
cases.append(
    {
        "name": "unicode around secrets",
        "env": {},
        "global_yml": None,
        "project_yml": None,
        "key": key(),
        "texts": [
            "clé « " + values[0] + " » ünïcode",
            "日本語 " + values[8] + " 終わり",
            "emoji 😀 " + values[13],
        ],
    }
)

out = Path(__file__).with_name("cases.json")
out.write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
print(f"{sum(len(c['texts']) for c in cases)} texts in {len(cases)} cases -> {out}")
