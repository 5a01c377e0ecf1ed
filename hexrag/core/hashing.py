"""LightRAG 1.5.7's cache hashes and keys (``utils.py:compute_args_hash`` and friends).

Keys produced here are byte-identical to LightRAG's, so a hexrag engine can share an
``llm_response_cache`` with a LightRAG server::

    identity_json = serialize_identity(llm_cache_identity("keyword", binding=None,
                                                          model="gpt-4o-mini", host=None))
    keyword_cache_key("mix", query, "English", identity_json)  # "mix:keywords:<md5>"
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from hashlib import md5
from typing import Any

__all__ = [
    "ANSWER_CACHE_VERSION",
    "LLM_IDENTITY_MARKER",
    "answer_cache_key",
    "compute_args_hash",
    "keyword_cache_key",
    "llm_cache_identity",
    "serialize_identity",
]

ANSWER_CACHE_VERSION = "query-answer-cache-v2"
"""LightRAG's ``_ANSWER_CACHE_POLICY_VERSION``: the first component of every answer-cache hash."""

LLM_IDENTITY_MARKER = "\n<llm_identity>\n"
"""The literal component LightRAG puts before the serialised LLM identity."""


def compute_args_hash(*args: Any) -> str:
    """MD5 hex digest of ``args``, exactly as LightRAG's ``compute_args_hash``.

    One argument (or none): ``md5(str(arg))`` -- the legacy form that document ids rely on.
    Two or more: each ``str(arg)`` is length-prefixed (``f"{len(s)}:{s}"``, length in code
    points) and the pieces are concatenated, so field boundaries cannot collide.
    Text that UTF-8 cannot encode (lone surrogates) is encoded with ``errors="replace"``.
    """
    if len(args) <= 1:
        text = "".join(str(a) for a in args)
    else:
        text = "".join(f"{len(s)}:{s}" for s in (str(a) for a in args))
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        data = text.encode("utf-8", errors="replace")
    return md5(data).hexdigest()


def llm_cache_identity(
    role: str, *, binding: str | None, model: str | None, host: str | None
) -> dict[str, Any]:
    """The non-secret identity of the LLM serving ``role`` (``"keyword"`` or ``"query"``).

    LightRAG's ``get_llm_cache_identity``: ``{"role", "binding", "model", "host"}``. Its library
    default is binding/host ``None`` and model ``"gpt-4o-mini"``. Never put API keys here.
    """
    return {"role": role, "binding": binding, "model": model, "host": host}


def serialize_identity(identity: Mapping[str, Any] | None) -> str:
    """LightRAG's ``serialize_llm_cache_identity``: compact JSON with sorted keys.

    ``json.dumps(identity, ensure_ascii=False, sort_keys=True, separators=(",", ":"))``, e.g.
    ``{"binding":null,"host":null,"model":"gpt-4o-mini","role":"query"}``; ``None`` -> ``""``.
    """
    if identity is None:
        return ""
    try:
        return json.dumps(
            dict(identity), ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=repr
        )
    except (TypeError, ValueError):
        return repr(identity)


def keyword_cache_key(mode: str, query: str, language: str, identity_json: str) -> str:
    """Key of the keyword-extraction cache entry: ``f"{mode}:keywords:{hash}"``.

    ``hash = compute_args_hash(mode, query, language, LLM_IDENTITY_MARKER, identity_json)``
    (``operate.py:extract_keywords_only``); ``identity_json`` is the serialised ``"keyword"``
    role identity.
    """
    args_hash = compute_args_hash(mode, query, language, LLM_IDENTITY_MARKER, identity_json)
    return f"{mode}:keywords:{args_hash}"


def answer_cache_key(
    *,
    mode: str,
    query: str,
    response_type: str | None,
    top_k: int,
    chunk_top_k: int,
    max_entity_tokens: int,
    max_relation_tokens: int,
    max_total_tokens: int,
    hl_keywords_str: str | None,
    ll_keywords_str: str | None,
    user_prompt_text: str,
    enable_rerank: bool,
    enable_content_headings: bool,
    identity_json: str,
    extra: Sequence[str] = (),
) -> str:
    """Key of the answer cache entry: ``f"{mode}:query:{hash}"`` (``operate.py:kg_query``).

    The hash covers, in order: :data:`ANSWER_CACHE_VERSION`, mode, query, response_type (raw,
    may be ``None``), top_k, chunk_top_k, max_entity_tokens, max_relation_tokens,
    max_total_tokens, hl_keywords_str, ll_keywords_str, user_prompt_text (the composed
    instructions, ``""`` when none), enable_rerank, enable_content_headings,
    :data:`LLM_IDENTITY_MARKER`, identity_json (the ``"query"`` role identity).
    Naive mode passes ``hl_keywords_str=None`` and ``ll_keywords_str=None``: both are then
    left out, as in ``operate.py:naive_query``. ``extra`` components (hexrag's, e.g. a corpus
    version) are appended after LightRAG's; with ``extra=()`` the key is LightRAG's.
    """
    args: list[Any] = [
        ANSWER_CACHE_VERSION,
        mode,
        query,
        response_type,
        top_k,
        chunk_top_k,
        max_entity_tokens,
        max_relation_tokens,
        max_total_tokens,
    ]
    if hl_keywords_str is not None or ll_keywords_str is not None:
        args.append("" if hl_keywords_str is None else hl_keywords_str)
        args.append("" if ll_keywords_str is None else ll_keywords_str)
    args += [
        user_prompt_text,
        enable_rerank,
        enable_content_headings,
        LLM_IDENTITY_MARKER,
        identity_json,
        *extra,
    ]
    return f"{mode}:query:{compute_args_hash(*args)}"
