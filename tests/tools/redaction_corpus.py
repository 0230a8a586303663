"""The planted-secret corpus: ≥ 200 generated secrets of ≥ 20 kinds, placed in every text-bearing
field of an omp session (header, title slot, session_init, every message role, tool calls with
nested and JSON-encoded arguments, tool results, bash/python, summaries, custom entries, labels,
titles), escaped, inside JSON strings and across lines.

Deterministic (seeded), so a failure names the same value every run."""

from __future__ import annotations

import html
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omp_session.format.codec import encode_line
from omp_session.format.title_slot import TitleSlot, encode_slot

ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
HEX = "0123456789abcdef"
URLSAFE = ALNUM + "_-"
B64 = ALNUM + "+/"

#: The secret configured in the test's omp secrets.yml (a plain obfuscate entry) and the one in
#: its environment (a secret-shaped variable name): omp's own rules must catch these.
CONFIGURED_SECRET = "corp-vault-passphrase-7f3k9q"
ENV_SECRET_NAME = "ACME_DEPLOY_TOKEN"


@dataclass(frozen=True)
class Planted:
    kind: str
    value: str  # the secret: no byte of it may survive
    text: str  # how it appears in a field (with its context)


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _mixed(rng: random.Random, n: int) -> str:
    """Random alphanumerics with at least one upper, lower and digit."""
    while True:
        value = _r(rng, ALNUM, n)
        if (
            any(c.isupper() for c in value)
            and any(c.islower() for c in value)
            and any(c.isdigit() for c in value)
        ):
            return value


def _pem(rng: random.Random, label: str) -> str:
    body = "\n".join(_r(rng, B64, 64) for _ in range(5))
    return f"-----BEGIN {label}PRIVATE KEY-----\n{body}\n-----END {label}PRIVATE KEY-----"


def make_planted(seed: int = 29, per_kind: int = 8) -> list[Planted]:
    rng = random.Random(seed)
    out: list[Planted] = []

    def add(kind: str, value: str, text: str | None = None) -> None:
        out.append(Planted(kind, value, text if text is not None else value))

    for _ in range(per_kind):
        add("github-token", "ghp_" + _mixed(rng, 36))
        add("github-token", "github_pat_" + _mixed(rng, 22) + "_" + _mixed(rng, 59))
        add("gitlab-token", "glpat-" + _mixed(rng, 20))
        add("slack-token", "xoxb-" + _r(rng, "0123456789", 12) + "-" + _mixed(rng, 24))
        v = _mixed(rng, 24)
        add(
            "slack-webhook",
            v,
            f"https://hooks.slack.com/services/T{_r(rng, UPPER, 8)}/B{_r(rng, UPPER, 8)}/{v}",
        )
        add("stripe-key", "sk_live_" + _mixed(rng, 24))
        add("stripe-webhook-secret", "whsec_" + _mixed(rng, 32))
        add("google-api-key", "AIza" + _mixed(rng, 35))
        add("openai-key", "sk-proj-" + _mixed(rng, 48))
        add("anthropic-key", "sk-ant-api03-" + _mixed(rng, 90))
        key_id, secret = "AKIA" + _r(rng, UPPER, 16), _mixed(rng, 36) + "/+" + _r(rng, B64, 2)
        add("aws-access-key-id", key_id, f"aws_access_key_id = {key_id}")
        add("aws-secret-access-key", secret, f"aws_secret_access_key = {secret}")
        key_id2, secret2 = "AKIA" + _r(rng, UPPER, 16), _mixed(rng, 40)
        add("aws-key-pair", key_id2, f"{key_id2},{secret2}")
        add("aws-key-pair", secret2, f"{key_id2},{secret2}")
        jwt = "eyJ" + _mixed(rng, 30) + ".eyJ" + _mixed(rng, 60) + "." + _mixed(rng, 43)
        add("jwt", jwt)
        add("npm-token", "npm_" + _mixed(rng, 36))
        add("huggingface-token", "hf_" + _mixed(rng, 34))
        add("sendgrid-key", "SG." + _mixed(rng, 22) + "." + _mixed(rng, 43))
        pw = _mixed(rng, 14)
        add("database-password", pw, f"postgres://app:{pw}@db.internal:5432/app")
        pw = _mixed(rng, 12)
        add("database-password", pw, f"mongodb+srv://root:{pw}@cluster0.example.net/admin")
        basic = _mixed(rng, 28) + "=="
        add("authorization-header", basic, f"Authorization: Basic {basic}")
        bearer = _mixed(rng, 32)
        add("bearer-token", bearer, f'curl -H "Authorization: Bearer {bearer}" https://api.example.com')
        pw = _mixed(rng, 12)
        add("basic-auth", pw, f"curl -u deploy:{pw} https://ci.example.com")
        pw = _mixed(rng, 16)
        add("password-assignment", pw, f'db_password = "{pw}"')
        v = _mixed(rng, 32)
        add("high-entropy-assignment", v, f"MY_SERVICE_SECRET={v}")
        add("private-key", _pem(rng, "RSA "))
        add("private-key", _pem(rng, "OPENSSH "))
        add("digitalocean-token", "dop_v1_" + _r(rng, HEX, 64))
        add("twilio-key", "SK" + _r(rng, HEX, 32))
        add("age-secret-key", "AGE-SECRET-KEY-1" + _r(rng, UPPER, 58))
    add("configured-secret", CONFIGURED_SECRET, f"the vault passphrase is {CONFIGURED_SECRET}.")
    return out


