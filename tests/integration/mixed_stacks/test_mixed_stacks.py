"""Mixed stacks: every combination of the real backends behind the ports gives the memory
stack's answers, at the memory stack's round trips.

On a generated dataset (:mod:`tests.integration.golden`: products and categories, multi-chunk
relations, multi-edge pairs, non-ASCII names, dangling chunk ids, ``{a,b}`` source ids), every
stack returns exactly the memory stack's ``query_data`` result - ordered entities,
relationships, chunks, references and metadata - for the golden queries in every mode, scoped
and unscoped, with both chunk pick methods (:func:`test_stack_matches_memory`). Backends compute
cosines with different float32 rounding, so the dataset is built (jittered vectors, checked by
:func:`golden.near_ties`) so that no score the queries meet is within ``TIE_GAP`` of another or
of the threshold: equality stays exact. Vector search must be exact for that: Milvus uses a
``FLAT`` index (``AUTOINDEX`` on Milvus Lite turns approximate after its background index
build), pgvector its HNSW index with ``ef_search`` above the row count (an exhaustive scan of
the graph).

Round trips: every store (and the embedder) is wrapped in
:class:`hexrag.adapters.instrumented.Counting`; each query's per-``(store, method)`` call counts
must equal the memory stack's and stay within ``tests/unit/test_round_trips.BUDGET`` (plus
``SCOPED_EXTRA`` chunk-store calls for a scoped query).

Every backend is loaded once per module (``conftest.py`` beside this file: module-scoped
fixtures, one event loop for the module); the seeds' stacks and two regression tests are in
``test_seed_stacks.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from hexrag.adapters.memory import (
    HashingEmbedder,
)
from hexrag.core.scope import chunk_in_scope
from tests.integration.golden import (
    MODES,
    GoldenDataset,
    GoldenQuery,
)
from tests.integration.mixed_stacks.support import (
    MARKS,
    NEO4J,
    STACKS,
    Case,
    CountedStack,
    _check_budget,
    _first_difference,
    _logical,
    _run_mode,
    stack_id,
)

pytestmark = MARKS


# --------------------------------------------------------------------------------------
# (c) equivalence and round trips
# --------------------------------------------------------------------------------------


async def test_golden_set_exercises_the_pipeline(
    memory_results: dict[Case, tuple[dict[str, Any], dict[tuple[str, str], int]]],
    dataset: GoldenDataset,
    queries: list[GoldenQuery],
) -> None:
    """The reference results are not trivially equal: they find data, scopes filter it, and
    the nasty cases of the dataset are reached. (Otherwise equivalence would prove little.)"""
    chunks = dataset.chunk_by_id()
    scope_of = {q.label: q.scope for q in queries}
    a, b = dataset.multi_edge_pair
    seen = {"missing": 0, "by_chunk": 0, "pick_fallback": 0, "scope_changed": 0, "multi": 0}
    for (label, mode, scoped, method), (result, calls) in memory_results.items():
        assert not _check_budget(calls, scoped=scoped), (label, mode, scoped, method, calls)
        data = result.get("data", {})
        info = result["metadata"].get("processing_info", {})
        if not scoped:
            assert result["status"] == "success", (label, mode, method, result)
            assert data["chunks"], (label, mode, method)
            if mode != "naive":
                assert data["entities"] and data["relationships"], (label, mode, method)
            twin = memory_results[(label, mode, True, method)][0]
            seen["scope_changed"] += twin.get("data") != data
        else:
            for c in data.get("chunks", []):
                assert chunk_in_scope(scope_of[label], chunks[c["chunk_id"]]), (label, mode, c)
        seen["missing"] += info.get("missing_chunk_count", 0) > 0
        seen["by_chunk"] += info.get("relations_resolved_by_chunk", 0) > 0
        seen["pick_fallback"] += info.get("chunk_pick_fallbacks", 0) > 0
        pairs = [tuple(sorted((r["src_id"], r["tgt_id"]))) for r in data.get("relationships", [])]
        seen["multi"] += pairs.count(tuple(sorted((a, b)))) > 1
    assert all(n > 0 for n in seen.values()), seen
    # both pick methods matter on this data
    assert any(
        memory_results[(q.label, m, s, "VECTOR")][0] != memory_results[(q.label, m, s, "WEIGHT")][0]
        for q in queries
        for m in ("local", "hybrid")
        for s in (False, True)
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "stack_stores",
    [pytest.param(c, id=stack_id(c), marks=[NEO4J] if "neo4j" in c else []) for c in STACKS],
    indirect=True,
)
async def test_stack_matches_memory(
    stack_stores: dict[str, Any],
    mode: str,
    request: pytest.FixtureRequest,
    embedder: HashingEmbedder,
    queries: list[GoldenQuery],
    memory_results: dict[Case, tuple[dict[str, Any], dict[tuple[str, str], int]]],
) -> None:
    """Same ``query_data`` result (ordered entities, relationships, chunks, references and
    metadata) as the memory stack, for every golden query, scoped and unscoped, under both chunk
    pick methods; the same calls per store and method (``score_ids`` standing for
    ``get_vectors``), within the round-trip budget."""
    name = request.node.callspec.id.split("-")[0]
    stack = CountedStack.wrap(name, stack_stores, embedder)
    got = await _run_mode(stack, queries, mode)
    problems: list[str] = []
    for case, (result, calls) in got.items():
        expected, expected_calls = memory_results[case]
        diff = _first_difference(expected, result)
        if diff:
            problems.append(f"{case}: result differs at {diff}")
        if _logical(calls) != _logical(expected_calls):
            problems.append(f"{case}: calls {calls} != memory's {expected_calls}")
        problems += [f"{case}: {p}" for p in _check_budget(calls, scoped=case[2])]
    assert not problems, f"{len(problems)} problem(s) on {stack.name}:\n" + "\n".join(problems[:8])
