"""LightRAG's environment variables, read here and nowhere in the core.

The core (:mod:`hexrag.core`) has LightRAG's defaults and reads no environment. The front
doors (stack configuration, CLI, server) build their :class:`~hexrag.core.model.QueryParam`
and :class:`~hexrag.core.model.EngineSettings` through this module, so LightRAG's variables keep
working exactly as in LightRAG 1.5.7:

* per query (read when a ``QueryParam`` is made, as LightRAG reads them for its
  ``QueryParam``): ``TOP_K`` (40), ``CHUNK_TOP_K`` (20), ``MAX_ENTITY_TOKENS`` (6000),
  ``MAX_RELATION_TOKENS`` (8000), ``MAX_TOTAL_TOKENS`` (30000) - an unparsable value falls back
  to the default, like LightRAG's ``get_env_value`` - and ``RERANK_BY_DEFAULT`` (``true``:
  compared as a lower-case string, as LightRAG does);
* engine-wide: every :class:`EngineSettings` alias (``KG_CHUNK_PICK_METHOD``,
  ``RELATED_CHUNK_NUMBER``, ``COSINE_THRESHOLD``, ``MIN_RERANK_SCORE``,
  ``ENABLE_CONTENT_HEADINGS``, ``SUMMARY_LANGUAGE``, ``USER_PROMPT_PREFIX``, ``LLM_MODEL``,
  ``LLM_BINDING``, ``LLM_BINDING_HOST``, ``ENABLE_LLM_CACHE``, and hexrag's
  ``HEXRAG_RELATION_LOOKUP`` as JSON);
* ingestion (:func:`ingest_settings`): ``CHUNK_SIZE`` (1200), ``CHUNK_OVERLAP_SIZE`` (100),
  ``MAX_GLEANING`` (1), ``MAX_EXTRACT_INPUT_TOKENS`` (20480), ``SUMMARY_LANGUAGE``,
  ``FORCE_LLM_SUMMARY_ON_MERGE`` (8), ``SUMMARY_MAX_TOKENS`` (1200), ``SUMMARY_CONTEXT_SIZE``
  (12000), ``SUMMARY_LENGTH_RECOMMENDED`` (600), ``MAX_SOURCE_IDS_PER_ENTITY`` /
  ``MAX_SOURCE_IDS_PER_RELATION`` (200), ``SOURCE_IDS_LIMIT_METHOD`` (``KEEP``),
  ``MAX_FILE_PATHS`` (75), ``ENABLE_LLM_CACHE_FOR_EXTRACT`` (``true``), ``MAX_ASYNC`` (4).

Explicit arguments always win over the environment.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from hexrag.core.errors import ConfigurationError
from hexrag.core.model import QUERY_DEFAULTS, EngineSettings, QueryParam

__all__ = ["engine_settings", "ingest_settings", "query_param", "query_param_defaults"]

_QUERY_ENV = {
    "top_k": "TOP_K",
    "chunk_top_k": "CHUNK_TOP_K",
    "max_entity_tokens": "MAX_ENTITY_TOKENS",
    "max_relation_tokens": "MAX_RELATION_TOKENS",
    "max_total_tokens": "MAX_TOTAL_TOKENS",
}


def query_param_defaults(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """LightRAG's per-query defaults with its environment variables applied."""
    env = os.environ if environ is None else environ
    out = dict(QUERY_DEFAULTS)
    for field, name in _QUERY_ENV.items():
        raw = env.get(name)
        if raw is not None:
            try:
                out[field] = int(raw)
            except ValueError:
                pass  # LightRAG's get_env_value: the default on bad input
    out["enable_rerank"] = env.get("RERANK_BY_DEFAULT", "true").lower() == "true"
    return out


def query_param(environ: Mapping[str, str] | None = None, **fields: Any) -> QueryParam:
    """A :class:`QueryParam` whose unset defaults come from LightRAG's variables."""
    values = {k: v for k, v in query_param_defaults(environ).items() if k not in fields}
    return QueryParam(**values, **fields)


