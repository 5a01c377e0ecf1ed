"""LightRAG's ingestion settings as one value (:class:`IngestSettings`), shared by ingestion
and deletion (a deletion rebuilds records with the settings a fresh build would use)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hexrag.core.ingest.chunking import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE
from hexrag.core.ingest.merging import MergeSettings

__all__ = ["IngestSettings"]


@dataclass(frozen=True, slots=True)
class IngestSettings:
    """LightRAG's ``CHUNK_SIZE``, ``CHUNK_OVERLAP_SIZE``, split options,
    ``entity_extract_max_gleaning`` (1), ``MAX_EXTRACT_INPUT_TOKENS`` (20480), the summary
    language and the merge limits."""

    chunk_token_size: int = DEFAULT_CHUNK_SIZE
    chunk_overlap_token_size: int = DEFAULT_CHUNK_OVERLAP
    split_by_character: str | None = None
    split_by_character_only: bool = False
    max_gleaning: int = 1
    max_extract_input_tokens: int = 20480
    language: str = "English"
    merge: MergeSettings = field(default_factory=MergeSettings)
    #: LightRAG's ``enable_llm_cache_for_entity_extract`` (``ENABLE_LLM_CACHE_FOR_EXTRACT``):
    #: extraction, gleaning and summary answers are kept in the stack's LLM cache.
    enable_llm_cache_for_extract: bool = True
    #: LightRAG's ``MAX_ASYNC`` (4): LLM calls in flight at once.
    max_async: int = 4
    #: The LLM identity in the cache key (LightRAG's ``get_llm_cache_identity(config,
    #: "extract")``); ``None``: ``{"role": "extract", "binding": None, "model":
    #: <the LLM's model_name>, "host": None}``.
    llm_identity: Mapping[str, Any] | None = None
