"""Model names and list prices: one name per model, and the cost of usage omp did not price.

omp records a cost with every assistant message it prices (``usage.cost.total``). Sessions
imported from Claude Code or Codex carry their tokens but a zero cost (omp 18.2.3's importers
write zeros), and a model omp's registry did not know is recorded at zero too. Reports estimate
those from the dated table shipped as ``omp_session/data/prices.json`` (its ``sourceDate`` says how
old the prices are) and mark the result as estimated wherever it is shown.

A model is named several ways: ``anthropic/claude-sonnet-4-5``, ``claude-sonnet-4-5-20250929``,
``claude-sonnet-4-5@20250929`` (Vertex), ``us.anthropic.claude-sonnet-4-5-20250929-v1:0``
(Bedrock). :func:`canonical_model` gives all of them one name, so a report has one row per model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import Any

import orjson

__all__ = ["Price", "PriceTable", "canonical_model", "default_prices"]

#: A trailing release date: ``-20250929``, ``@20250929`` or OpenAI's ``-2024-08-06``.
_DATE_SUFFIX = re.compile(r"[-@](?:\d{8}|\d{4}-\d{2}-\d{2})$")
#: Bedrock's regional inference profiles and vendor prefix: ``us.anthropic.``, ``anthropic.``.
_BEDROCK_PREFIX = re.compile(r"^(?:(?:us|eu|apac|global)\.)?(?:anthropic|amazon|meta|openai)\.")
#: Bedrock's model version suffix: ``-v1:0``.
_BEDROCK_VERSION = re.compile(r"-v\d+(?::\d+)?$")


@lru_cache(maxsize=4096)  # a report asks once per record (160,000 over 1,000 sessions), of a few names
def canonical_model(name: str) -> str:
    """The one name of a model: lower case, without provider prefixes or a release date.

    >>> canonical_model("anthropic/claude-sonnet-4-5-20250929")
    'claude-sonnet-4-5'
    >>> canonical_model("us.anthropic.claude-haiku-4-5-20251001-v1:0")
    'claude-haiku-4-5'
    """
    text = name.strip().lower().rsplit("/", 1)[-1]
    text = _BEDROCK_PREFIX.sub("", text)
    text = _BEDROCK_VERSION.sub("", text)
    return _DATE_SUFFIX.sub("", text) or name


@dataclass(frozen=True)
class Price:
    """USD per million tokens of each kind."""

    input: float
    output: float
    cache_read: float
    cache_write: float

    def cost(self, input: float, output: float, cache_read: float, cache_write: float) -> float:
        return (
            input * self.input
            + output * self.output
            + cache_read * self.cache_read
            + cache_write * self.cache_write
        ) / 1_000_000


@dataclass(frozen=True)
class PriceTable:
    """Prices by canonical model name, and the day they were read from the vendors' pages."""

    source_date: str
    models: dict[str, Price]

    def price_of(self, model: str) -> Price | None:
        """The price of ``model`` (any of its names), or ``None`` when the table does not know it:
        an unknown model is reported as unpriced, never guessed from a similar name."""
        return self.models.get(canonical_model(model))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PriceTable:
        models = {
            canonical_model(name): Price(
                float(row["input"]), float(row["output"]), float(row["cacheRead"]), float(row["cacheWrite"])
            )
            for name, row in data["models"].items()
        }
        return cls(str(data["sourceDate"]), models)


@cache
def default_prices() -> PriceTable:
    """The table shipped with the package (read once per process)."""
    data = (resources.files("omp_session") / "data" / "prices.json").read_bytes()
    return PriceTable.from_json(orjson.loads(data))
