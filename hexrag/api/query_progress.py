"""LightRAG's retrieval progress events (``/query/stream`` with ``include_progress``).

LightRAG 1.5.7 calls a progress callback as its query pipeline reaches each step:
``extracting_keywords`` (KG modes), ``retrieving_entities``, ``retrieving_relations``,
``retrieving_chunks``, ``reranking`` (rerank enabled and chunks found) and
``generating_response`` (an LLM answer is asked for, not served from the cache).

hexrag's core stays free of such hooks: :func:`progress_engine` gives the request a shallow
copy of the engine whose ports report when they are first used for a step - the entity,
relation and chunk vector indexes, the chunk store (chunk texts fetched: ``reranking`` when
the query enables it), the reranker, the LLM's answer call (``stream``, or ``complete``
without ``json_mode``: keyword extraction asks for JSON). Each event is reported once, when
the step starts, in the order the engine runs them. Nothing else changes: same stores,
same results.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

from hexrag.core.model import QueryParam

__all__ = ["STEPS", "progress_engine"]

#: LightRAG's step names, in pipeline order.
STEPS = ("extracting_keywords", "retrieving_entities", "retrieving_relations",
         "retrieving_chunks", "reranking", "generating_response")


class _Steps:
    """Reports each step once to ``emit``."""

    def __init__(self, emit: Callable[[str], None], param: QueryParam) -> None:
        self.emit = emit
        self.param = param
        self.seen: set[str] = set()

    def __call__(self, step: str) -> None:
        if step == "reranking" and not (
                self.param.enable_rerank and self.seen & {"retrieving_entities",
                                                          "retrieving_relations",
                                                          "retrieving_chunks"}):
            return
        if step not in self.seen:
            self.seen.add(step)
            self.emit(step)


class _Watched:
    """``inner`` with ``hooks[name](args, kwargs)`` called before each call of ``name``
    (``"*"``: any method whose name starts with ``get``); everything else passes through."""

    def __init__(self, inner: Any, hooks: dict[str, Callable[[tuple[Any, ...], dict[str, Any]],
                                                          None]]) -> None:
        self._watched_inner = inner
        self._hooks = hooks

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._watched_inner, name)
        hook = self._hooks.get(name) or (self._hooks.get("*") if name.startswith("get")
                                         else None)
        if hook is None or not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            hook(args, kwargs)
            return attr(*args, **kwargs)

        return call


def progress_engine(engine: Any, param: QueryParam, emit: Callable[[str], None]) -> Any:
    """A copy of ``engine`` (a :class:`~hexrag.core.query.engine.QueryEngine`) reporting
    LightRAG's progress steps of a query run with ``param`` to ``emit``; ``engine`` itself
    is unchanged. ``extracting_keywords`` is reported at once for the KG modes."""
    steps = _Steps(emit, param)

    def on(step: str) -> Callable[[tuple[Any, ...], dict[str, Any]], None]:
        return lambda args, kwargs: steps(step)

    def on_complete(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if not kwargs.get("json_mode"):
            steps("generating_response")

    out = copy.copy(engine)
    stores = engine.stores
    out.stores = dataclasses.replace(
        stores,
        entities=_Watched(stores.entities, {"query": on("retrieving_entities")}),
        relationships=_Watched(stores.relationships, {"query": on("retrieving_relations")}),
        chunks=_Watched(stores.chunks, {"query": on("retrieving_chunks")}),
        chunk_store=_Watched(stores.chunk_store, {"*": on("reranking")}),
    )
    if engine.reranker is not None:
        out.reranker = _Watched(engine.reranker, {"rerank": on("reranking")})
    if engine.llm is not None and param.mode != "bypass":
        out.llm = _Watched(engine.llm, {"stream": on("generating_response"),
                                        "complete": on_complete})
    if param.mode not in ("naive", "bypass"):
        steps("extracting_keywords")
    return out
