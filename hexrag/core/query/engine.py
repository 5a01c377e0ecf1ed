"""The composition root and orchestrator: :class:`QueryEngine`.

A ``QueryEngine`` is built from port instances (memory adapters in tests, real backends in
production) and runs LightRAG 1.5.7's query path: keywords → stage 1 search → stage 2
truncation → stage 3 chunk recovery → stage 4 context → answer.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from hexrag.core.hashing import (
    ANSWER_CACHE_VERSION,
    answer_cache_key,
    llm_cache_identity,
    serialize_identity,
)
from hexrag.core.query import prompts
from hexrag.core.query.auto_mode import choose_mode
from hexrag.core.query.chunk_head import recover_chunk_head
from hexrag.core.query.chunks import Picking, recover_chunks
from hexrag.core.query.context import (
    FinalChunks,
    Finishing,
    kg_chunk_budget,
    naive_chunk_budget,
    process_chunks,
    render_references,
    resolve_user_prompt,
)
from hexrag.core.query.keywords import extract_keywords
from hexrag.core.query.memo import QueryMemo
from hexrag.core.query.narrowing import narrow_items
from hexrag.core.query.output import (
    empty_user_format,
    no_result,
    user_format,
)
from hexrag.core.query.run import ChunkFetcher, ChunkItem, QueryRun, RunStats, Stores
from hexrag.core.query.scoped_source_ids import narrow_source_ids
from hexrag.core.query.search import SearchResult, perform_search, vector_chunks
from hexrag.core.query.truncation import truncate
from hexrag.core.query.validation import validate_history, validate_query
from hexrag.core.tokenizer import Tokenizer
from hexrag.domain.errors import ConfigurationError
from hexrag.domain.params import EngineSettings, QueryParam
from hexrag.ports import (
    LLM,
    Cache,
    ChunkStore,
    Embedder,
    FragmentReader,
    GraphStore,
    Reranker,
    VectorIndex,
)
from hexrag.ports.chunk_presence import ChunksWithPresence

__all__ = ["QueryEngine", "QueryResult"]


@dataclass
class QueryResult:
    """What a query produced (LightRAG's ``QueryResult``).

    Exactly one of ``content`` / ``response_iterator`` is set. ``raw_data`` is the
    ``/query/data`` structure (``None`` only on a failure without data).
    """

    content: str | None = None
    response_iterator: AsyncIterator[str] | None = None
    raw_data: dict[str, Any] | None = None
    is_streaming: bool = False
    llm_generated: bool = True
    cache_hit: bool = False


def _epoch_seconds() -> int:
    """The system clock in whole seconds: the engine's clock when none is injected."""
    return int(time.time())


def _budget_fields(param: QueryParam) -> dict[str, Any]:
    """The ``queryparam`` metadata LightRAG stores with keyword and answer cache entries."""
    return {
        "mode": param.mode,
        "response_type": param.response_type,
        "top_k": param.top_k,
        "chunk_top_k": param.chunk_top_k,
        "max_entity_tokens": param.max_entity_tokens,
        "max_relation_tokens": param.max_relation_tokens,
        "max_total_tokens": param.max_total_tokens,
    }


@dataclass
class _Context:
    context: str
    raw_data: dict[str, Any]
    hl_str: str
    ll_str: str


class QueryEngine:
    """LightRAG's query pipeline over any set of adapters.

    Args:
        entities, relationships, chunks: the three vector indexes.
        graph: the knowledge graph.
        chunk_store: chunk text and metadata.
        embedder: must be the model that produced the stored vectors.
        llm: answers and keyword extraction; without one, keywords come from the
            deterministic extractor and only context/prompt/data queries work.
        reranker: used when ``QueryParam.enable_rerank`` is true.
        cache: keyword and answer cache (LightRAG's ``llm_response_cache``).
        settings: engine-wide settings (defaults from LightRAG's environment variables).
        tokenizer: the tokenizer port (required; the composition root passes tiktoken's
            ``o200k_base``, LightRAG's default, from :mod:`hexrag.adapters.tiktoken_offline`).
        corpus_version: an async callable returning a string that changes whenever the
            indexed data changes; it is part of the answer-cache key so that a cached answer is
            never served after a write.
        fragments: the stack's description fragments (its
            :class:`~hexrag.ports.DocumentStore`); with them a scoped query shows each
            entity's and relation's description as its in-scope sources wrote it
            (:mod:`hexrag.core.query.narrowing`), at the cost of one more call per scoped query.
        clock: the epoch seconds stamped on the cache entries the engine writes (LightRAG's
            ``create_time``/``update_time``); defaults to the system clock.
        repair_json: the lenient parser of LLM answers that are not strict JSON (LightRAG's
            ``json_repair.loads``, which :func:`hexrag.bootstrap.compose_engine` passes);
            without one such an answer is unusable (keywords fall back to the basic ones).
    """

    def __init__(
        self,
        *,
        entities: VectorIndex,
        relationships: VectorIndex,
        chunks: VectorIndex,
        graph: GraphStore,
        chunk_store: ChunkStore,
        embedder: Embedder,
        llm: LLM | None = None,
        reranker: Reranker | None = None,
        cache: Cache | None = None,
        settings: EngineSettings | None = None,
        tokenizer: Tokenizer,
        corpus_version: Callable[[], Awaitable[str]] | None = None,
        fragments: FragmentReader | None = None,
        clock: Callable[[], int] | None = None,
        repair_json: Callable[[str], Any] | None = None,
    ) -> None:
        self.stores = Stores(
            entities=entities,
            relationships=relationships,
            chunks=chunks,
            graph=graph,
            chunk_store=chunk_store,
        )
        self.embedder = embedder
        self.llm = llm
        self.reranker = reranker
        self.cache = cache
        self.settings = settings or EngineSettings()
        self.tokenizer: Tokenizer = tokenizer
        #: the memo caches of this engine's query path (heading paths, source_id splits)
        self.memo = QueryMemo()
        self.corpus_version = corpus_version
        self.fragments = fragments
        self.clock: Callable[[], int] = clock if clock is not None else _epoch_seconds
        self.repair_json = repair_json

    @property
    def _picking(self) -> Picking:
        s = self.settings
        return Picking(s.kg_chunk_pick_method, s.related_chunk_number, s.enable_content_headings)

    @property
    def _finishing(self) -> Finishing:
        s = self.settings
        return Finishing(self.tokenizer, self.reranker, s.min_rerank_score,
                         s.enable_content_headings)

    def _chunk_head(self, run: QueryRun) -> int | None:
        """``chunk_top_k`` when stage 4 reads only the head of the merged chunks (no
        reranker, no scope) and the chunk store can tell presence apart from text; else
        ``None`` (every candidate chunk is read)."""
        param = run.param
        k = param.chunk_top_k
        if k is None or k <= 0 or run.scope is not None:
            return None
        if param.enable_rerank and self.reranker is not None:
            return None
        if not isinstance(self.stores.chunk_store, ChunksWithPresence):
            return None
        return k

    # ---------------------------------------------------------------- public API

    async def query_data(self, query: str, param: QueryParam | None = None) -> dict[str, Any]:
        """The ``/query/data`` structure: retrieval only, no answer (LightRAG ``aquery_data``)."""
        param = (param or QueryParam()).model_copy(
            update={"only_need_context": True, "only_need_prompt": False, "stream": False}
        )
        if param.mode == "bypass":
            validate_query(query, "bypass")
            return empty_user_format("bypass")
        result = await self.query_result(query, param)
        return result.raw_data if result.raw_data is not None else {}

    async def query(
        self, query: str, param: QueryParam | None = None, *, system_prompt: str | None = None
    ) -> str | AsyncIterator[str]:
        """The answer; the context with ``only_need_context``; the prompt with
        ``only_need_prompt``; an async iterator of pieces with ``stream=True``."""
        result = await self.query_result(query, param, system_prompt=system_prompt)
        if result.response_iterator is not None:
            return result.response_iterator
        return result.content or ""

    async def query_result(
        self, query: str, param: QueryParam | None = None, *, system_prompt: str | None = None
    ) -> QueryResult:
        """The full result (LightRAG ``aquery_llm``): raw data plus content or stream."""
        param = param or QueryParam()
        query = validate_query(query, param.mode)
        validate_history(param.conversation_history)  # the LLM adapters send it as JSON
        if param.mode == "auto":
            choice = await choose_mode(query, self.llm, self.repair_json)
            result = await self.query_result(
                query, param.model_copy(update={"mode": choice.mode}), system_prompt=system_prompt
            )
            if result.raw_data is not None:
                result.raw_data.setdefault("metadata", {})["mode_selection"] = choice.as_metadata()
            return result
        if param.mode == "bypass":
            return await self._bypass(query, param, system_prompt)
        # Read before retrieval: a write bumps the version only after it lands, so an answer
        # stored under this version was computed from data at least as new as the version.
        version = await self._corpus_version_for(param)
        run = self._new_run(query, param)
        if param.mode == "naive":
            ctx = await self._naive_context(run, system_prompt)
        else:
            ctx_or_fail = await self._kg_context(run, system_prompt)
            if isinstance(ctx_or_fail, QueryResult):
                return ctx_or_fail
            ctx = ctx_or_fail
        if ctx is None:
            return QueryResult(
                content=prompts.FAIL_RESPONSE,
                raw_data=no_result(param.mode, self._info(run)),
                llm_generated=False,
            )
        return await self._answer(run, ctx, system_prompt, version)

    # ---------------------------------------------------------------- internals

    async def _corpus_version_for(self, param: QueryParam) -> str | None:
        """The corpus version, read only when the answer cache may be used."""
        if (
            self.corpus_version is None
            or not self._cache_enabled()
            or param.only_need_context
            or param.only_need_prompt
            or self._history(param)
        ):
            return None
        return await self.corpus_version()

    def _new_run(self, query: str, param: QueryParam) -> QueryRun:
        stats = RunStats()
        return QueryRun(
            query=query,
            param=param,
            stats=stats,
            fetcher=ChunkFetcher(self.stores.chunk_store, stats),
            memo=self.memo,
        )

    def clear_memo_caches(self) -> None:
        """Forget every memoised value of this engine's query path, the tokenizer's counts
        included when it offers ``clear_caches()`` (benchmarks time the cold path so)."""
        self.memo.clear()
        clear = getattr(self.tokenizer, "clear_caches", None)
        if clear is not None:
            clear()

    def _info(self, run: QueryRun) -> dict[str, Any]:
        return run.stats.processing_info(run.scope, self.settings.missing_chunk_sample_size)

    def _identity_json(self, role: str) -> str:
        return serialize_identity(
            llm_cache_identity(
                role,
                binding=self.settings.llm_binding,
                model=(self.llm.model_name if self.llm is not None else None)
                or self.settings.llm_model_name,
                host=self.settings.llm_binding_host,
            )
        )

    def _cache_enabled(self) -> bool:
        return self.cache is not None and self.settings.enable_llm_cache

    async def _keywords(self, run: QueryRun) -> tuple[list[str], list[str]]:
        param = run.param
        if param.hl_keywords or param.ll_keywords:
            run.stats.keyword_source = "supplied"
            return list(param.hl_keywords), list(param.ll_keywords)
        result = await extract_keywords(
            run.query,
            mode=param.mode,
            llm=self.llm,
            cache=self.cache if self._cache_enabled() else None,
            language=self.settings.summary_language,
            identity_json=self._identity_json("keyword"),
            clock=self.clock,
            repair_json=self.repair_json,
            param_meta={
                **_budget_fields(param),
                "user_prompt": param.user_prompt or "",
                "enable_rerank": param.enable_rerank,
            },
        )
        run.stats.keyword_source = result.source
        run.stats.llm_error = result.llm_error
        return list(result.hl), list(result.ll)

    async def _kg_context(
        self, run: QueryRun, system_prompt: str | None
    ) -> _Context | QueryResult | None:
        hl, ll = await self._keywords(run)
        if not hl and not ll:
            if len(run.query) < 50:
                ll = [run.query]
            else:
                # LightRAG answers "[no-context]" without data here (and /query/data then
                # fails with HTTP 500); we say what happened.
                return QueryResult(
                    content=prompts.FAIL_RESPONSE,
                    raw_data={
                        "status": "failure",
                        "message": "No keywords could be extracted from the query.",
                        "data": {},
                        "metadata": {
                            "failure_reason": "no_keywords",
                            "mode": run.param.mode,
                            "processing_info": self._info(run),
                        },
                    },
                    llm_generated=False,
                )
        ll_str = ", ".join(ll)
        hl_str = ", ".join(hl)
        param = run.param

        # Stage 1
        found = await perform_search(
            self.stores, self.embedder, run, ll_str, hl_str,
            relation_lookup=self.settings.lookup_for(param.mode),
        )
        if not found.entities and not found.relations:
            if param.mode != "mix" or not found.vector_chunks:
                return None
        if self.fragments is not None and run.scope is not None and not run.scope.is_empty:
            found = await self._narrow(run, found)
        # Stage 2
        cut = truncate(
            found.entities,
            found.relations,
            max_entity_tokens=param.max_entity_tokens,
            max_relation_tokens=param.max_relation_tokens,
            tokenizer=self.tokenizer,
        )
        # Stage 3
        head = self._chunk_head(run)
        if head is None:
            merged = await recover_chunks(
                self.stores.chunks, run, cut.entities, cut.relations, found.vector_chunks,
                self._picking,
            )
            n_merged = len(merged)
        else:  # only the head can be shown: read the rest's presence, not its text
            merged, n_merged = await recover_chunk_head(
                self.stores.chunks, self.stores.chunk_store, run,  # type: ignore[arg-type]
                cut.entities, cut.relations, found.vector_chunks, self._picking, head,
            )
        if not n_merged and not cut.entity_lines and not cut.relation_lines:
            return None
        # Stage 4
        entities_str = "\n".join(cut.entity_lines)
        relations_str = "\n".join(cut.relation_lines)
        budget = kg_chunk_budget(
            run, entities_str, relations_str, system_prompt,
            tokenizer=self.tokenizer, user_prompt_prefix=self.settings.user_prompt_prefix,
        )
        final = await process_chunks(run, merged, budget, self._finishing)
        shown_e, shown_r = cut.entities, cut.relations
        if run.scope is not None:  # only in-scope chunk ids (no round trip: stage 3 fetched them)
            shown_e, shown_r, n_ids = await narrow_source_ids(run, shown_e, shown_r)
            run.stats.scope_narrowed_source_ids += n_ids
        keywords = {
            "high_level": hl_str.split(", ") if hl_str else [],
            "low_level": ll_str.split(", ") if ll_str else [],
        }
        processing_info = {
            "total_entities_found": len(found.entities),
            "total_relations_found": len(found.relations),
            "entities_after_truncation": len(cut.entities),
            "relations_after_truncation": len(cut.relations),
            "merged_chunks_count": n_merged,
            "final_chunks_count": len(final.chunks),
            **self._info(run),
        }
        if final.rerank_error:
            processing_info["rerank_error"] = final.rerank_error
        if not cut.entity_lines and not cut.relation_lines and not final.chunks:
            raw = empty_user_format(param.mode)
            raw["status"] = "failure"
            raw["message"] = "Query returned empty dataset."
            raw["metadata"]["keywords"] = keywords
            raw["metadata"]["processing_info"] = {**processing_info, "final_chunks_count": 0}
            return _Context("", raw, hl_str, ll_str)
        context = prompts.KG_QUERY_CONTEXT.format(
            entities_str=entities_str,
            relations_str=relations_str,
            text_chunks_str=final.rendered,
            reference_list_str=render_references(final.references),
        )
        raw = user_format(shown_e, shown_r, final.chunks, final.references, param.mode)
        raw["metadata"]["keywords"] = keywords
        raw["metadata"]["processing_info"] = processing_info
        return _Context(context, raw, hl_str, ll_str)

    async def _narrow(self, run: QueryRun, found: SearchResult) -> SearchResult:
        """Scope-correct descriptions (:mod:`hexrag.core.query.narrowing`), one store call."""
        assert self.fragments is not None and run.scope is not None
        names = {e.name for e in found.entities}
        for r in found.relations:
            names.update(r.relation.pair)
        if not names:
            return found
        fragments = await self.fragments.fragments_about(sorted(names))
        entities, relations, changed = narrow_items(
            run.scope, found.entities, found.relations, fragments
        )
        run.stats.scope_narrowed_descriptions += changed
        return SearchResult(entities, relations, found.vector_chunks)

    async def _naive_context(self, run: QueryRun, system_prompt: str | None) -> _Context | None:
        vectors = await self.embedder.embed([run.query])
        run.query_vector = vectors[0]
        found = await vector_chunks(self.stores.chunks, run, run.query_vector)
        if not found:
            return None
        items: list[ChunkItem] = [
            ChunkItem(chunk_id=v["chunk_id"], content=v["content"], file_path=v["file_path"])
            for v in found
        ]
        if run.scope is not None:
            from hexrag.core.scope import chunk_in_scope

            records = await run.fetcher.get([c.chunk_id for c in items])
            kept: list[ChunkItem] = []
            for item, rec in zip(items, records, strict=True):
                if rec is None or not chunk_in_scope(run.scope, rec):
                    run.stats.scope_chunk_guard_removed += 1
                    continue
                kept.append(item)
            items = kept
            if not items:
                return None
        budget = naive_chunk_budget(
            run, system_prompt,
            tokenizer=self.tokenizer, user_prompt_prefix=self.settings.user_prompt_prefix,
        )
        final: FinalChunks = await process_chunks(run, items, budget, self._finishing)
        raw = user_format([], [], final.chunks, final.references, "naive")
        raw["metadata"]["keywords"] = {"high_level": [], "low_level": []}
        raw["metadata"]["processing_info"] = {
            "total_chunks_found": len(items),
            "final_chunks_count": len(final.chunks),
            **self._info(run),
        }
        if final.rerank_error:
            raw["metadata"]["processing_info"]["rerank_error"] = final.rerank_error
        context = prompts.NAIVE_QUERY_CONTEXT.format(
            text_chunks_str=final.rendered,
            reference_list_str=render_references(final.references),
        )
        return _Context(context, raw, "", "")

    def _history(self, param: QueryParam) -> list[dict[str, Any]]:
        history = list(param.conversation_history)
        if param.history_turns > 0 and len(history) > 2 * param.history_turns:
            history = history[-2 * param.history_turns :]
        return history

    async def _answer(
        self,
        run: QueryRun,
        ctx: _Context,
        system_prompt: str | None,
        corpus_version: str | None = None,
    ) -> QueryResult:
        param = run.param
        if param.only_need_context and not param.only_need_prompt:
            return QueryResult(content=ctx.context, raw_data=ctx.raw_data, llm_generated=False)
        up = resolve_user_prompt(param, self.settings.user_prompt_prefix)
        naive = param.mode == "naive"
        if naive:
            sys_prompt = (system_prompt or prompts.NAIVE_RAG_RESPONSE).format(
                response_type=param.response_type, user_prompt=up.slot, content_data=ctx.context
            )
        else:
            sys_prompt = (system_prompt or prompts.RAG_RESPONSE).format(
                response_type=param.response_type or "Multiple Paragraphs",
                user_prompt=up.slot,
                context_data=ctx.context,
            )
        if param.only_need_prompt:
            return QueryResult(
                content="\n\n".join([sys_prompt, "---User Query---", run.query]),
                raw_data=ctx.raw_data,
                llm_generated=False,
            )
        if self.llm is None:
            raise ConfigurationError(
                "no LLM is configured: configure one, or ask for only_need_context, "
                "only_need_prompt or query_data"
            )
        history = self._history(param)
        use_cache = self._cache_enabled() and not history
        key = None
        if use_cache:
            extra: tuple[str, ...] = ()
            if corpus_version is not None:
                extra = ("corpus-version", corpus_version)
            if run.scope is not None:
                # a scoped answer is built from a scoped context: it must never be served to
                # (or from) an unscoped or differently scoped query
                extra += ("scope", run.scope.model_dump_json(exclude_none=True))
            key = answer_cache_key(
                mode=param.mode,
                query=run.query,
                response_type=param.response_type,
                top_k=param.top_k,
                chunk_top_k=param.chunk_top_k,
                max_entity_tokens=param.max_entity_tokens,
                max_relation_tokens=param.max_relation_tokens,
                max_total_tokens=param.max_total_tokens,
                hl_keywords_str=None if naive else ctx.hl_str,
                ll_keywords_str=None if naive else ctx.ll_str,
                user_prompt_text=up.text,
                enable_rerank=param.enable_rerank,
                enable_content_headings=self.settings.enable_content_headings,
                identity_json=self._identity_json("query"),
                extra=extra,
            )
            assert self.cache is not None
            (hit,) = await self.cache.get_many([key])
            if hit is not None and isinstance(hit.get("return"), str) and hit["return"]:
                return QueryResult(content=hit["return"], raw_data=ctx.raw_data, cache_hit=True)
        if param.stream:
            iterator = self.llm.stream(run.query, system_prompt=sys_prompt, history=history)
            return QueryResult(response_iterator=iterator, raw_data=ctx.raw_data, is_streaming=True)
        answer = await self.llm.complete(run.query, system_prompt=sys_prompt, history=history)
        if use_cache and key is not None and answer:
            assert self.cache is not None
            now = self.clock()
            queryparam: dict[str, Any] = {
                "answer_cache_version": ANSWER_CACHE_VERSION,
                **_budget_fields(param),
            }
            if not naive:
                queryparam["hl_keywords"] = ctx.hl_str
                queryparam["ll_keywords"] = ctx.ll_str
            queryparam.update(
                {
                    "user_prompt": param.user_prompt or "",
                    "enable_rerank": param.enable_rerank,
                    "enable_content_headings": self.settings.enable_content_headings,
                }
            )
            await self.cache.set_many(
                {
                    key: {
                        "return": answer,
                        "cache_type": "query",
                        "chunk_id": None,
                        "original_prompt": run.query,
                        "queryparam": queryparam,
                        "create_time": now,
                        "update_time": now,
                        "_id": key,
                    }
                }
            )
        return QueryResult(content=answer, raw_data=ctx.raw_data)

    async def _bypass(
        self, query: str, param: QueryParam, system_prompt: str | None
    ) -> QueryResult:
        if param.only_need_context or param.only_need_prompt:
            return QueryResult(
                content="", raw_data=empty_user_format("bypass"), llm_generated=False
            )
        if self.llm is None:
            raise ConfigurationError("bypass mode needs an LLM; none is configured")
        history = self._history(param)
        raw = {"status": "success", "data": {}, "metadata": {}}
        if param.stream:
            raw["message"] = "Bypass mode LLM streaming response"
            it = self.llm.stream(query, system_prompt=system_prompt, history=history)
            return QueryResult(response_iterator=it, raw_data=raw, is_streaming=True)
        raw["message"] = "Bypass mode LLM non streaming response"
        answer = await self.llm.complete(query, system_prompt=system_prompt, history=history)
        return QueryResult(content=answer, raw_data=raw)
