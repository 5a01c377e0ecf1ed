"""One composition root: every front door builds its engine through
:func:`hexrag.bootstrap.compose_engine`, which refuses an incomplete set of stores."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from hexrag.adapters.memory import (
    HashingEmbedder,
    MemoryCache,
    MemoryChunkStore,
    MemoryGraphStore,
    MemoryVectorIndex,
)
from hexrag.bootstrap import compose_engine
from hexrag.core.errors import ConfigurationError

REPO = Path(__file__).resolve().parents[2]


def _stores() -> dict[str, object]:
    return {
        "entities": MemoryVectorIndex("entities", 8),
        "relationships": MemoryVectorIndex("relationships", 8),
        "chunks": MemoryVectorIndex("chunks", 8),
        "graph": MemoryGraphStore(),
        "chunk_store": MemoryChunkStore(),
    }


def test_compose_from_a_mapping_or_attributes_and_the_stores_cache() -> None:
    stores = _stores()
    cache = MemoryCache()
    engine = compose_engine({**stores, "cache": cache}, embedder=HashingEmbedder(8))
    assert engine.cache is cache and engine.stores.graph is stores["graph"]
    assert compose_engine({**stores, "cache": cache}, embedder=HashingEmbedder(8),
                          store_cache=False).cache is None

    class Bag:
        pass

    bag = Bag()
    for k, v in stores.items():
        setattr(bag, k, v)
    assert compose_engine(bag, embedder=HashingEmbedder(8)).stores.chunks is stores["chunks"]


def test_an_incomplete_set_of_stores_is_named() -> None:
    stores = _stores()
    del stores["graph"], stores["chunk_store"]
    with pytest.raises(ConfigurationError, match="graph, chunk_store"):
        compose_engine(stores, embedder=HashingEmbedder(8))


def test_no_front_door_constructs_the_engine_itself() -> None:
    """``QueryEngine(...)`` is called only by the core and the composition root."""
    offenders = []
    for base in ("hexrag", "bench"):
        for path in sorted((REPO / base).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if rel.startswith("hexrag/core/") or rel == "hexrag/bootstrap.py":
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name | ast.Attribute)
                    and (getattr(node.func, "id", None) or getattr(node.func, "attr", None))
                    == "QueryEngine"
                ):
                    offenders.append(f"{rel}:{node.lineno}")
    assert not offenders, offenders
