"""Per-version rules of omp: one frozen :class:`Dialect` per omp version (issue 10).

Every rule in which omp 13.19, omp 18.2 and omp 18.3 differ lives here, so that the modules that
build entries, contexts, usage totals and listings ask the dialect instead of testing a version. The
differences are described in ``shared/spec/omp18-differences.md`` (cited as §n below) and
``shared/spec/omp183-differences.md`` (cited as 18.3 §n).

Reading does not depend on the dialect: a file written by either omp opens under both (the title
slot of omp 18 is always recognised and folded into the header). The dialect decides how we
*write* and how we *interpret* (context, usage, listing); the one load rule it decides is whether
OpenAI replay history is kept in memory (``keeps_openai_replay``).

Selecting one: ``SessionManager.create(..., dialect="18.3")`` (``"13"``, ``"18.2"``, ``"18.3"``,
``"18"`` = the newest 18.x we know, 18.3; or a :class:`Dialect`), else the environment variable
``OMP_SESSION_DIALECT`` (the same names), else *auto*: see :func:`auto_dialect` and
docs/compatibility.md ("never strand an older omp").

This module sits just above ``format/`` (it imports only from it), so every layer may use it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from .errors import UnknownDialectError  # defined in errors; importable from here as before
from .format.ids import new_session_id, new_uuid_v7

ENV_VAR = "OMP_SESSION_DIALECT"

_CONTROL_CHARS = re.compile("[\u0000-\u001f\u007f-\u009f]")
_SPACE_RUNS = re.compile(" +")
#: What JavaScript's ``String.prototype.trim`` removes (WhiteSpace and LineTerminator).
JS_TRIM = _JS_TRIM = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def keep_title(name: str) -> str:
    """omp 13.19 stores a session name verbatim."""
    return name


def clean_title(name: str) -> str:
    """omp 18 (§1.4): control characters become spaces, runs of spaces collapse, then trim.

    >>> clean_title("  a\\n\\tb   c ")
    'a b c'
    """
    return _SPACE_RUNS.sub(" ", _CONTROL_CHARS.sub(" ", name)).strip(_JS_TRIM)


@dataclass(frozen=True)
class ContextRules:
    """How ``build_session_context`` reads a path (§3)."""

    #: An explicit default ``model_change`` is not overridden by later assistant messages (§3.2).
    sticky_default_model: bool
    #: ``reset_boundary`` entries start the context after the last one (§3.3).
    reset_boundaries: bool
    #: Tool calls without a result are stripped from every assistant turn (§3.5).
    strip_dangling_tool_calls: bool
    #: Aborted/error assistant turns (and their tool results), retry-recovery and empty error
    #: turns and internal custom messages are dropped (§3.5).
    drop_failed_turns: bool
    #: ``mcp_tool_selection`` is tracked and reported (13.19 only; gone in 18, §2).
    mcp_tool_selection: bool
    #: The result carries ``configuredThinkingLevel`` (§2.7).
    configured_thinking_level: bool
    #: Keys of a compaction's summary message between ``summary`` and ``timestamp``, in omp's
    #: order (§3.4): copied from the compaction, except ``providerPayload`` (the replay payload)
    #: and ``historyRewriteAt`` (see ``anthropic_native_context``), which are computed.
    compaction_summary_fields: tuple[str, ...]
    #: ``providerReplayThroughEntryId`` re-emits entries a remote history does not cover; an
    #: Anthropic server compaction becomes the summary's ``providerPayload``; a context rollover
    #: re-emits the last user request (§3.4).
    provider_replay: bool
    #: A service tier is kept per provider family (``{"openai": "flex"}``), not as written.
    service_tier_by_family: bool = False
    #: ``custom_message`` entries are normalised (type, display, attribution) and dropped when
    #: their content cannot be sent (§2.9, §3.5).
    normalize_custom_messages: bool = False
    #: ``custom_message`` types never sent to the model (§3.5).
    hidden_custom_types: tuple[str, ...] = ()
    #: omp 18.3 (18.3 §2): an Anthropic native compaction's summary keeps the compaction's own
    #: timestamp and gets ``historyRewriteAt`` (first retained entry − 1 ms); a snapshot compaction
    #: (``firstKeptEntryId`` ``""``) keeps the entries after ``providerReplayThroughEntryId``; the
    #: payload carries the compaction's ``signature``.
    anthropic_native_context: bool = False
    #: ``convert_to_llm`` drops an empty user-interrupted aborted assistant turn (omp 18).
    drop_empty_interrupted_turns: bool = False
    #: ... except when it carries ``requestControls`` (omp 18.3, 18.3 §2).
    keep_request_controls: bool = False

    @property
    def needs_full_path(self) -> bool:
        """Whether the context needs every entry of the path (not only the state the offset index
        precomputes for 13.19's rules)."""
        return (
            self.sticky_default_model
            or self.reset_boundaries
            or self.strip_dangling_tool_calls
            or self.drop_failed_turns
            or self.service_tier_by_family
            or self.provider_replay
        )


@dataclass(frozen=True)
class UsageRules:
    """``getUsageStatistics`` (§4): the keys reported, in order, and what counts."""

    fields: tuple[str, ...]
    counts_model_usage: bool


@dataclass(frozen=True)
class ListingRules:
    """``SessionManager.list`` (§8.1)."""

    #: Bytes of each file read for its summary (``None``: the whole file).
    prefix_bytes: int | None
    #: ``size`` and ``status`` are part of a listed session.
    size_and_status: bool
    #: Pinned sessions (``session-pins.json``) are listed first (omp 18 ``sortPinnedFirst``).
    pinned_first: bool = False
    #: A listed session has ``assistantTurns`` (after ``messageCount``; 18.3 §1, *18.2.9*).
    assistant_turns: bool = False
    #: ``continue_recent`` resumes the newest *non-empty* session (``isEmptySession``, 18.3 §1).
    continue_skips_empty: bool = False
    #: A listing first renames the newest ``<name>.jsonl.<x>.bak`` of a missing ``<name>.jsonl``
    #: back into place (omp 18 ``recoverOrphanedBackups``; a write, docs/compatibility.md).
    promote_orphaned_backups: bool = False


@dataclass(frozen=True)
class PersistRules:
    """What the persistence transform changes on the way to disk (spec §7.4, omp18-differences §5.5)."""

    #: Streaming scratch keys never written (omp 18 persists ``partialJson``).
    dropped_keys: frozenset[str]
    #: Externalised images also get a typed sidecar ``<sha256>.<ext>`` in the blob store.
    image_extensions: bool
    #: Signed blocks (a signature, redacted thinking, encrypted reasoning, Anthropic compaction
    #: state) are written verbatim, never cut; 13.19 cuts over-long signatures to "".
    signed_verbatim: bool
    #: A spilled MCP tool result is written without ``details.structuredContent`` (18.3 §3).
    drop_spilled_structured_content: bool = False
    #: A thinking signature whose reasoning item the message's OpenAI Responses ``providerPayload``
    #: already carries is left out of the written line (omp 18's
    #: ``stripReplayedReasoningSignatures``; memory keeps it).
    drop_replayed_signatures: bool = False


@dataclass(frozen=True)
class HeaderOrders:
    """Writer key orders of the header per operation (§2.10); absent (``None``) keys are left out."""

    new: tuple[str, ...]
    fork: tuple[str, ...]
    branched: tuple[str, ...]
    fork_from: tuple[str, ...]


@dataclass(frozen=True)
class Dialect:
    """Everything that is specific to one omp version."""

    key: str
    name: str
    #: Full rewrites start with the 256-byte title slot (§1.2).
    title_slot: bool
    #: Mints a session id: a 16-hex Snowflake (13.19) or a UUIDv7 (18, §7).
    new_session_id: Callable[[], str]
    #: Cleans a name given to ``set_session_name`` (§1.4).
    clean_title: Callable[[str], str]
    #: A rename records a ``title_change`` entry, honours auto/user and rewrites the slot in place.
    title_change_entries: bool
    #: ``thinking_level_change`` always carries ``configured``; ``model_change`` always carries
    #: ``resolvedModelIsFallback`` (§2.7, §2.8).
    explicit_model_fields: bool
    #: Key order of a compaction entry after ``type, id, parentId, timestamp`` (§2.6).
    compaction_keys: tuple[str, ...]
    headers: HeaderOrders
    #: The first append after a load with malformed lines rewrites the file, dropping them (§5.4).
    rewrite_after_malformed: bool
    #: ``new_session`` writes the new file at once (§5.1).
    new_session_materializes: bool
    #: ``append_mcp_tool_selection`` exists (13.19 only).
    mcp_tool_selection: bool
    #: ``move_to`` records the former paths in the header's ``previousSessionFiles`` (§2.10).
    records_previous_files: bool
    #: ``open`` works in the header's cwd only when that directory can be entered, else in the
    #: process cwd (the header keeps the recorded one, ``get_recorded_cwd``; §6.1).
    cwd_must_exist: bool
    context: ContextRules
    usage: UsageRules
    listing: ListingRules
    persist: PersistRules
    aliases: tuple[str, ...] = field(default=())
    #: A path (``get_branch``, the context) is walked up from its entry until an id repeats (omp 18's
    #: ``pathTo``), instead of starting at the root we choose for a parent cycle (docs/durability.md).
    path_stops_at_repeated_id: bool = False
    #: An assistant message's OpenAI Responses replay (``providerPayload``, thinking signatures) is
    #: kept in memory on load, except a ``github-copilot`` one; omp 13.19 drops every one (§6.6).
    #: Dropping any makes the next write a full rewrite under omp 18 (its ``#rewriteRequired``).
    keeps_openai_replay: bool = False
    #: ``drop_session`` also deletes every ``<name>.jsonl.*.bak`` beside the file (omp 18.2.9+,
    #: 18.3 §1; docs/compatibility.md says what that does to our own backups).
    drop_removes_backups: bool = False

    def __repr__(self) -> str:
        return f"<Dialect {self.name}>"


_NEW_13 = ("type", "version", "id", "timestamp", "cwd", "parentSession")

OMP_13_19 = Dialect(
    key="13",
    name="omp 13.19",
    title_slot=False,
    new_session_id=new_session_id,
    clean_title=keep_title,
    title_change_entries=False,
    explicit_model_fields=False,
    compaction_keys=(
        "summary",
        "shortSummary",
        "firstKeptEntryId",
        "tokensBefore",
        "details",
        "fromExtension",
        "preserveData",
    ),
    headers=HeaderOrders(
        new=_NEW_13,
        fork=("type", "version", "id", "title", "timestamp", "cwd", "parentSession"),
        branched=_NEW_13,
        fork_from=(*_NEW_13, "title"),
    ),
    rewrite_after_malformed=False,
    new_session_materializes=False,
    mcp_tool_selection=True,
    records_previous_files=False,
    cwd_must_exist=False,
    context=ContextRules(
        sticky_default_model=False,
        reset_boundaries=False,
        strip_dangling_tool_calls=False,
        drop_failed_turns=False,
        mcp_tool_selection=True,
        configured_thinking_level=False,
        compaction_summary_fields=("shortSummary", "tokensBefore", "providerPayload"),
        provider_replay=False,
    ),
    usage=UsageRules(
        fields=("input", "output", "cacheRead", "cacheWrite", "premiumRequests", "cost"),
        counts_model_usage=False,
    ),
    listing=ListingRules(prefix_bytes=None, size_and_status=False),
    persist=PersistRules(
        dropped_keys=frozenset({"partialJson", "jsonlEvents"}), image_extensions=False, signed_verbatim=False
    ),
    aliases=("13", "13.19", "13.19.0", "omp13"),
)

_NEW_18 = ("type", "version", "id", "timestamp", "cwd", "parentSession", "providerPromptCacheKey")

OMP_18_2 = Dialect(
    key="18",
    name="omp 18.2",
    title_slot=True,
    new_session_id=new_uuid_v7,
    clean_title=clean_title,
    title_change_entries=True,
    explicit_model_fields=True,
    compaction_keys=(
        "summary",
        "shortSummary",
        "firstKeptEntryId",
        "tokensBefore",
        "tokensAfter",
        "method",
        "providerReplayThroughEntryId",
        "details",
        "fromExtension",
        "preserveData",
    ),
    headers=HeaderOrders(
        new=(*_NEW_18, "additionalDirectories"),
        fork=(
            "type",
            "version",
            "id",
            "title",
            "titleSource",
            "timestamp",
            "cwd",
            "additionalDirectories",
            "parentSession",
            "providerPromptCacheKey",
        ),
        branched=(
            "type",
            "version",
            "id",
            "timestamp",
            "cwd",
            "title",
            "titleSource",
            "parentSession",
            "additionalDirectories",
        ),
        fork_from=(*_NEW_18, "title", "titleSource", "additionalDirectories"),
    ),
    rewrite_after_malformed=True,
    new_session_materializes=True,
    mcp_tool_selection=False,
    records_previous_files=True,
    cwd_must_exist=True,
    context=ContextRules(
        sticky_default_model=True,
        reset_boundaries=True,
        strip_dangling_tool_calls=True,
        drop_failed_turns=True,
        mcp_tool_selection=False,
        configured_thinking_level=True,
        compaction_summary_fields=(
            "shortSummary",
            "tokensBefore",
            "tokensAfter",
            "method",
            "providerPayload",
            "warning",
            "historyRewriteAt",
        ),
        provider_replay=True,
        service_tier_by_family=True,
        normalize_custom_messages=True,
        hidden_custom_types=("prewalk-plan", "vibe-mode-context"),
        drop_empty_interrupted_turns=True,
    ),
    usage=UsageRules(
        fields=(
            "input",
            "output",
            "cacheRead",
            "cacheWrite",
            "totalTokens",
            "orchestrationInput",
            "orchestrationOutput",
            "orchestrationCacheRead",
            "premiumRequests",
            "cost",
        ),
        counts_model_usage=True,
    ),
    listing=ListingRules(
        prefix_bytes=4096, size_and_status=True, pinned_first=True, promote_orphaned_backups=True
    ),
    persist=PersistRules(
        dropped_keys=frozenset({"jsonlEvents"}),
        image_extensions=True,
        signed_verbatim=True,
        drop_replayed_signatures=True,
    ),
    aliases=("18.2", "18.2.3", "omp18.2"),
    path_stops_at_repeated_id=True,
    keeps_openai_replay=True,
)

#: omp 18.3 (18.3.4, the newest omp): the file format of 18.2, with 18.3's listing, resuming,
#: Anthropic native compaction context and spilled-MCP write rule (omp183-differences.md).
OMP_18_3 = replace(
    OMP_18_2,
    key="18.3",
    name="omp 18.3",
    context=replace(OMP_18_2.context, anthropic_native_context=True, keep_request_controls=True),
    listing=replace(OMP_18_2.listing, assistant_turns=True, continue_skips_empty=True),
    persist=replace(OMP_18_2.persist, drop_spilled_structured_content=True),
    drop_removes_backups=True,
    aliases=("18", "18.3", "18.3.4", "omp18", "omp18.3"),
)

#: Every dialect, oldest first; the last is the newest omp we know.
DIALECTS = (OMP_13_19, OMP_18_2, OMP_18_3)
NEWEST = DIALECTS[-1]

DialectChoice = str | Dialect | None


def dialect_named(value: str, origin: str = "dialect=") -> Dialect:
    text = value.strip().lower()
    for dialect in DIALECTS:
        if text in dialect.aliases or text == dialect.name:
            return dialect
    raise UnknownDialectError(value, origin)


def explicit_dialect(choice: DialectChoice) -> Dialect | None:
    """The dialect asked for by ``choice``, else by ``OMP_SESSION_DIALECT``; ``None`` means *auto*."""
    if isinstance(choice, Dialect):
        return choice
    if choice is not None:
        return dialect_named(choice)
    env = os.environ.get(ENV_VAR, "").strip()
    return dialect_named(env, f"environment variable {ENV_VAR}") if env else None


def auto_dialect(has_slot: bool) -> Dialect:
    """*Auto* mode: a file (or a store) written with title slots is omp 18's (the newest 18.x we
    know, 18.3: its files are 18.2's, so an omp 18.2 reads what we write), else omp 13.19's.

    The layout of an existing file is kept in auto mode whatever the dialect (see
    docs/compatibility.md); this only picks the rules for what else we write and interpret.
    """
    return NEWEST if has_slot else OMP_13_19


__all__ = [
    "DIALECTS",
    "ENV_VAR",
    "NEWEST",
    "OMP_13_19",
    "OMP_18_2",
    "OMP_18_3",
    "ContextRules",
    "Dialect",
    "DialectChoice",
    "HeaderOrders",
    "ListingRules",
    "PersistRules",
    "UnknownDialectError",
    "UsageRules",
    "auto_dialect",
    "clean_title",
    "dialect_named",
    "explicit_dialect",
]
