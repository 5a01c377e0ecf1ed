"""LightRAG's ``lightrag_llm_cache`` table as a :class:`~hexrag.ports.Cache` (see
:mod:`hexrag.adapters.postgres.lightrag_layout`).
"""

from __future__ import annotations

from hexrag.adapters.postgres.kv_rows import LightRAGCacheRows, PgKV
from hexrag.adapters.postgres.lightrag_base import _LightRAGPg

__all__ = ["LightRAGPgCache"]


class LightRAGPgCache(PgKV, _LightRAGPg):
    """``lightrag_llm_cache`` as a :class:`~hexrag.ports.Cache`: an entry is the dict
    ``PGKVStorage.get_by_ids`` returns for the LLM cache (``return``, ``cache_type``,
    ``original_prompt``, ``chunk_id``, ``queryparam``, times); keys are LightRAG's flattened
    cache ids (``mode:cache_type:hash``), so LightRAG and hexrag share cached keywords.
    :class:`~hexrag.adapters.postgres.kv_rows.PgKV` on the
    :class:`~hexrag.adapters.postgres.kv_rows.LightRAGCacheRows` layout."""

    _kind = "LightRAG LLM cache table"
    _layout_of = LightRAGCacheRows
