"""hexrag's contract suite: one base class per port, importable by anyone who writes a backend.

Expected results come from the pure oracle in :mod:`hexrag.core.reference.oracle`, computed
over the fixed
corpus in :mod:`hexrag.testing.corpus` (never from the adapter under test).

How a backend opts in
=====================

Write a small subclass named ``Test*`` in your test tree and override **one** fixture. The
fixture must give a fresh, empty store in its own namespace (collection / table prefix / key
prefix / label) and clean it up at teardown. It may be a sync or an ``async def`` fixture
with a plain ``@pytest.fixture``. Every contract test is an ``async def``; hexrag's pytest plugin
(the ``pytest11`` entry point :mod:`hexrag.testing.plugin`, active wherever hexrag is installed)
has pytest-asyncio run them and your async fixture in any mode, *strict* included: no marker,
no ``asyncio_mode`` and no ``pytest_asyncio`` import are needed (pytest-asyncio must be
installed). Every class also carries ``test_no_overrides_DO_NOT_OVERRIDE``, which fails when a
subclass overrides an inherited contract test other than as a strict, explained xfail.

==========================  ===========================  ==================================
base class                  fixture to override          capability flags (class attributes)
==========================  ===========================  ==================================
``VectorIndexContract``     ``vector_index_factory``     ``dim`` (16), ``score_tolerance``
                            ``(namespace, dim,           (2e-3), ``preserves_source_id_form``,
                            cosine_threshold) ->         ``stores_arbitrary_metadata``,
                            VectorIndex`` (or an         ``run_property_tests`` (all True)
                            awaitable of one); each call
                            returns a new, empty index
``GraphStoreContract``      ``graph_store``              ``supports_self_loops``,
                                                         ``group_survives_partial_delete``
``ChunkStoreContract``      ``chunk_store``              (none)
``DocumentStoreContract``   ``document_store``           (none)
``CacheContract``           ``cache`` (+ ``other_        ``isolates_namespaces`` (True: also
                            namespace_cache``)           override ``other_namespace_cache``)
``EmbedderContract``        ``embedder``                 ``exact_determinism``, ``tolerance``,
                                                         ``embeds_empty_text``
``RerankerContract``        ``reranker``                 ``best_first``, ``judges_relevance``
``LLMContract``             ``llm``                      ``supports_json_mode``,
                                                         ``deterministic`` (False)
``StackContract``           ``stack`` -> a stack spec    ``stack_dim`` (64); optional
                            (TOML path, ``StackConfig``, ``stack_embedder`` fixture
                            ``"memory"``: opened by
                            ``hexrag.bootstrap.open``),
                            or a dict with
                            ``entities``,
                            ``relationships``,
                            ``chunks`` (VectorIndex,
                            dim ``stack_dim``, threshold
                            0.2), ``graph``,
                            ``chunk_store``
==========================  ===========================  ==================================

``VectorIndexContract`` is the sum of capability mixins - ``VectorWriteContract``,
``VectorQueryContract``, ``VectorReadContract``, ``VectorPropertyContract``,
``VectorScanContract`` - each usable alone (same fixture) for a backend that offers part of
the port. A flag that is off makes its test skip itself. A complete opt-in (it runs as
written: ``tests/unit/test_testing_docstring.py`` executes it; put your adapter where the
memory one is, and drop your collection / table / key prefix at teardown)::

    import pytest

    from hexrag.adapters.memory import MemoryVectorIndex
    from hexrag.testing import VectorIndexContract


    class TestMyVectorIndex(VectorIndexContract):
        @pytest.fixture
        async def vector_index_factory(self):
            made = []

            def make(namespace, dim, cosine_threshold):
                index = MemoryVectorIndex(namespace, dim, cosine_threshold=cosine_threshold)
                made.append(index)
                return index

            yield make
            made.clear()  # a real backend drops the collections / tables it made here

A test your backend cannot pass as the port states it is first a question of declaration: a
store that keeps another system's rules declares them as its ``traits`` and the suite asserts
what it declares - a vector index's strict threshold, order among ties and stored fields
(:class:`~hexrag.ports.vector_index.VectorIndexTraits`), a graph's one edge per pair under the
pair's id, orientation and neighbour order
(:class:`~hexrag.ports.graph_store.GraphStoreTraits`), a chunk store's kept metadata and
stamped bookkeeping keys (:class:`~hexrag.ports.chunk_store.ChunkStoreTraits`), a cache's
stamped keys (:class:`~hexrag.ports.cache.CacheTraits`); LightRAG's layouts in
``tests/contract/test_lightrag_*_contract.py`` run the contracts that way, with no xfail.
Otherwise the test is weakened only with a strict xfail that says why (in the class body above)::

        @pytest.mark.xfail(strict=True, reason="pgvector rounds to float16 at the boundary")
        async def test_threshold_is_inclusive(self, vector_index_factory):
            await super().test_threshold_is_inclusive(vector_index_factory)

Call ``pytest.register_assert_rewrite("hexrag.testing")`` in your ``conftest.py`` (before
anything imports this package) for detailed assertion messages.
"""

from __future__ import annotations

from hexrag.testing.cache import CacheContract
from hexrag.testing.chunk_store import ChunkStoreContract
from hexrag.testing.document_store import DocumentStoreContract
from hexrag.testing.graph_store import GraphStoreContract
from hexrag.testing.models import EmbedderContract, LLMContract, RerankerContract
from hexrag.testing.stack import StackContract
from hexrag.testing.vector_index import (
    VectorIndexContract,
    VectorIndexFactory,
    VectorPropertyContract,
    VectorQueryContract,
    VectorReadContract,
    VectorScanContract,
    VectorWriteContract,
)

__all__ = [
    "CacheContract",
    "ChunkStoreContract",
    "DocumentStoreContract",
    "EmbedderContract",
    "GraphStoreContract",
    "LLMContract",
    "RerankerContract",
    "StackContract",
    "VectorIndexContract",
    "VectorIndexFactory",
    "VectorPropertyContract",
    "VectorQueryContract",
    "VectorReadContract",
    "VectorScanContract",
    "VectorWriteContract",
]
