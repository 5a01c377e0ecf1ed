"""Stage 4: chunk budget, rerank, chunk_top_k, final truncation, references, context string."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from json.encoder import encode_basestring as _enc
from typing import Any

from hexrag.core.query import prompts
from hexrag.core.query.chunks import attach_headings
from hexrag.core.query.run import ChunkItem, QueryRun
from hexrag.core.tokenizer import Tokenizer, count_tokens, truncate_list_by_token_size
from hexrag.domain.params import QueryParam
from hexrag.ports import Reranker

__all__ = [
    "EffectiveUserPrompt",
    "FinalChunks",
    "assign_references",
    "kg_chunk_budget",
    "naive_chunk_budget",
    "process_chunks",
    "render_chunks",
    "render_references",
    "resolve_user_prompt",
]

BUFFER_TOKENS = 200


@dataclass(frozen=True, slots=True)
class EffectiveUserPrompt:
    """The composed instructions (``text``, cache-key material) and their template slot."""

    text: str
    slot: str


def resolve_user_prompt(param: QueryParam, prefix: str) -> EffectiveUserPrompt:
    """Server prefix + the caller's ``user_prompt``, unstripped (``resolve_user_prompt``)."""
    text = ("" if param.disable_user_prompt_prefix else (prefix or "")) + (param.user_prompt or "")
    return EffectiveUserPrompt(text=text, slot=("\n\n" + text) if text else "n/a")


def kg_chunk_budget(
    run: QueryRun,
    entities_str: str,
    relations_str: str,
    system_prompt: str | None,
    *,
    tokenizer: Tokenizer,
    user_prompt_prefix: str,
) -> int:
    """Tokens left for chunks in a KG query (LightRAG ``_build_context_str``)."""
    template = system_prompt or prompts.RAG_RESPONSE
    up = resolve_user_prompt(run.param, user_prompt_prefix)
    response_type = run.param.response_type or "Multiple Paragraphs"
    kg = prompts.KG_QUERY_CONTEXT.format(
        entities_str=entities_str,
        relations_str=relations_str,
        text_chunks_str="",
        reference_list_str="",
    )
    sys_text = template.format(context_data="", response_type=response_type, user_prompt=up.text)
    tok = tokenizer
    return run.param.max_total_tokens - (
        count_tokens(sys_text, tok)
        + count_tokens(kg, tok)
        + count_tokens(run.query, tok)
        + BUFFER_TOKENS
    )


def naive_chunk_budget(
    run: QueryRun, system_prompt: str | None, *, tokenizer: Tokenizer, user_prompt_prefix: str
) -> int:
    """Tokens left for chunks in a naive query (uses the slot, not the text, as LightRAG does)."""
    template = system_prompt or prompts.NAIVE_RAG_RESPONSE
    up = resolve_user_prompt(run.param, user_prompt_prefix)
    response_type = run.param.response_type or "Multiple Paragraphs"
    sys_text = template.format(response_type=response_type, user_prompt=up.slot, content_data="")
    tok = tokenizer
    return run.param.max_total_tokens - (
        count_tokens(sys_text, tok) + count_tokens(run.query, tok) + BUFFER_TOKENS
    )


def assign_references(chunks: Sequence[ChunkItem]) -> tuple[list[dict[str, str]], list[ChunkItem]]:
    """Reference ids by (count desc, first appearance); ``""`` for chunks without a path."""
    counts: dict[str, int] = {}
    first: dict[str, int] = {}
    for i, c in enumerate(chunks):
        fp = c.file_path
        if fp and fp != "unknown_source":
            counts[fp] = counts.get(fp, 0) + 1
            first.setdefault(fp, i)
    ordered = sorted(counts, key=lambda p: (-counts[p], first[p]))
    ref_of = {p: str(i + 1) for i, p in enumerate(ordered)}
    updated = []
    for c in chunks:
        item = copy.copy(c)  # callers keep their own items untouched
        item.reference_id = ref_of.get(c.file_path, "") if c.file_path else ""
        updated.append(item)
    return [{"reference_id": ref_of[p], "file_path": p} for p in ordered], updated


def _chunk_line(c: ChunkItem, with_reference: bool, escaped: str | None = None) -> str:
    """``json.dumps({["reference_id",] "content"[, "content_headings"]}, ensure_ascii=False)``.

    ``escaped``: ``c.content`` already escaped (``json.encoder.encode_basestring``). String
    values are escaped and joined by hand (the same text ``json.dumps`` produces,
    without a dict and an encoder per line); anything else goes through ``json.dumps``.
    """
    ref, content, headings = c.reference_id, c.content, c.content_headings
    if type(ref) is str and type(content) is str and type(headings) is str:
        # one concatenation: the content (kilobytes) is copied once
        head = f'{{"reference_id": {_enc(ref)}, "content": ' if with_reference else '{"content": '
        tail = f', "content_headings": {_enc(headings)}}}' if headings else "}"
        return head + (_enc(content) if escaped is None else escaped) + tail
    entry: dict[str, Any] = {"reference_id": ref} if with_reference else {}
    entry["content"] = content
    if headings:
        entry["content_headings"] = headings
    return json.dumps(entry, ensure_ascii=False)


