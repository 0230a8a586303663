"""Send an omp context through ``pydantic_ai.direct`` and keep the answer in the session
(extra ``[pydantic-ai]``). A function model stands in for a real one, so this runs offline.
Run with ``python examples/agents_pydantic_ai.py``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from agents_common import write_demo_session
from pydantic_ai.direct import model_request_sync
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from omp_session import SessionManager
from omp_session.integrations.pydantic_ai import append_model_messages, to_model_messages


def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart(f"I was sent {len(messages)} messages.")])


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = write_demo_session(Path(tmp))
        with SessionManager.open(path) as session:
            response = model_request_sync(
                FunctionModel(answer), to_model_messages(session.build_session_context())
            )
            append_model_messages(session, [response])
            print(session.build_session_context().messages[-1]["content"][0]["text"])


if __name__ == "__main__":
    main()