def _env_fields(env: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, info in EngineSettings.model_fields.items():
        alias = info.validation_alias
        if not isinstance(alias, str) or alias not in env:
            continue
        raw = env[alias]
        if name == "relation_lookup":
            try:
                out[name] = json.loads(raw)
            except ValueError as exc:
                raise ConfigurationError(f"{alias} must be JSON, e.g. {{\"hybrid\": \"pair\"}} "
                                         f"({exc})") from None
        else:
            out[name] = raw
    return out


def engine_settings(environ: Mapping[str, str] | None = None, **fields: Any) -> EngineSettings:
    """:class:`EngineSettings` from LightRAG's variables, ``fields`` (field names or LightRAG's
    names) taking precedence."""
    values = _env_fields(os.environ if environ is None else environ)
    by_alias = {
        info.validation_alias: name
        for name, info in EngineSettings.model_fields.items()
        if isinstance(info.validation_alias, str)
    }
    for key, value in fields.items():
        values[by_alias.get(key, key)] = value
    return EngineSettings(**values)


def _int_env(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        return int(raw)
    except ValueError:
        return default  # LightRAG's get_env_value: the default on bad input


def ingest_settings(environ: Mapping[str, str] | None = None, **fields: Any) -> Any:
    """:class:`~hexrag.core.ingest.ingestion.IngestSettings` from LightRAG's variables (see the
    module docstring); ``fields`` (``IngestSettings`` field names) win."""
    from hexrag.core.ingest.ingestion import IngestSettings
    from hexrag.core.ingest.merging import MergeSettings
    from hexrag.core.ingest.summary import SummaryLimits

    env = os.environ if environ is None else environ
    language = env.get("SUMMARY_LANGUAGE") or "English"
    method = (env.get("SOURCE_IDS_LIMIT_METHOD") or "KEEP").strip().upper()
    if method not in ("KEEP", "FIFO"):
        method = "KEEP"  # LightRAG normalises anything else to its default
    summary = SummaryLimits(
        context_size=_int_env(env, "SUMMARY_CONTEXT_SIZE", 12000),
        max_tokens=_int_env(env, "SUMMARY_MAX_TOKENS", 1200),
        force_llm_summary_on_merge=_int_env(env, "FORCE_LLM_SUMMARY_ON_MERGE", 8),
        length_recommended=_int_env(env, "SUMMARY_LENGTH_RECOMMENDED", 600),
        language=language,
    )
    merge = MergeSettings(
        max_source_ids=_int_env(env, "MAX_SOURCE_IDS_PER_ENTITY", 200),
        max_source_ids_relation=_int_env(env, "MAX_SOURCE_IDS_PER_RELATION", 200),
        limit_method=method,
        max_file_paths=_int_env(env, "MAX_FILE_PATHS", 75),
        summary=summary,
    )
    values: dict[str, Any] = {
        "chunk_token_size": _int_env(env, "CHUNK_SIZE", 1200),
        "chunk_overlap_token_size": _int_env(env, "CHUNK_OVERLAP_SIZE", 100),
        "max_gleaning": _int_env(env, "MAX_GLEANING", 1),
        "max_extract_input_tokens": _int_env(env, "MAX_EXTRACT_INPUT_TOKENS", 20480),
        "max_async": _int_env(env, "MAX_ASYNC", 4),
        "language": language,
        "merge": merge,
        "enable_llm_cache_for_extract": env.get("ENABLE_LLM_CACHE_FOR_EXTRACT", "true")
        .strip().lower() in ("true", "1", "yes", "on"),
    }
    values.update({k: v for k, v in fields.items() if v is not None})
    if values["chunk_overlap_token_size"] >= values["chunk_token_size"]:
        raise ConfigurationError(
            f"CHUNK_OVERLAP_SIZE ({values['chunk_overlap_token_size']}) must be smaller than "
            f"CHUNK_SIZE ({values['chunk_token_size']})"
        )
    return IngestSettings(**values)
