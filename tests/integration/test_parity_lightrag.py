"""hexrag vs the real LightRAG 1.5.7 on the same working directories.

For every dataset in ``PARITY_DATASETS``, every keyword query and every mode, hexrag's
``query_data`` must equal LightRAG's ``aquery_data`` (the same ordered entities,
relationships, chunks and references; LightRAG's ``processing_info`` keys) and hexrag's
context (``only_need_context=True``) must equal LightRAG's, byte for byte.

* ``WEIGHT`` chunk picking is compared exactly.
* ``VECTOR`` chunk picking is compared with chunks and references as sets: LightRAG ranks the
  candidate chunks of a Python ``set`` with a stable sort, so its order among equal scores
  depends on the process's hash seed.

hexrag runs with its deliberate improvements switched off (``docs/compat.md``), e.g.
``relation_lookup={"hybrid": "pair", "mix": "pair"}``. Both engines embed with the
dataset's embedder (``PARITY_EMBEDDERS``): ``ParityEmbedder`` (hexrag's ``HashingEmbedder`` plus
a deterministic per-text jitter that removes exact cosine ties) or, on the tie-heavy
``ties300``, the plain ``HashingEmbedder``, where equal scores must fall in NanoVectorDB's
order. LightRAG never calls an LLM:
keywords are supplied, rerank is off, and its LLM function raises.

Run: ``pip install -e '.[parity,test]' && pytest tests/integration/test_parity_lightrag.py``
(``HEXRAG_REQUIRE_PARITY=1`` turns a missing lightrag-hku into a failure).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from typing import Any

import pytest

from hexrag.devtools.lightrag_data import (
    PARITY_DATASETS,
    PARITY_QUERIES,
    DatasetSpec,
    diff_context,
    diff_context_as_sets,
    diff_query_data,
    generate_dataset,
    keyword_queries,
    require_lightrag,
)

pytestmark = pytest.mark.parity

require_lightrag()

MODES = ("local", "global", "hybrid", "mix", "naive")
PICKS = ("WEIGHT", "VECTOR")

CASES = [
    pytest.param(key, q, id=f"{key}-{q.label}")
    for key, spec in PARITY_DATASETS.items()
    for q in keyword_queries(generate_dataset(spec), PARITY_QUERIES[key])
]


@pytest.mark.parametrize("pick", PICKS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("key", "query"), CASES)
def test_query_data_and_context_match_lightrag(
    parity_world: Any, key: str, query: object, mode: str, pick: str
) -> None:
    from hexrag.devtools.lightrag_data import (
        KeywordQuery,
        hexrag_context,
        hexrag_query_data,
        lightrag_context,
        lightrag_query_data,
    )

    assert isinstance(query, KeywordQuery)
    rag = parity_world.lightrag(key, pick)
    engine = parity_world.hexrag(key, pick)
    lr_data = parity_world.run(lightrag_query_data(rag, mode, query))
    hx_data = parity_world.run(hexrag_query_data(engine, mode, query))
    lr_ctx = parity_world.run(lightrag_context(rag, mode, query))
    hx_ctx = parity_world.run(hexrag_context(engine, mode, query))

    exact = pick == "WEIGHT"
    diffs = diff_query_data(lr_data, hx_data, exact=exact)
    diffs += diff_context(lr_ctx, hx_ctx) if exact else diff_context_as_sets(lr_ctx, hx_ctx)
    assert not diffs, f"{key} {query.label} mode={mode} pick={pick}:\n" + "\n".join(diffs)


def _digest(spec: DatasetSpec) -> str:
    ds = generate_dataset(spec)
    payload = json.dumps(
        [
            [asdict(c) for c in ds.chunks],
            [asdict(e) for e in ds.entities],
            [asdict(r) for r in ds.relations],
        ],
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def test_generator_is_deterministic_and_seed_sensitive() -> None:
    spec = DatasetSpec(n_entities=200, seed=5)
    assert _digest(spec) == _digest(spec)
    assert _digest(spec) != _digest(DatasetSpec(n_entities=200, seed=6))


def test_written_directory_is_a_realistic_lightrag_workdir(parity_world: Any) -> None:
    """LightRAG reads back what was written, and the data has the shapes the suite relies on."""
    for key, ds in parity_world.datasets.items():
        rag = parity_world.lightrag(key, "WEIGHT")
        graph = rag.chunk_entity_relation_graph
        in_graph = [e for e in ds.entities if not e.orphan]
        nodes = parity_world.run(graph.get_nodes_batch([e.name for e in in_graph]))
        assert len(nodes) == len(in_graph)
        first = ds.relations[0]
        edge = parity_world.run(graph.get_edge(first.tgt, first.src))
        assert edge is not None and edge["source_id"] == "<SEP>".join(first.chunk_ids)
        chunk = ds.chunks[0]
        stored = parity_world.run(rag.text_chunks.get_by_ids([chunk.id]))[0]
        assert stored["content"] == chunk.content and stored["file_path"] == chunk.file_path
        stats = ds.stats()
        # Relations whose evidence spans several chunks, entities spread over products,
        # Zipf hubs far above the mean degree.
        assert stats["multi_chunk_relations"] > stats["relations"] // 4
        assert stats["multi_product_entities"] > stats["entities"] // 10
        assert stats["max_degree"] > 5 * (2 * stats["relations"] / stats["entities"])
        assert all(
            e.file_paths[0].startswith("product_id:") and ":category:" in e.file_paths[0]
            for e in in_graph
        )
