"""The model a request is built for: what pi-ai's ``Model`` contributes to the conversion."""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["ANTHROPIC", "GOOGLE", "OPENAI_CHAT", "OPENAI_RESPONSES", "ModelTarget"]

ANTHROPIC = "anthropic-messages"
OPENAI_RESPONSES = "openai-responses"
OPENAI_CHAT = "openai-completions"
GOOGLE = "google-generative-ai"


@dataclass(frozen=True)
class ModelTarget:
    """The target ``provider``/``api``/``model`` and the catalog facts the conversion reads.

    ``provider``, ``api`` and ``id`` decide which earlier assistant turns count as "the same model"
    (signatures, reasoning items and thought signatures replay only there). The other fields are the
    parts of omp's model catalog entry that change the body; the defaults are those of the models the
    golden tests record (``anthropic/claude-sonnet-4-5``, ``openai/gpt-5``,
    ``groq/llama-3.3-70b-versatile``, ``google/gemini-2.5-pro``). Use :meth:`for_api` for a default
    target of an api, then ``dataclasses.replace`` for another model.
    """

    provider: str
    api: str
    id: str
    #: The catalog's ``maxTokens`` (sent as Anthropic's ``max_tokens``; ``None`` leaves it out elsewhere).
    max_tokens: int | None = None
    #: The model reasons (``Model.reasoning``): chooses the ``developer`` role for system prompts.
    reasoning: bool = True
    #: The model accepts images (``"image" in Model.input``); otherwise images become a placeholder.
    images: bool = True
    #: Anthropic: the first-party endpoint, which verifies thinking signatures.
    official_endpoint: bool = True
    #: Anthropic: the endpoint signs and checks thinking (``compat.signingEndpoint``).
    signing_endpoint: bool = True
    #: Anthropic-compatible endpoints that take unsigned thinking back natively.
    replay_unsigned_thinking: bool = False
    #: Chat Completions: the endpoint knows the ``developer`` role.
    supports_developer_role: bool = False
    #: Chat Completions: the endpoint sends ``store: false`` (``compat.supportsStore``).
    supports_store: bool = True
    #: Chat Completions: ``stream_options.include_usage``.
    supports_usage_in_streaming: bool = True
    #: OpenAI: strict tool schemas (``compat.supportsStrictMode``).
    strict_tools: bool = True

    @classmethod
    def for_api(cls, api: str, model: str | None = None, provider: str | None = None) -> ModelTarget:
        """The default target for ``api`` (``anthropic-messages``, ``openai-responses``,
        ``openai-completions`` or ``google-generative-ai``), optionally with another model id/provider."""
        if api == ANTHROPIC:
            target = cls(provider="anthropic", api=api, id="claude-sonnet-4-5", max_tokens=64000)
        elif api == OPENAI_RESPONSES:
            target = cls(provider="openai", api=api, id="gpt-5", max_tokens=128000)
        elif api == OPENAI_CHAT:
            target = cls(
                provider="groq",
                api=api,
                id="llama-3.3-70b-versatile",
                max_tokens=32768,
                reasoning=False,
                images=False,
                strict_tools=False,
            )
        elif api == GOOGLE:
            target = cls(provider="google", api=api, id="gemini-2.5-pro", max_tokens=65536)
        else:
            raise ValueError(
                f"unknown api {api!r}: expected anthropic-messages, openai-responses, openai-completions"
                " or google-generative-ai"
            )
        if model is not None:
            target = replace(target, id=model)
        if provider is not None:
            target = replace(target, provider=provider)
        return target
