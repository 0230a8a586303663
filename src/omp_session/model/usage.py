"""Usage totals (spec §6.3; omp18-differences §4).

One :class:`UsageStatistics` accumulates everything either omp counts: assistant messages and
``task`` tool results (both versions), and ``model_usage`` entries (omp 18 only, kept apart in
``side``). :meth:`UsageStatistics.reported` gives the view of one dialect: its keys, in its order,
with or without the ``model_usage`` spend.

Differences from omp, on purpose: a ``usage`` without a ``cost`` object counts as cost 0 where
omp throws a TypeError and cannot open the session at all (corpus
``legacy-1319-unknown-type-and-fields``). A missing token count is reported as omp 18 reports it
(``NaN``, which JSON writes as ``null``) under the 18 dialect, and as 0 under 13.19 (as before).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any

from omp_session.dialects import OMP_13_19, UsageRules

__all__ = [
    "UsageStatistics",
    "usage_of",
]


#: Token keys omp adds with ``+=`` (a missing one makes the total NaN in JavaScript).
_STRICT_KEYS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")
_ORCHESTRATION = (
    ("orchestrationInput", "input"),
    ("orchestrationOutput", "output"),
    ("orchestrationCacheRead", "cacheRead"),
)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def usage_of(entry: dict[str, Any]) -> tuple[Any, bool]:
    """``(usage, is_model_usage)`` of an entry that carries spend, else ``(None, False)``."""
    kind = entry.get("type")
    if kind == "model_usage":
        return entry.get("usage"), True
    if kind != "message":
        return None, False
    message = entry.get("message")
    if not isinstance(message, dict):
        return None, False
    role = message.get("role")
    if role == "assistant":
        return message.get("usage"), False
    if role == "toolResult" and message.get("toolName") == "task":
        details = message.get("details")
        if isinstance(details, dict):
            return details.get("usage"), False
    return None, False


@dataclass
class UsageStatistics:
    """Token and cost totals, plus the ``model_usage`` spend that only omp 18 counts."""

    input: float = 0
    output: float = 0
    cacheRead: float = 0
    cacheWrite: float = 0
    totalTokens: float = 0
    orchestrationInput: float = 0
    orchestrationOutput: float = 0
    orchestrationCacheRead: float = 0
    premiumRequests: float = 0
    cost: float = 0
    #: Token keys that some counted usage lacked (omp 18 reports these as ``null``).
    missing: list[str] = field(default_factory=list, compare=False)
    #: Totals of ``model_usage`` entries, as a nested state (omp 18 adds them in).
    side: dict[str, Any] = field(default_factory=dict, compare=False)
    #: The keys :meth:`to_dict` reports (the dialect's, see :meth:`reported`).
    keys: tuple[str, ...] = field(default=OMP_13_19.usage.fields, compare=False)
    missing_is_nan: bool = field(default=False, compare=False)

    def add_usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        # Unrolled (this runs for every assistant message of every session opened or indexed);
        # the same rule for each key of ``_STRICT_KEYS``: a number adds, anything else is missing.
        get = usage.get
        value = get("input")
        number = value if type(value) is int or type(value) is float else _number(value)
        if number is None:
            self._missing("input")
        else:
            self.input += number
        value = get("output")
        number = value if type(value) is int or type(value) is float else _number(value)
        if number is None:
            self._missing("output")
        else:
            self.output += number
        value = get("cacheRead")
        number = value if type(value) is int or type(value) is float else _number(value)
        if number is None:
            self._missing("cacheRead")
        else:
            self.cacheRead += number
        value = get("cacheWrite")
        number = value if type(value) is int or type(value) is float else _number(value)
        if number is None:
            self._missing("cacheWrite")
        else:
            self.cacheWrite += number
        value = get("totalTokens")
        number = value if type(value) is int or type(value) is float else _number(value)
        if number is None:
            self._missing("totalTokens")
        else:
            self.totalTokens += number
        orchestration = usage.get("orchestration")
        if isinstance(orchestration, dict):
            for total, key in _ORCHESTRATION:
                setattr(self, total, getattr(self, total) + (_number(orchestration.get(key)) or 0))
        value = get("premiumRequests")
        if value is not None:  # absent from most usage: no call for it then
            self.premiumRequests += _number(value) or 0
        cost = get("cost")
        if isinstance(cost, dict):
            value = cost.get("total")
            # ``or 0``: a zero total adds the integer 0 (a float 0.0 would make an all-zero total 0.0)
            self.cost += (value if type(value) is int or type(value) is float else _number(value)) or 0

    def _missing(self, key: str) -> None:
        if key not in self.missing:
            self.missing.append(key)

    def add_entry(self, entry: dict[str, Any]) -> None:
        usage, is_model_usage = usage_of(entry)
        if usage is None:
            return
        if is_model_usage:
            side = UsageStatistics.from_state(self.side) if self.side else UsageStatistics()
            side.add_usage(usage)
            self.side = side.to_state()
        else:
            self.add_usage(usage)

    @classmethod
    def of(cls, entries: Iterable[dict[str, Any]]) -> UsageStatistics:
        totals = cls()
        for entry in entries:
            totals.add_entry(entry)
        return totals

    def reported(self, rules: UsageRules) -> UsageStatistics:
        """The totals one dialect reports (a new object)."""
        view = self.copy()
        view.keys = rules.fields
        view.missing_is_nan = rules.counts_model_usage
        if rules.counts_model_usage and self.side:
            side = UsageStatistics.from_state(self.side)
            for name in _numeric_names():
                setattr(view, name, getattr(view, name) + getattr(side, name))
            view.missing = [*view.missing, *(key for key in side.missing if key not in view.missing)]
        view.side = {}
        return view

    def to_dict(self) -> dict[str, float | None]:
        """The dialect's keys in its order; a NaN total (omp 18) is ``None`` (JSON ``null``)."""
        out: dict[str, float | None] = {}
        for key in self.keys:
            value: float | None = getattr(self, key)
            if (self.missing_is_nan and key in self.missing) or (
                isinstance(value, float) and math.isnan(value)
            ):
                value = None
            out[key] = value
        return out

    def add_totals(self, other: UsageStatistics) -> None:
        """Add ``other``'s totals into these, in place: each number, the keys it lacked that
        these did not (after these'), and its ``model_usage`` spend; this object's dialect is
        kept. (What summing the states of both would give, without building them.)"""
        for name in _numeric_names():
            setattr(self, name, getattr(self, name) + getattr(other, name))
        if other.missing:
            self.missing = [*self.missing, *(key for key in other.missing if key not in self.missing)]
        if self.side and other.side:
            side = UsageStatistics.from_state(self.side)
            side.add_totals(UsageStatistics.from_state(other.side))
            self.side = side.to_state()
        elif other.side:  # (a state of its own: its list of missing keys is not shared)
            self.side = UsageStatistics.from_state(other.side).to_state()

    def to_state(self) -> dict[str, Any]:
        """Everything, for the offset index (read back with :meth:`from_state`)."""
        state: dict[str, Any] = {name: getattr(self, name) for name in _numeric_names()}
        if self.missing:
            state["missing"] = list(self.missing)
        if self.side:
            state["side"] = self.side
        return state

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> UsageStatistics:
        known = _state_names()
        if known.issuperset(state):  # (the usual case: a state to_state wrote)
            return cls(**state)
        return cls(**{key: value for key, value in state.items() if key in known})

    def copy(self) -> UsageStatistics:
        clone = UsageStatistics.from_state(self.to_state())
        clone.keys, clone.missing_is_nan = self.keys, self.missing_is_nan
        clone.missing = list(self.missing)
        return clone


@functools.cache
def _numeric_names() -> tuple[str, ...]:
    # Cached: ``dataclasses.fields`` is slow, and a store-wide ``stats`` reads thousands of states.
    return tuple(f.name for f in fields(UsageStatistics) if f.type in ("float", float))


@functools.cache
def _state_names() -> frozenset[str]:
    return frozenset((*_numeric_names(), "missing", "side"))