def render_chunks(chunks: Sequence[ChunkItem]) -> str:
    """One JSON line per chunk: ``{"reference_id", "content"[, "content_headings"]}``."""
    return "\n".join([_chunk_line(c, True) for c in chunks])


def render_references(references: Sequence[dict[str, str]]) -> str:
    """``[n] path`` lines."""
    return "\n".join(
        f"[{r['reference_id']}] {r['file_path']}" for r in references if r["reference_id"]
    )


@dataclass
class FinalChunks:
    """Stage 4's chunk output."""

    chunks: list[ChunkItem]
    references: list[dict[str, str]]
    rerank_error: str | None = None
    #: ``render_chunks(chunks)``: the text the token budget was checked on (not rendered again)
    rendered: str = ""


async def _rerank(
    reranker: Reranker | None, run: QueryRun, chunks: list[ChunkItem]
) -> tuple[list[ChunkItem], str | None]:
    if reranker is None:
        return chunks, None
    top_n = run.param.chunk_top_k or len(chunks)
    try:
        results = await reranker.rerank(run.query, [c.content for c in chunks], top_n)
    except Exception as exc:  # LightRAG keeps the original order when reranking fails
        return chunks, f"{type(exc).__name__}: {exc}"
    out: list[ChunkItem] = []
    for r in results:
        index, score = getattr(r, "index", None), getattr(r, "relevance_score", None)
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(chunks):
            continue
        if isinstance(score, bool):
            continue
        try:
            fscore = float(score)  # type: ignore[arg-type]
        except (TypeError, ValueError, OverflowError):
            continue
        if not math.isfinite(fscore):
            continue
        out.append(replace(chunks[index], rerank_score=fscore))
    return (out or chunks), None


def _truncate_chunks(
    chunks: list[ChunkItem], budget: int, tokenizer: Tokenizer
) -> tuple[list[ChunkItem], list[dict[str, str]], str]:
    """LightRAG's two-stage ``_truncate_chunks_for_unified_context``, then its references: the
    kept chunks with their reference ids and the reference list (``assign_references`` of the
    kept chunks), and ``render_chunks`` of them, the text the budget was checked on."""
    if budget <= 0 or not chunks:
        return [], [], ""

    escaped = [_enc(c.content) if type(c.content) is str else None for c in chunks]
    k = truncate_list_by_token_size(
        [_chunk_line(c, False, e) for c, e in zip(chunks, escaped, strict=True)],
        "\n",
        budget,
        tokenizer,
    )
    while k > 0:
        references, rendered = assign_references(chunks[:k])
        text = "\n".join(
            [_chunk_line(c, True, e) for c, e in zip(rendered, escaped[:k], strict=True)]
        )
        if count_tokens(text, tokenizer) <= budget:
            return rendered, references, text
        k -= 1
    return [], [], ""


@dataclass(frozen=True)
class Finishing:
    """What stage 4 uses besides the chunks: the reranker, the tokenizer and LightRAG's
    ``min_rerank_score`` and ``enable_content_headings``."""

    tokenizer: Tokenizer
    reranker: Reranker | None = None
    min_rerank_score: float = 0.0
    enable_content_headings: bool = True


async def process_chunks(
    run: QueryRun, chunks: list[ChunkItem], budget: int, finishing: Finishing
) -> FinalChunks:
    """Rerank (when enabled), min score, ``chunk_top_k``, heading paths, token truncation,
    references."""
    param = run.param
    rerank_error = None
    if param.enable_rerank and run.query and chunks:
        chunks, rerank_error = await _rerank(finishing.reranker, run, chunks)
    if param.enable_rerank and chunks:
        min_score = finishing.min_rerank_score
        if min_score > 0.0:
            chunks = [
                c
                for c in chunks
                if (1.0 if c.rerank_score is None else c.rerank_score) >= min_score
            ]
            if not chunks:
                return FinalChunks([], [], rerank_error)
    if param.chunk_top_k is not None and param.chunk_top_k > 0:
        chunks = chunks[: param.chunk_top_k]
    if finishing.enable_content_headings:
        await attach_headings(run, chunks, finishing.tokenizer)
    chunks, references, rendered = _truncate_chunks(chunks, budget, finishing.tokenizer)
    return FinalChunks(chunks, references, rerank_error, rendered)
