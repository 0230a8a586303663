"""Usage totals (spec §6.3): every assistant message and every ``task`` tool result with usage."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["UsageStatistics"]


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return value


@dataclass
class UsageStatistics:
    """Token and cost totals. Missing ``usage`` or ``cost`` counts as zero (omp crashes, §4.1)."""

    input: float = 0
    output: float = 0
    cacheRead: float = 0
    cacheWrite: float = 0
    premiumRequests: float = 0
    cost: float = 0

    def add_usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        self.input += _number(usage.get("input"))
        self.output += _number(usage.get("output"))
        self.cacheRead += _number(usage.get("cacheRead"))
        self.cacheWrite += _number(usage.get("cacheWrite"))
        self.premiumRequests += _number(usage.get("premiumRequests"))
        cost = usage.get("cost")
        if isinstance(cost, dict):
            self.cost += _number(cost.get("total"))

    def add_entry(self, entry: dict[str, Any]) -> None:
        if entry.get("type") != "message":
            return
        message = entry.get("message")
        if not isinstance(message, dict):
            return
        role = message.get("role")
        if role == "assistant":
            self.add_usage(message.get("usage"))
        elif role == "toolResult" and message.get("toolName") == "task":
            details = message.get("details")
            if isinstance(details, dict):
                self.add_usage(details.get("usage"))

    @classmethod
    def of(cls, entries: Iterable[dict[str, Any]]) -> UsageStatistics:
        totals = cls()
        for entry in entries:
            totals.add_entry(entry)
        return totals

    def to_dict(self) -> dict[str, float]:
        return asdict(self)

    def copy(self) -> UsageStatistics:
        return UsageStatistics(**asdict(self))
