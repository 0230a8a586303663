"""Usage totals (spec §6.3): every assistant message and every ``task`` tool result with usage."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any


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
        # Unrolled, with the plain-number test inline: this runs for every assistant message of
        # every session opened, listed or indexed. Anything but an int or float goes through
        # ``_number`` (booleans and non-numbers count as zero; a missing key is None).
        get = usage.get
        if (value := get("input")) is not None:
            self.input += value if type(value) is int or type(value) is float else _number(value)
        if (value := get("output")) is not None:
            self.output += value if type(value) is int or type(value) is float else _number(value)
        if (value := get("cacheRead")) is not None:
            self.cacheRead += value if type(value) is int or type(value) is float else _number(value)
        if (value := get("cacheWrite")) is not None:
            self.cacheWrite += value if type(value) is int or type(value) is float else _number(value)
        if (value := get("premiumRequests")) is not None:
            self.premiumRequests += value if type(value) is int or type(value) is float else _number(value)
        cost = get("cost")
        if isinstance(cost, dict) and (value := cost.get("total")) is not None:
            self.cost += value if type(value) is int or type(value) is float else _number(value)

    def add_entry(self, entry: dict[str, Any]) -> None:
        if entry.get("type") != "message":
            return
        message = entry.get("message")
        if isinstance(message, dict):
            self.add_message(message)

    def add_message(self, message: dict[str, Any]) -> None:
        """Count the message of a ``message`` entry (the rule of spec §6.3 for one message)."""
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
