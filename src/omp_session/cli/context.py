"""``omp-session context``: the context omp would send to the model, as JSON.

Internal module (a command of ``omp-session``, which is the interface); not part of the public API.
"""

from __future__ import annotations

import click

from omp_session.cli._common import emit_json, leaf_option, session_argument, state
from omp_session.model.llm import convert_to_llm
from omp_session.store.blobs import FileBlobStore
from omp_session.tools.reading import session_context

__all__ = ["context"]


@click.command(
    epilog="\b\nExamples:\n  omp-session context 15d0c6a0\n  omp-session context 15d0 --leaf a0000002 --llm"
    "\n  omp-session context 15d0 --llm --format anthropic --model claude-opus-4-1",
)
@session_argument()
@leaf_option
@click.option(
    "--llm", is_flag=True, help="Print the LLM messages (convertToLlm) instead of the agent context."
)
@click.option(
    "--format",
    "format_name",
    type=click.Choice(["anthropic", "openai-responses", "openai-chat", "google"]),
    help="With --llm: the request body omp sends to this provider API (omp_session.providers).",
)
@click.option(
    "--model", "model_id", help="With --format: the target model id (default: the API's reference model)."
)
@click.option("--json", "as_json", is_flag=True, help="Accepted for symmetry: the output is always JSON.")
@click.pass_context
def context(
    ctx: click.Context,
    session: str,
    leaf_id: str | None,
    llm: bool,
    format_name: str | None,
    model_id: str | None,
    as_json: bool,
) -> None:
    """Print the built context of SESSION at its leaf as JSON.

    Without --llm: omp's SessionContext (agent messages, thinking level, models, …). With --llm:
    the messages as the model receives them; with --llm --format, the whole request body omp sends to
    that provider (system prompt from the session's session_init). Images stored as blobs are
    inlined again.
    """
    cli = state(ctx)
    if (format_name is not None or model_id is not None) and not llm:
        raise click.UsageError("--format and --model need --llm")
    if model_id is not None and format_name is None:
        raise click.UsageError("--model needs --format")
    if format_name is not None:
        from omp_session.integrations.providers import UnsupportedConversion, session_request_body

        try:
            body = session_request_body(
                cli.resolve(session),
                format_name,
                leaf_id=leaf_id,
                model=model_id,
                blobs=FileBlobStore(cli.blobs),
                storage=cli.storage,
            )
        except UnsupportedConversion as error:
            raise click.ClickException(str(error)) from error
        emit_json(body)
        return
    # Unlike omp (§9 #13), an unknown --leaf is an error, not a silent fall-back to the last entry.
    built = session_context(
        cli.resolve(session), leaf_id=leaf_id, blobs=FileBlobStore(cli.blobs), storage=cli.storage
    )
    emit_json(convert_to_llm(built.messages, built.rules) if llm else built.to_dict())
