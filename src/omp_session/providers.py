"""``omp_session.providers``: the request bodies omp sends, from a session context.

See :mod:`omp_session.integrations.providers` (this module re-exports it).
"""

from omp_session.integrations.providers import (
    FORMATS,
    ModelTarget,
    UnsupportedConversion,
    UnsupportedToolSchema,
    request_body,
    request_json,
    session_request_body,
    to_anthropic_messages,
    to_google_contents,
    to_openai_chat,
    to_openai_responses,
)

__all__ = [
    "FORMATS",
    "ModelTarget",
    "UnsupportedConversion",
    "UnsupportedToolSchema",
    "request_body",
    "request_json",
    "session_request_body",
    "to_anthropic_messages",
    "to_google_contents",
    "to_openai_chat",
    "to_openai_responses",
]
