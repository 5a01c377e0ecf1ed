"""Filter-injection attacks against MilvusVectorIndex, through real Milvus Lite queries.

Every attack value is stored as a record's scope value and id, then used as a scope value
and an id in queries: no call may error, widen or narrow its result compared with the pure
oracle (:func:`hexrag.core.scope.prefilter_match`), or touch another record.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from hexrag.core.model import QueryScope, VectorRecord
from hexrag.core.reference.oracle import VectorOracle, record_scope_values
from hexrag.core.scope import prefilter_match
from hexrag.testing._helpers import assert_same_record, check_hits
from tests.services import milvus as service

# The shared service fixtures, registered in this module.
milvus_client = service.milvus_client
milvus_index_factory = service.milvus_index_factory

pytestmark = pytest.mark.backend("milvus")

DIM = 8
ATTACKS: tuple[str, ...] = (
    '"or 1==1',
    '" or 1==1 or "',
    "') or (1==1",
    '") or (1==1',
    '"] or id != ["',
    '"]) or array_length(product_ids) >= 0 or array_contains_any(product_ids, ["',
    "' OR '1'='1",
    "a' or 'x'=='x",
    "%",
    "p%",
    "_",
    "p_",
    "%_%",
    "\\",
    "\\\\",
    '\\"',
    "end\\",
    "back\\slash\\",
    "line\nbreak",
    "cr\rlf\r\n",
    "tab\there",
    "\x00nul",
    "é",
    "中文 产品",
    "🚀",
    '{braces} $meta["x"]',
    "semi; DROP TABLE x; --",
)


def _vec(rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal(DIM).astype(np.float32)


def _corpus() -> list[VectorRecord]:
    rng = np.random.default_rng(5)
    records: list[VectorRecord] = []
    for i, attack in enumerate(ATTACKS):
        records.append(
            VectorRecord(
                id=attack,  # attack as the id
                vector=_vec(rng),
                content=attack,
                metadata={"product_id": attack, "category_id": ATTACKS[-1 - i]},
                full_doc_id=attack,
            )
        )
    records += [
        VectorRecord(id="plain-p1", vector=_vec(rng), metadata={"product_id": "p1"}),
        VectorRecord(id="plain-p2", vector=_vec(rng), metadata={"product_id": ["p2", "p3"]}),
        VectorRecord(id="unknown", vector=_vec(rng)),
        VectorRecord(
            id="encoded",
            vector=_vec(rng),
            file_path="product_id:p1:category:crm:source:x<SEP>product_id:%:category:_:source:y",
        ),
    ]
    return records


@pytest.fixture
async def loaded(milvus_index_factory: Any) -> tuple[Any, VectorOracle, list[VectorRecord]]:
    index = milvus_index_factory("entities", DIM, -1.0)
    records = _corpus()
    await index.upsert(records)
    oracle = VectorOracle(DIM, -1.0)
    oracle.upsert(records)
    return index, oracle, records


def _expected(records: list[VectorRecord], scope: QueryScope) -> set[str]:
    return {r.id for r in records if prefilter_match(scope, record_scope_values(r))}


# NUL can be stored (ids, metadata) but is no valid scope value on any backend (PostgreSQL
# cannot hold it in text): QueryScope refuses it, see test_nul_is_no_scope_value.
SCOPE_ATTACKS = tuple(a for a in ATTACKS if "\x00" not in a)


def test_nul_is_no_scope_value() -> None:
    from hexrag.core.errors import InvalidScope

    for attack in ATTACKS:
        if "\x00" in attack:
            with pytest.raises(InvalidScope, match="NUL"):
                QueryScope(product_id=attack)


@pytest.mark.parametrize("attack", SCOPE_ATTACKS)
async def test_attack_scope_values_neither_error_nor_widen(
    loaded: tuple[Any, VectorOracle, list[VectorRecord]], attack: str
) -> None:
    index, oracle, records = loaded
    q = records[0].vector
    for scope in (
        QueryScope(product_id=attack),
        QueryScope(category_id=attack),
        QueryScope(doc_ids=attack),
        QueryScope(product_id=[attack, "p1"], category_id=attack),
    ):
        hits = await index.query(q, len(records) + 5, scope=scope)
        expected = _expected(records, scope)
        assert {h.id for h in hits} == expected, f"scope {scope!r}"
        # The attack value admits its own record and the unknowns, never everything.
        assert expected != {r.id for r in records}
        check_hits(hits, oracle, q, len(records) + 5, scope=scope, tol=1e-4)


async def test_each_attack_admits_exactly_its_own_record(
    loaded: tuple[Any, VectorOracle, list[VectorRecord]],
) -> None:
    index, _, records = loaded
    for attack in SCOPE_ATTACKS:
        hits = await index.query(records[0].vector, 100, scope=QueryScope(product_id=attack))
        known = {h.id for h in hits if h.record.metadata.get("product_id") is not None}
        assert known == {attack}, attack


async def test_attack_ids_get_and_get_vectors_in_one_call(
    loaded: tuple[Any, VectorOracle, list[VectorRecord]],
) -> None:
    index, _, records = loaded
    request = [*reversed(ATTACKS), 'missing" or "1"=="1', "unknown"]
    got = await index.get(request)
    by_id = {r.id: r for r in records}
    for rid, actual in zip(request, got, strict=True):
        if rid in by_id:
            assert_same_record(actual, by_id[rid])
        else:
            assert actual is None
    vectors = await index.get_vectors(["') or (1==1", '" or 1==1 or "', "nope') or ('1"])
    assert set(vectors) == {"') or (1==1", '" or 1==1 or "'}


@pytest.mark.parametrize("victim", ['"] or id != ["', "') or (1==1", "\\", "%", 'nope" or "1"=="1'])
async def test_delete_with_attack_ids_removes_only_that_id(
    loaded: tuple[Any, VectorOracle, list[VectorRecord]], victim: str
) -> None:
    index, _, records = loaded
    await index.delete([victim])
    expected = len(records) - (1 if victim in {r.id for r in records} else 0)
    assert await index.count() == expected
    remaining = await index.get([r.id for r in records])
    assert [g.id for g in remaining if g is not None] == [r.id for r in records if r.id != victim]
