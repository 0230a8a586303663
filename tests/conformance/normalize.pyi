# Types for normalize.py, the corpus's executable normalisation rules. That file is a verbatim copy of
# the shared fixture (/work/shared/fixtures/conformance/normalize.py, dependency-free, untyped) and is
# kept byte-identical so a corpus update can replace it; mypy and ruff skip it and check this instead.
from typing import Any

def normalize_load(raw: dict[str, Any], input_text: str) -> dict[str, Any]: ...
def normalize_ops(raw: dict[str, Any], ops: list[Any] | dict[str, Any]) -> dict[str, Any]: ...
