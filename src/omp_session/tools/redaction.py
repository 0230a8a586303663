"""The redaction engine: every text of a session through omp's rules and ours, with stable
placeholders (internal; the public name is `omp_session.redact`, docs/sharing.md).

One `Redactor` is one output: the same value gets the same placeholder everywhere in it
(``[REDACTED:github-token#3]`` is the third distinct GitHub token), so a reader can tell two secrets
apart without seeing either. Each text goes first through omp's own obfuscation
(:mod:`omp_session.tools.omp_secrets`: the user's ``secrets.yml``, the environment rule, omp's
built-in patterns; a replace-mode entry keeps omp's replacement, an obfuscate-mode placeholder
becomes ours), then through our rule table (:mod:`omp_session.tools.secret_rules`).

Over an entry the engine redacts every string value (message text, thinking, tool-call arguments
at any depth, tool results, commands and output, summaries, labels, titles, custom data, the
header's cwd and title, ``session_init`` prompts, unknown fields) except the structural ones that
hold no prose (ids, parents, types, timestamps, roles, model names) and image bytes. Like omp's
``/share`` it drops the opaque payloads it cannot read: ``providerPayload``, ``redactedThinking``
and ``anthropicServerTool`` blocks, ``preserveData``, ``details``, ``outputSchema`` and
``mode_change`` data; the report counts each.

Pure: no file access, no clock; the caller passes the environment, the omp configuration and
the paths to anonymise.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import secrets as _random
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from omp_session.tools.omp_obfuscator import OmpSecretObfuscator
from omp_session.tools.omp_secrets import SecretEntry
from omp_session.tools.secret_rules import CONFIDENCE_ORDER, RULES, Confidence, Rule

__all__ = [
    "FLOOR_WARNING",
    "Finding",
    "PathAnonymizer",
    "RedactionReport",
    "Redactor",
    "fingerprint",
    "masked_preview",
]

#: Printed with every redacted output.
FLOOR_WARNING = "pattern redaction is a floor: review before sharing"

#: Keys whose values are structure, never prose: not scanned, never changed.
STRUCTURAL_KEYS = frozenset(
    {
        "id",
        "parentId",
        "type",
        "timestamp",
        "role",
        "version",
        "targetId",
        "firstKeptEntryId",
        "fromId",
        "toolCallId",
        "api",
        "provider",
        "model",
        "modelId",
        "stopReason",
        "thinkingLevel",
        "mimeType",
        "responseId",
        "thinkingSignature",
        "thoughtSignature",
        "textSignature",
        "encoding",
    }
)

#: Keys holding free-form data: below them no key is structure (a tool argument named ``id`` is
#: redacted like any other).
PAYLOAD_KEYS = frozenset(
    {
        "arguments",
        "data",
        "details",
        "input",
        "outputSchema",
        "preserveData",
        "providerPayload",
        "partialJson",
    }
)
_IMAGE_BYTES = ("data", "source")

#: Opaque payloads dropped from redacted output, as omp's share drops them: (entry type or "*",
#: key). ``message`` keys apply to the message object of a message entry.
_DROPPED_ENTRY_KEYS: dict[str, tuple[str, ...]] = {
    "compaction": ("details", "preserveData"),
    "branch_summary": ("details",),
    "custom_message": ("details",),
    "session_init": ("outputSchema",),
    "mode_change": ("data",),
}
_DROPPED_MESSAGE_KEYS = ("providerPayload", "details")
_DROPPED_BLOCK_TYPES = frozenset({"redactedThinking", "anthropicServerTool"})

_OMP_PLACEHOLDER = re.compile(r"\$\$(?:[A-Z0-9]+_)?[A-Z0-9]{4,}(?::[ULCM])?\$\$")
_OUR_PLACEHOLDER = re.compile(r"\[REDACTED:[a-z0-9-]+#\d+\]")

_OMP_KINDS = {
    "AWSAccessKey": "aws-access-key-id",
    "GoogleAPIKey": "google-api-key",
    "SlackToken": "slack-token",
    "NpmToken": "npm-token",
    "StripeKey": "stripe-key",
    "StripeWebhookSecret": "stripe-webhook-secret",
    "HuggingFaceToken": "huggingface-token",
    "SendGridKey": "sendgrid-key",
    "JWT": "jwt",
    "BearerToken": "bearer-token",
    "PrivateKey": "private-key",
}


def _omp_kind(entry: SecretEntry, value: str) -> str:
    if entry.source == "builtin":
        if entry.friendly_name == "Credential":
            lowered = value.lower()
            if lowered.startswith(("gh", "github_pat_")):
                return "github-token"
            if lowered.startswith("glpat-"):
                return "gitlab-token"
            if lowered.startswith("sk-ant-"):
                return "anthropic-key"
            return "openai-key"
        return _OMP_KINDS.get(entry.friendly_name or "", "credential")
    if entry.source.startswith("env:"):
        return "env-secret"
    if entry.friendly_name:
        slug = re.sub(r"[^a-z0-9]+", "-", entry.friendly_name.lower()).strip("-")
        if slug:
            return slug[:32]
    return "configured-secret"


def _unescaped(value: str) -> str:
    """A value found inside JSON text that is itself a JSON string (``\\n`` for line breaks, as a
    key in a tool argument's JSON payload): its decoded form, so both spellings group together."""
    if "\\" not in value:
        return value
    try:
        decoded = json.loads(f'"{value}"')
    except ValueError:
        return value
    return decoded if isinstance(decoded, str) else value


def fingerprint(value: str) -> str:
    """A short stable identifier of a value (16 hex digits of SHA-256 of it, JSON escapes decoded),
    to group findings by key without printing it. A fingerprint of a guessable value can be
    checked by hashing guesses: it is for grouping, not for publishing."""
    return hashlib.sha256(_unescaped(value).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def masked_preview(value: str) -> str:
    """What a report shows of a value: at most its first 4 characters (only when it is 20 or
    more long, where those are its vendor prefix), then its length: never the value."""
    single = value.replace("\n", " ")
    shown = single[:4] if len(value) >= 20 else ""
    return f"{shown}…({len(value)} chars)"


@dataclass(frozen=True)
class Finding:
    """One secret found in one string: where in the string, what it is and how sure."""

    start: int
    end: int
    value: str
    kind: str
    confidence: Confidence
    rule: str

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.value)

    @property
    def preview(self) -> str:
        return masked_preview(self.value)


@dataclass
class RedactionReport:
    """What one output masked and dropped."""

    values: Counter[str] = field(default_factory=Counter)
    occurrences: Counter[str] = field(default_factory=Counter)
    dropped: Counter[str] = field(default_factory=Counter)
    paths: int = 0

    @property
    def total_values(self) -> int:
        return sum(self.values.values())

    def summary_lines(self) -> list[str]:
        """The lines a command prints after a redacted output (always ending in the warning)."""
        lines = []
        if self.values:
            kinds = ", ".join(
                f"{kind} {n}" for kind, n in sorted(self.values.items(), key=lambda kv: (-kv[1], kv[0]))
            )
            places = sum(self.occurrences.values())
            lines.append(
                f"redacted {self.total_values} value{'s' if self.total_values != 1 else ''} "
                f"in {places} place{'s' if places != 1 else ''}: {kinds}"
            )
        else:
            lines.append("redacted 0 values: no pattern matched")
        if self.dropped:
            dropped = ", ".join(f"{what} {n}" for what, n in sorted(self.dropped.items()))
            lines.append(f"dropped {sum(self.dropped.values())} opaque payloads: {dropped}")
        if self.paths:
            lines.append(f"anonymised {self.paths} path{'s' if self.paths != 1 else ''}")
        lines.append(FLOOR_WARNING)
        return lines


class PathAnonymizer:
    """Maps home directories and project directories to stable fake ones: each project
    directory (a session's cwd) to ``/project`` (``/project-2``, … for further ones), each home
    directory to ``/home/user`` (``/home/user2``, …), longest first so a project under a home
    keeps its project name."""

    _HOME = re.compile(r"(?:/home/|/Users/|[A-Za-z]:\\Users\\)[A-Za-z0-9._-]+")

    def __init__(self, projects: Iterable[str] = (), homes: Iterable[str] = ()) -> None:
        self._map: dict[str, str] = {}
        for project in projects:
            self.add_project(project)
        for home in homes:
            self._add_home(home)

    def add_project(self, path: str) -> None:
        cleaned = path.rstrip("/\\")
        if len(cleaned) < 2 or cleaned in self._map:
            return
        count = sum(1 for fake in self._map.values() if fake.startswith("/project"))
        self._map[cleaned] = "/project" if count == 0 else f"/project-{count + 1}"

    def _add_home(self, path: str) -> str:
        cleaned = path.rstrip("/\\")
        if cleaned not in self._map:
            count = sum(1 for fake in self._map.values() if fake.startswith("/home/user"))
            self._map[cleaned] = "/home/user" if count == 0 else f"/home/user{count + 1}"
        return self._map[cleaned]

    def apply(self, text: str) -> tuple[str, int]:
        for home in self._HOME.findall(text):
            self._add_home(home)
        changed = 0
        for real in sorted(self._map, key=len, reverse=True):
            if real in text:
                # A whole path component: not `//root` of `mongodb://root:…@`, not `/rooted`.
                pattern = re.compile(r"(?<!:/)(?<![A-Za-z0-9._-])" + re.escape(real) + r"(?![A-Za-z0-9._-])")
                text, n = pattern.subn(self._map[real].replace("\\", "\\\\"), text)
                changed += n
        return text, changed


class Redactor:
    """One redacted output: finds secrets, replaces them with stable placeholders, counts them.

    ``omp_entries`` are omp's entries (:func:`omp_session.tools.omp_secrets.build_omp_entries`;
    default: omp's built-in patterns only), ``omp_key`` the placeholder key omp would use (its value
    is redacted wherever it appears, as omp does), ``min_confidence`` the lowest tier of our rules
    applied, ``paths`` a :class:`PathAnonymizer` when paths are to be anonymised."""

    def __init__(
        self,
        *,
        omp_entries: list[SecretEntry] | None = None,
        omp_key: str | None = None,
        rules: Iterable[Rule] = RULES,
        min_confidence: Confidence = "low",
        paths: PathAnonymizer | None = None,
    ) -> None:
        from omp_session.tools.omp_secrets import builtin_credential_entries

        self._omp = OmpSecretObfuscator(
            omp_entries if omp_entries is not None else builtin_credential_entries(),
            omp_key if omp_key is not None else _random.token_urlsafe(32),
        )
        limit = CONFIDENCE_ORDER[min_confidence]
        self._rules = [rule for rule in rules if CONFIDENCE_ORDER[rule.confidence] <= limit]
        self._paths = paths
        self._placeholders: dict[str, str] = {}
        self._kind_counts: Counter[str] = Counter()
        self.report = RedactionReport()

    # finding

    def _omp_findings(self, text: str) -> list[tuple[str, str, str, bool]]:
        """(value, omp's output, kind, obfuscate mode) for every value omp replaces in ``text``."""
        before = len(self._omp.replaced)
        self._omp.obfuscate(text)
        found = []
        for record in self._omp.replaced[before:]:
            found.append(
                (
                    record.value,
                    record.output,
                    _omp_kind(record.entry, record.value),
                    record.entry.mode == "obfuscate",
                )
            )
        return found

    def _rule_findings(self, text: str) -> list[Finding]:
        candidates: list[tuple[int, int, int, Finding]] = []
        lowered = text.lower()
        for priority, rule in enumerate(self._rules):
            if rule.probes and not any(probe in lowered for probe in rule.probes):
                continue
            for match in rule.pattern.finditer(text):
                start, end = match.span(rule.group)
                if start < 0 or end <= start:
                    continue
                value = text[start:end]
                if _OUR_PLACEHOLDER.search(value) or _OMP_PLACEHOLDER.fullmatch(value):
                    continue
                if rule.validate is not None and not rule.validate(value):
                    continue
                name = f"{rule.kind}/{priority}"
                candidates.append(
                    (
                        start,
                        -(end - start),
                        priority,
                        Finding(start, end, value, rule.kind, rule.confidence, name),
                    )
                )
        candidates.sort(key=lambda c: (c[0], c[1], c[2]))
        chosen: list[Finding] = []
        last_end = -1
        for _start, _negative_length, _priority, finding in candidates:
            if finding.start >= last_end:
                chosen.append(finding)
                last_end = finding.end
        return chosen

    def find(self, text: str) -> list[Finding]:
        """Every secret in ``text``: omp's first (positions where the value occurs), then ours in
        what omp left; without changing the output's placeholders or counts."""
        findings: list[Finding] = []
        covered: list[tuple[int, int]] = []
        for value, _output, kind, _obfuscate in self._omp_findings(text):
            position = text.find(value)
            if position >= 0:
                findings.append(Finding(position, position + len(value), value, kind, "high", f"omp:{kind}"))
            while position >= 0:
                covered.append((position, position + len(value)))
                position = text.find(value, position + 1)
        # Ours run over the original text (context such as an access key id before its secret
        # stays visible to them); what omp already found is not reported twice.
        for finding in self._rule_findings(text):
            if not any(finding.start < end and finding.end > start for start, end in covered):
                findings.append(finding)
        return sorted(findings, key=lambda f: f.start)

    # replacing

    def placeholder(self, value: str, kind: str) -> str:
        """The placeholder of ``value`` in this output (a new one the first time it is seen)."""
        existing = self._placeholders.get(value)
        if existing is not None:
            return existing
        self._kind_counts[kind] += 1
        made = f"[REDACTED:{kind}#{self._kind_counts[kind]}]"
        self._placeholders[value] = made
        self.report.values[kind] += 1
        return made

    def redact_text(self, text: str) -> str:
        """``text`` with every secret replaced (and paths anonymised when asked)."""
        if not text:
            return text
        if self._paths is not None:
            # Paths first: a project directory is replaced whole, whatever it holds.
            text, changed = self._paths.apply(text)
            self.report.paths += changed
        before = len(self._omp.replaced)
        result = self._omp.obfuscate(text)
        for record in self._omp.replaced[before:]:
            kind = _omp_kind(record.entry, record.value)
            if record.entry.mode == "obfuscate" and record.output in result:
                mine = self.placeholder(record.value, kind)
                self.report.occurrences[kind] += result.count(record.output)
                result = result.replace(record.output, mine)
            elif record.entry.mode == "replace":
                if record.value not in self._placeholders:
                    self._placeholders[record.value] = record.output
                    self.report.values[kind] += 1
                self.report.occurrences[kind] += 1
        findings = self._rule_findings(result)
        if findings:
            pieces: list[str] = []
            cursor = 0
            for finding in findings:
                pieces.append(result[cursor : finding.start])
                pieces.append(self.placeholder(finding.value, finding.kind))
                self.report.occurrences[finding.kind] += 1
                cursor = finding.end
            pieces.append(result[cursor:])
            result = "".join(pieces)
        return result

    def redact_value(self, value: Any, *, key: str | None = None, structural: bool = True) -> Any:
        """A JSON value with every string redacted, except the structural keys and image bytes of
        the entry's own structure (``structural``); below a payload key (tool arguments, custom
        data, …) every string is redacted, whatever its key."""
        if isinstance(value, str):
            if structural and key in STRUCTURAL_KEYS:
                return value
            return self.redact_text(value)
        if isinstance(value, list):
            return [self.redact_value(item, structural=structural) for item in value]
        if isinstance(value, dict):
            image = structural and value.get("type") == "image"
            return {
                k: (
                    v
                    if image and k in _IMAGE_BYTES
                    else self.redact_value(v, key=k, structural=structural and k not in PAYLOAD_KEYS)
                )
                for k, v in value.items()
            }
        return value

    def _drop(self, record: dict[str, Any], keys: Iterable[str], where: str) -> None:
        for name in keys:
            if name in record:
                del record[name]
                self.report.dropped[f"{where}.{name}" if where else name] += 1

    def redact_entry(self, entry: Mapping[str, Any]) -> dict[str, Any]:
        """A redacted copy of one entry (or header) with omp's opaque payloads dropped."""
        record: dict[str, Any] = copy.deepcopy(dict(entry))
        entry_type = record.get("type")
        if isinstance(entry_type, str):
            self._drop(record, _DROPPED_ENTRY_KEYS.get(entry_type, ()), entry_type)
        message = record.get("message")
        if isinstance(message, dict):
            self._drop(message, _DROPPED_MESSAGE_KEYS, "message")
            content = message.get("content")
            if isinstance(content, list):
                kept = []
                for block in content:
                    if isinstance(block, dict) and block.get("type") in _DROPPED_BLOCK_TYPES:
                        self.report.dropped[str(block.get("type"))] += 1
                        continue
                    kept.append(block)
                message["content"] = kept
        redacted = self.redact_value(record)
        assert isinstance(redacted, dict)
        return redacted

    def redact_line_text(self, line: str) -> str:
        """A line that is not JSON, redacted as text (kept, so nothing is silently lost)."""
        return self.redact_text(line)


def iter_strings(value: Any, path: str = "", *, structural: bool = True) -> Iterator[tuple[str, str]]:
    """(field path, string) for every string :meth:`Redactor.redact_value` redacts, e.g.
    ``message.content[0].text``."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from iter_strings(item, f"{path}[{index}]", structural=structural)
    elif isinstance(value, dict):
        image = structural and value.get("type") == "image"
        for key, item in value.items():
            if structural and key in STRUCTURAL_KEYS and isinstance(item, str):
                continue
            if image and key in _IMAGE_BYTES:
                continue
            inner = structural and key not in PAYLOAD_KEYS
            yield from iter_strings(item, f"{path}.{key}" if path else str(key), structural=inner)
