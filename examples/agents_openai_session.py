"""An OpenAI Agents SDK run whose memory is an omp session (extra ``[openai-agents]``).

A scripted model stands in for OpenAI, so this runs offline. Run with
``python examples/agents_openai_session.py``.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import cast

from agents import Agent, Runner, set_tracing_disabled
from agents.memory import Session
from agents.testing import ScriptedModel, assistant_message

from omp_session import SessionManager
from omp_session.dialects import OMP_18_2
from omp_session.integrations.openai_agents import OmpSession


async def run(directory: Path) -> Path:
    set_tracing_disabled(True)  # no OpenAI account here: keep the SDK from exporting traces
    model = ScriptedModel([[assistant_message("Hi! I'm here.")], [assistant_message("You said hello.")]])
    agent = Agent(name="helper", instructions="Be brief.", model=model)
    with SessionManager.create("/work/app", directory, dialect=OMP_18_2) as manager:
        # OmpSession meets the SDK's Session protocol structurally (it does not import the SDK).
        session = cast(Session, OmpSession(manager, model="gpt-5"))
        print((await Runner.run(agent, "hello", session=session)).final_output)
        print((await Runner.run(agent, "what did I say?", session=session)).final_output)
        print("items:", len(await session.get_items()))
        return Path(manager.get_session_file() or "")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = asyncio.run(run(Path(tmp)))
        with SessionManager.open(path, read_only=True) as reopened:  # an ordinary omp session
            print("omp messages:", [m["role"] for m in reopened.build_session_context().messages])


if __name__ == "__main__":
    main()
