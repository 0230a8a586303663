"""A port of omp 18.3.4's ``SecretObfuscator.obfuscate`` (internal; the public name is
`omp_session.redact`; the rules and their order are described in :mod:`omp_session.tools.omp_secrets`).

omp obfuscates text on its way to the provider; a stored session holds the raw text, so this port
covers text without placeholders of an earlier pass. The fixed-point machinery omp keeps for
re-obfuscating its own output (origin tags, spill-over stabilisation) changes no such text and is
not ported. tests/golden/omp_secrets/ holds omp's own outputs; the port matches them byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from omp_session.tools.omp_replacement import (
    _MIN_OBFUSCATE_LEN,
    _PLACEHOLDER_RE,
    _PREFIXED_BODY_RE,
    _build_placeholder,
    _ensure_distinct,
    _find_nonmatching,
    _js_length,
    _label_collides,
    _rematches_in_context,
    _sanitize_for_collision,
    _sanitize_friendly_name,
    _search,
    _unprefixed,
    build_hash_base,
    build_keyed_replacement_run,
    generate_deterministic_replacement,
    infer_case_hint,
    regex_has_unresolvable_short_match_fallback,
)
from omp_session.tools.omp_secrets import Mode, SecretEntry, compile_js_regex

__all__ = ["OmpObfuscation", "OmpSecretObfuscator"]


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
    _sanitized_cache: dict[str, str] = field(default_factory=dict)
    _short_sanitized: set[str] = field(default_factory=set)
    _index_by_secret: dict[str, int] = field(default_factory=dict)
    replaced: list[OmpObfuscation] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._replace[self.key] = (
            _ensure_distinct(generate_deterministic_replacement(self.key), self.key),
            None,
        )
        self._configured.add(self.key)
        self._remember(self.key)
        for entry in self.entries:
            if entry.type == "plain":
                self._configured.add(entry.content)
                self._remember(entry.content)
                continue
            try:
                regex = compile_js_regex(entry.content, entry.flags)
            except ValueError:
                continue
            unresolvable = entry.mode == "replace" and entry.replacement is None
            if unresolvable and regex_has_unresolvable_short_match_fallback(regex):
                continue
            ignore_case = bool(regex.flags & re.IGNORECASE)
            prefixes = entry.literal_prefixes
            probes = (
                tuple(p.lower() if ignore_case else p for p in prefixes)
                if prefixes and all(prefixes)
                else None
            )
            self._regexes.append(
                _Regex(regex, entry.mode, entry.replacement, entry.friendly_name, probes, ignore_case, entry)
            )
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
                self._index_by_secret.setdefault(entry.content, index)
                self._remember(entry.content)
                index += 1
            else:
                replacement = entry.replacement
                if replacement is None:
                    replacement = _ensure_distinct(
                        generate_deterministic_replacement(entry.content), entry.content
                    )
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

    def _sanitized(self, value: str) -> str:
        # Every configured and minted secret is compared with every label checked: memoised.
        found = self._sanitized_cache.get(value)
        if found is None:
            found = self._sanitized_cache[value] = _sanitize_for_collision(value)
        return found

    def _remember(self, secret: str) -> None:
        """Note a configured or minted secret for the label checks: only a sanitised value shorter
        than the display cap can lie inside a label shorter than the cap."""
        sanitized = self._sanitized(secret)
        if sanitized and len(sanitized) < 32:
            self._short_sanitized.add(sanitized)

    def _prefix_is_secret_shaped(self, prefix: str) -> bool:
        if len(prefix) < 32:
            # `_label_collides` for a label under the cap is containment: only shorter values count.
            if any(value in prefix for value in self._short_sanitized):
                return True
            for value in self._current_regex_values:
                sanitized = self._sanitized(value)
                if sanitized and sanitized in prefix:
                    return True
            return any(entry.regex.search(prefix) for entry in self._regexes)
        for value in self._configured:
            if _label_collides(prefix, self._sanitized(value)):
                return True
        for value in self._current_regex_values:
            if _label_collides(prefix, self._sanitized(value)):
                return True
        for secret, _placeholder, _entry in self._mappings.values():
            if _label_collides(prefix, self._sanitized(secret)):
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

    def _may_match(self, entry: _Regex, text: str, lowered: str | None = None) -> bool:
        if entry.probes is None:
            return True
        haystack = (lowered if lowered is not None else text.lower()) if entry.ignore_case else text
        return any(probe in haystack for probe in entry.probes)

    def _regex_values(self, text: str) -> set[str]:
        values: set[str] = set()
        lowered = text.lower()
        for entry in self._regexes:
            if not self._may_match(entry, text, lowered):
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
                        OmpObfuscation(
                            secret,
                            replacement,
                            entry or SecretEntry("plain", secret, "replace", source="placeholder-key"),
                        )
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

    def _untouched(self, text: str) -> bool:
        """Whether no entry can change ``text`` (most texts of a session): no placeholder-like
        token, no configured literal, no regex whose literal prefixes occur."""
        if "$$" in text:
            return False
        if any(secret in text for secret in self._replace) or any(secret in text for secret in self._plain):
            return False
        lowered = text.lower()
        return not any(self._may_match(entry, text, lowered) for entry in self._regexes)

    def obfuscate(self, text: str, shared_regex_values: Iterable[str] = ()) -> str:
        """The text with every secret replaced, as omp's `SecretObfuscator.obfuscate` returns it."""
        if self._untouched(text):
            return text
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
        for compiled in self._regexes:
            if not self._may_match(compiled, result):
                continue
            result = self._apply_regex(compiled, result)
            if compiled.mode == "replace":
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
        for t_start, t_end, canonical, scan_length, preserve, default, s_start, _s_end in reversed(matches):
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
                self._mappings[index] = (
                    canonical,
                    self._create_placeholder(canonical, entry.friendly_name),
                    entry.entry,
                )
                self._index_by_secret.setdefault(canonical, index)
                self._remember(canonical)
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
        # omp: the plain mapping first, then the first regex mapping with this secret.
        if secret in self._plain:
            return self._plain[secret]
        return self._index_by_secret.get(secret)

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
