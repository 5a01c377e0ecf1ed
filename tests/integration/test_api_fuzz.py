"""Property-based fuzzing of the whole HTTP API from its own OpenAPI schema (schemathesis).

Every operation gets generated requests, valid and invalid; each answer must not be a server
error and must conform to the schema (status codes, content types, response bodies). Bounded:
a fixed number of examples per operation, derandomised, no deadline.

Not checked: schemathesis's ``positive_data_acceptance`` (a request the schema allows must be
accepted). Some rules cannot be stated in JSON Schema: a query must carry enough text for
retrieval (LightRAG's minimum query weight), scope values must not be blank. Those requests
get a documented 422, which that check would count as a failure.
"""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, settings

schemathesis = pytest.importorskip("schemathesis", reason="pip install schemathesis")

from schemathesis.checks import (  # noqa: E402
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from hexrag.adapters.memory import FakeLLM  # noqa: E402
from hexrag.api import create_app  # noqa: E402
from hexrag.api.limits import ApiSettings  # noqa: E402
from hexrag.core.query.engine import QueryEngine  # noqa: E402
from hexrag.demo import build_demo_engine  # noqa: E402


def _app() -> object:
    demo = asyncio.run(build_demo_engine())
    engine = QueryEngine(
        tokenizer=demo.engine.tokenizer,
        entities=demo.entities,
        relationships=demo.relationships,
        chunks=demo.chunks,
        graph=demo.graph,
        chunk_store=demo.chunk_store,
        embedder=demo.engine.embedder,
        llm=FakeLLM(),
    )
    import time

    from hexrag.adapters.memory import MemoryDocumentStore
    from hexrag.adapters.tiktoken_offline import default_tokenizer
    from hexrag.core.ingest.ingestion import Ingestor

    # the document endpoints are fuzzed too (deletion and upload included), with a real
    # (background) ingestion pipeline and document store
    ingestor = Ingestor(
        entities=demo.entities, relationships=demo.relationships, chunks=demo.chunks,
        graph=demo.graph, chunk_store=demo.chunk_store, llm=FakeLLM(),
        embedder=demo.engine.embedder, tokenizer=default_tokenizer(),
        clock=lambda: int(time.time()), documents=MemoryDocumentStore(),
    )
    return create_app(engine, settings=ApiSettings(), ingestor=ingestor)


schema = schemathesis.openapi.from_asgi("/openapi.json", _app())


@schema.parametrize()
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_api_never_fails_and_matches_its_schema(case: object) -> None:
    case.call_and_validate(  # type: ignore[attr-defined]
        checks=[
            not_a_server_error,
            status_code_conformance,
            content_type_conformance,
            response_schema_conformance,
        ]
    )
