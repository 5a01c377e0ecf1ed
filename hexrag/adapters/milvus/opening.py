"""What the Milvus adapters open: the three vector indexes, in hexrag's collections or a
LightRAG 1.5.7 deployment's (``layout = lightrag``). ``milvus:///abs/file.db`` is a Milvus
Lite file, ``milvus://host:19530`` and ``http(s)://host:19530`` a server."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from hexrag.domain.errors import ConfigurationError
from hexrag.openings import (
    Opening,
    OpeningContext,
    Section,
    redact_url,
    require_module,
    split_credentials,
)

__all__ = ["OPENING", "milvus_uri"]

_NAMESPACES = ("entities", "relationships", "chunks")


def milvus_uri(role: str, text: str) -> str:
    """``milvus:///abs/file.db`` -> the Lite file path; ``milvus://host:port`` ->
    ``http://host:port``; ``http(s)://`` unchanged."""
    scheme, _, rest = text.partition("://")
    if scheme.lower() != "milvus":
        return text
    if not rest:
        raise ConfigurationError(
            f"{role} = 'milvus://' names no database: use milvus:///path/to/file.db "
            "(Milvus Lite) or milvus://host:19530 (a server)"
        )
    if rest.endswith(".db"):
        return unquote(rest)
    return f"http://{rest}"


async def open_milvus(ctx: OpeningContext, section: Section, url: str | None) -> Any:
    """The three indexes at ``url`` (a Lite file or a server URI, credentials split off)."""
    assert url is not None
    if url.endswith(".db"):
        require_module("milvus_lite", "milvus", "a Milvus Lite file (milvus:///path/to/file.db)")
    user, password, uri = split_credentials(url)
    out: dict[str, Any]
    if ctx.layout == "lightrag":
        from hexrag.adapters.milvus.lightrag_layout import open_lightrag_milvus_indexes

        ws = ctx.lightrag_workspace
        ctx.say(f"LightRAG MilvusVectorDBStorage at {redact_url(url)}, workspace {ws!r} "
                "(read in place)")
        out = dict(open_lightrag_milvus_indexes(
            uri, dim=ctx.dim, workspace=ws, model_name=ctx.option("lightrag_model_name"),
            cosine_threshold=ctx.cosine_threshold, user=user, password=password,
        ))
    else:
        from hexrag.adapters.milvus import MilvusVectorIndex

        ctx.say(f"Milvus at {redact_url(url)}")
        out = {name: MilvusVectorIndex.from_uri(
                   uri, namespace=name, dim=ctx.dim,  # type: ignore[arg-type]
                   collection=f"{ctx.namespace}_{name}", cosine_threshold=ctx.cosine_threshold,
                   user=user, password=password)
               for name in _NAMESPACES}
    for name, index in out.items():
        ctx.close_with(f"milvus {name}", index.close)
    return out


OPENING = Opening(
    kind="milvus",
    schemes=("milvus", "http", "https"),
    roles=("vector_index",),
    sections={"hexrag": ("vectors",), "lightrag": ("vectors",)},
    open=open_milvus,
    extra="milvus",
    requires=("pymilvus",),
    examples={"vector_index": "milvus:///path/to/file.db, http://milvus-host:19530"},
    lightrag_storages={"vector_index": "MilvusVectorDBStorage"},
    normalize=milvus_uri,
)