def env_secret_value() -> str:
    return "Qz" + _mixed(random.Random(7), 30)


def encodings(value: str) -> list[str]:
    """Every form a value can take in an output: as is, JSON-escaped (both ASCII modes),
    HTML-escaped, and with ``/`` escaped as some JSON writers do."""
    forms = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1], html.escape(value)}
    forms.add(json.dumps(value)[1:-1].replace("/", "\\/"))
    forms.add(html.escape(json.dumps(value)[1:-1]))
    forms.add(json.dumps(json.dumps(value)[1:-1])[1:-1])  # a JSON string inside a JSON string
    return sorted(forms)


def _fields() -> list[str]:
    return [
        "header.cwd",
        "header.title",
        "session_init.systemPrompt",
        "session_init.task",
        "user.string",
        "user.block",
        "assistant.text",
        "assistant.thinking",
        "assistant.toolCall.args",
        "assistant.toolCall.nested",
        "assistant.toolCall.jsonString",
        "assistant.toolCall.intent",
        "assistant.errorMessage",
        "toolResult.text",
        "bash.command",
        "bash.output",
        "python.code",
        "python.output",
        "compaction.summary",
        "compaction.shortSummary",
        "branch_summary.summary",
        "custom_message.content",
        "custom.data",
        "label.label",
        "title_change.title",
        "title_change.previousTitle",
        "fileMention.content",
        "developer.content",
    ]


FIELDS = _fields()


