"""The demo stack served with a real LLM adapter (:class:`~hexrag.adapters.openai.OpenAILLM`
talking to a :class:`~hexrag.devtools.scripted_openai.ScriptedOpenAIServer`) and the document
routes on (a scripted extraction model): the app the attack suites put behind a live server."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from hexrag.adapters.memory import MemoryDocumentStore
from hexrag.adapters.tiktoken_offline import default_tokenizer
from hexrag.api import create_app
from hexrag.api.limits import ApiSettings
from hexrag.core.ingest.ingestion import Ingestor
from hexrag.core.query.engine import QueryEngine
from hexrag.demo import build_demo_engine
from hexrag.devtools.scripted_kg import ScriptedKGLLM

__all__ = ["scripted_demo_app"]


def scripted_demo_app(model_base_url: str, settings: ApiSettings) -> Any:
    """The demo's stores answered through ``OpenAILLM`` at ``model_base_url``, with an
    ingestor (scripted extraction, memory document store), under ``settings``."""
    import openai

    from hexrag.adapters.openai import OpenAILLM

    demo = asyncio.run(build_demo_engine())
    stores: dict[str, Any] = {
        "entities": demo.entities, "relationships": demo.relationships, "chunks": demo.chunks,
        "graph": demo.graph, "chunk_store": demo.chunk_store,
    }
    client = openai.AsyncOpenAI(base_url=model_base_url, api_key="test")
    llm = OpenAILLM(client, model="scripted-model", max_retries=0, timeout=10)
    engine = QueryEngine(
        **stores, embedder=demo.engine.embedder, llm=llm, tokenizer=demo.engine.tokenizer
    )
    ingestor = Ingestor(
        **stores, llm=ScriptedKGLLM(), embedder=demo.engine.embedder,
        tokenizer=default_tokenizer(), clock=lambda: int(time.time()),
        documents=MemoryDocumentStore(),
    )
    return create_app(engine, settings=settings, ingestor=ingestor)
