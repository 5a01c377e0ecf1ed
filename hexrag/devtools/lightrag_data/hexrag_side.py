"""The hexrag side: a ``QueryEngine`` on a LightRAG working directory with parity settings
(:func:`open_hexrag`), and its answers to the same queries as the LightRAG side.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from hexrag.devtools.lightrag_data.dataset import KeywordQuery
from hexrag.devtools.lightrag_data.lightrag_side import _AsyncEmbedder, query_param_fields
from hexrag.devtools.lightrag_data.parity import parity_settings

if TYPE_CHECKING:  # pragma: no cover
    from hexrag.ports.embedder import Embedder

__all__ = ["hexrag_context", "hexrag_query_data", "hexrag_query_param", "open_hexrag"]


async def open_hexrag(
    path: Path | str,
    embedder: Embedder | _AsyncEmbedder,
    *,
    kg_chunk_pick_method: str = "WEIGHT",
    settings: Any = None,
) -> Any:
    """hexrag's ``QueryEngine`` on a LightRAG working directory, with parity settings."""
    from hexrag.adapters.workdir import load_workdir
    from hexrag.bootstrap import compose_engine

    if settings is None:
        settings = parity_settings(kg_chunk_pick_method)
    stores = load_workdir(
        Path(path), embedder_dim=embedder.dim, cosine_threshold=settings.cosine_threshold
    )
    return compose_engine(
        stores, embedder=embedder, settings=settings, store_cache=False  # type: ignore[arg-type]
    )


def hexrag_query_param(mode: str, q: KeywordQuery, **overrides: Any) -> Any:
    """hexrag's ``QueryParam`` with exactly the fields of :func:`lightrag_query_param`."""
    from hexrag.core.model import QueryParam

    return QueryParam(**query_param_fields(mode, q, **overrides))


async def hexrag_query_data(engine: Any, mode: str, q: KeywordQuery) -> dict[str, Any]:
    """hexrag's ``query_data`` for ``q`` in ``mode``."""
    return await engine.query_data(q.query, hexrag_query_param(mode, q))  # type: ignore[no-any-return]


async def hexrag_context(engine: Any, mode: str, q: KeywordQuery) -> str:
    """hexrag's context string (``query`` with ``only_need_context=True``)."""
    result = await engine.query(q.query, hexrag_query_param(mode, q, only_need_context=True))
    return str(result)