def build_session(planted: list[Planted], env_value: str) -> tuple[bytes, dict[str, list[Planted]]]:
    """A session file (omp 18 layout: title slot, header, entries) carrying every planted value,
    each in at least one field, every field holding some. Returns the bytes and the placement."""
    by_field: dict[str, list[Planted]] = {name: [] for name in FIELDS}
    for index, item in enumerate(planted):
        by_field[FIELDS[index % len(FIELDS)]].append(item)
    # The env secret rides along in a bash output, as an echoed .env file would.
    extra_env = Planted("env-secret", env_value, f"{ENV_SECRET_NAME}={env_value}")
    by_field["bash.output"].append(extra_env)

    def text(name: str) -> str:
        return "\n".join(f"[{name}] {item.text}" for item in by_field[name]) or f"nothing in {name}"

    # Header cwd / title need one line; put a single value there (a path-like cwd keeps the cwd
    # rule of omp happy) and move the rest into the title_change.
    ts = "2026-11-30T10:00:00.000Z"
    counter = iter(range(1, 10_000))
    entries: list[dict[str, Any]] = []
    parent: str | None = None

    def entry(kind: str, **fields: Any) -> dict[str, Any]:
        nonlocal parent
        entry_id = f"e{next(counter):07x}"
        record = {"type": kind, "id": entry_id, "parentId": parent, "timestamp": ts, **fields}
        entries.append(record)
        parent = entry_id
        return record

    def message(role: str, **fields: Any) -> dict[str, Any]:
        return entry("message", message={"role": role, **fields, "timestamp": 1764496800000})

    entry(
        "session_init",
        systemPrompt=text("session_init.systemPrompt"),
        task=text("session_init.task"),
        tools=["read", "bash"],
        outputSchema={"description": "x"},
    )
    message("user", content=text("user.string"))
    message("user", content=[{"type": "text", "text": text("user.block")}])
    message("developer", content=text("developer.content"))
    args_json = json.dumps(
        {"env": {item.kind: item.text for item in by_field["assistant.toolCall.jsonString"]}}
    )
    message(
        "assistant",
        content=[
            {"type": "thinking", "thinking": text("assistant.thinking"), "thinkingSignature": "sig"},
            {"type": "redactedThinking", "data": "ZW5jcnlwdGVk"},
            {"type": "text", "text": text("assistant.text")},
            {
                "type": "toolCall",
                "id": "call_1",
                "name": "bash",
                "arguments": {
                    "command": text("assistant.toolCall.args"),
                    "options": {
                        "env": [
                            {"name": "X", "value": item.text}
                            for item in by_field["assistant.toolCall.nested"]
                        ]
                    },
                    "payload": args_json,
                },
                "intent": text("assistant.toolCall.intent"),
            },
        ],
        api="anthropic-messages",
        provider="anthropic",
        model="claude-sonnet-4-5",
        usage={
            "input": 1,
            "output": 1,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 2,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        },
        stopReason="toolUse",
        errorMessage=text("assistant.errorMessage"),
        providerPayload={"native": "opaque"},
    )
    message(
        "toolResult",
        toolCallId="call_1",
        toolName="bash",
        content=[{"type": "text", "text": text("toolResult.text")}],
        isError=False,
        details={"raw": "opaque"},
    )
    message(
        "bashExecution",
        command=text("bash.command"),
        output=text("bash.output"),
        exitCode=0,
        cancelled=False,
        truncated=False,
    )
    message(
        "pythonExecution",
        code=text("python.code"),
        output=text("python.output"),
        exitCode=0,
        cancelled=False,
        truncated=False,
    )
    message("fileMention", files=[{"path": "/src/app/.env", "content": text("fileMention.content")}])
    first_kept = entries[1]["id"]
    entry(
        "compaction",
        summary=text("compaction.summary"),
        shortSummary=text("compaction.shortSummary"),
        firstKeptEntryId=first_kept,
        tokensBefore=1000,
        preserveData={"blob": "opaque"},
    )
    entry("branch_summary", fromId=first_kept, summary=text("branch_summary.summary"), details={"x": 1})
    entry("custom_message", customType="note", content=text("custom_message.content"), display=True)
    entry("custom", customType="state", data={"notes": [item.text for item in by_field["custom.data"]]})
    entry("label", targetId=first_kept, label=text("label.label"))
    entry("title_change", title=text("title_change.title"), previousTitle=text("title_change.previousTitle"))
    entry("mode_change", mode="plan", data={"opaque": True})
    message("user", content="done")

    # The header's cwd must stay one path: it takes the values that are secrets by their shape
    # alone (a vendor prefix); the others go to the title change beside it.
    cwd_values = [
        item for item in by_field["header.cwd"] if item.text == item.value and "\n" not in item.value
    ]
    for item in by_field["header.cwd"]:
        if item not in cwd_values:
            entries[-3]["title"] += "\n" + item.text
    cwd = "/src/app/" + "/".join(item.value for item in cwd_values)
    for item in by_field["header.title"]:
        if "\n" in item.value:
            entries[-3]["previousTitle"] += "\n" + item.text
    title = " ".join(item.text for item in by_field["header.title"] if "\n" not in item.value)
    header = {
        "type": "session",
        "version": 3,
        "id": "01a22ce0-b922-758a-b129-cd931c64c029",
        "timestamp": ts,
        "cwd": cwd,
        "title": title,
    }
    slot = encode_slot(TitleSlot(title, ts, "user"))
    data = slot + encode_line(header) + b"".join(encode_line(e) for e in entries)
    placement = dict(by_field)
    return data, placement


def write_corpus(directory: Path) -> tuple[Path, list[Planted]]:
    """The corpus session under ``directory`` (a project directory of a sessions root)."""
    planted = make_planted()
    data, _placement = build_session(planted, env_secret_value())
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "2026-11-30T10-00-00-000Z_01a22ce0b922758ab129cd931c64c029.jsonl"
    path.write_bytes(data)
    env = Planted("env-secret", env_secret_value(), "")
    return path, [*planted, env]
