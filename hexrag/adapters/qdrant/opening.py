"""What the Qdrant adapters open: the three vector indexes on one client, in hexrag's
collections or a LightRAG 1.5.7 deployment's (``layout = lightrag``). ``qdrant:///abs/dir``
is embedded Qdrant, ``qdrant://host:6333`` a server."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from hexrag.domain.errors import ConfigurationError
from hexrag.openings import Opening, OpeningContext, Section, redact_url

__all__ = ["OPENING", "qdrant_url"]


def qdrant_url(role: str, text: str) -> str:
    """``qdrant:///abs/dir`` -> the embedded directory; ``qdrant://host:port`` ->
    ``http://host:port``."""
    rest = text.split("://", 1)[1]
    if not rest or rest == "/":
        raise ConfigurationError(
            f"{role} = 'qdrant://' names no database: use qdrant:///path/to/dir "
            "(embedded Qdrant) or qdrant://host:6333 (a server)"
        )
    return unquote(rest) if rest.startswith(("/", ".")) else f"http://{rest}"


async def open_qdrant(ctx: OpeningContext, section: Section, url: str | None) -> Any:
    """The three indexes at ``url`` on one client (closed with the stack)."""
    assert url is not None
    from hexrag.adapters.qdrant import open_qdrant_indexes

    options: dict[str, Any]
    if ctx.layout == "lightrag":
        options = {"layout": "lightrag", "workspace": ctx.lightrag_workspace,
                   "model_name": ctx.option("lightrag_model_name")}
    else:
        options = {"layout": "hexrag", "prefix": ctx.namespace}
    ctx.say(f"Qdrant at {redact_url(url)} ({options['layout']} layout)")
    indexes, client = open_qdrant_indexes(url, dim=ctx.dim,
                                          cosine_threshold=ctx.cosine_threshold, **options)
    ctx.close_with("qdrant", client.close)
    return dict(indexes)


OPENING = Opening(
    kind="qdrant",
    schemes=("qdrant",),
    roles=("vector_index",),
    sections={"hexrag": ("vectors",), "lightrag": ("vectors",)},
    open=open_qdrant,
    extra="qdrant",
    requires=("qdrant_client",),
    examples={"vector_index": "qdrant:///path/to/dir, qdrant://qdrant-host:6333"},
    lightrag_storages={"vector_index": "QdrantVectorDBStorage"},
    normalize=qdrant_url,
)
