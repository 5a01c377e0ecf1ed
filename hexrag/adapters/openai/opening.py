"""What the OpenAI-compatible adapters offer: an embedder (``openai[:MODEL]``) and an LLM
(``openai[:MODEL]``) at any OpenAI-compatible base URL (the ``openai`` extra), configured by
LightRAG's variables (``OPENAI_*``, ``EMBEDDING_*``, ``LLM_*``)."""

from __future__ import annotations

from typing import Any

from hexrag.model_openings import ModelContext, ModelOpening

__all__ = ["MODELS"]


def _model(ctx: ModelContext, spec: str) -> dict[str, Any]:
    name = spec.partition(":")[2].strip() or ctx.model
    return {"model": name} if name else {}


def open_embedder(ctx: ModelContext, spec: str) -> Any:
    """:class:`~hexrag.adapters.openai.OpenAIEmbedder` from ``ctx.env``; ``ctx.dim`` is its
    ``EMBEDDING_DIM`` (else one request asks the server, in :func:`discover_dim`)."""
    from hexrag.adapters.openai import OpenAIEmbedder

    options = _model(ctx, spec)
    if ctx.dim is not None:
        options["dim"] = ctx.dim
    model = OpenAIEmbedder.from_env(ctx.env, **options)
    ctx.close_with("embedder", model.aclose)
    return model


async def discover_dim(model: Any) -> None:
    """One request, only when ``EMBEDDING_DIM`` is not set."""
    await model.discover_dim()


def open_llm(ctx: ModelContext, spec: str) -> Any:
    """:class:`~hexrag.adapters.openai.OpenAILLM` from ``ctx.env``."""
    from hexrag.adapters.openai import OpenAILLM

    model = OpenAILLM.from_env(ctx.env, **_model(ctx, spec))
    ctx.close_with("llm", model.aclose)
    ctx.say(f"llm: OpenAI-compatible, model {model.model_name!r}")
    return model


MODELS = (
    ModelOpening(
        kind="embedder", name="openai", open=open_embedder, prepare=discover_dim,
        extra="openai", requires=("openai",), syntax="openai[:MODEL]", takes_model=True,
        spec_of=lambda model: f"openai:{model.model_name}",
    ),
    ModelOpening(
        kind="llm", name="openai", open=open_llm, extra="openai", requires=("openai",),
        syntax="openai or openai:<model> (any OpenAI-compatible server: set "
        "OPENAI_BASE_URL, e.g. http://localhost:8000/v1)",
        takes_model=True,
    ),
)
