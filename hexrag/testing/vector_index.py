"""Contract tests for :class:`hexrag.ports.VectorIndex`."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import fields, replace
from typing import Any, cast

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hexrag.core.errors import ConfigurationError
from hexrag.core.model import QueryScope, VectorRecord
from hexrag.core.query.pick import score_ids
from hexrag.core.reference.oracle import VectorOracle, cosine, record_scope_values
from hexrag.core.scope import prefilter_match
from hexrag.ports import ScansVectorIndex, ScoresIds, VectorIndex
from hexrag.ports.vector_index import PORT_TRAITS, VectorIndexTraits, traits_of
from hexrag.testing import corpus
from hexrag.testing._guard import ContractGuard
from hexrag.testing._helpers import assert_same_record, check_hits, resolve
from hexrag.testing.scan import check_resume_after_writes, check_scan_basics, collect

VectorIndexFactory = Callable[[str, int, float], "VectorIndex | Awaitable[VectorIndex]"]
"""``(namespace, dim, cosine_threshold) -> VectorIndex`` (or an awaitable of one)."""


class _NoScoring:
    """``index`` without its ``score_ids``: the core then scores :meth:`get_vectors` itself."""

    def __init__(self, index: VectorIndex) -> None:
        self._index = index

    async def get_vectors(self, ids: Any) -> dict[str, np.ndarray]:
        return await self._index.get_vectors(ids)


def _basis(dim: int, *weights: tuple[int, float]) -> np.ndarray:
    v = np.zeros(dim, dtype=np.float32)
    for i, w in weights:
        v[i] = w
    return v


class _VectorIndexBase(ContractGuard):
    """Flags, the fixture to override and helpers shared by the vector-index capability mixins.

    What an index declares about itself (its ``traits``,
    :class:`~hexrag.ports.vector_index.VectorIndexTraits`: threshold rule, tie order, the fields
    and metadata keys it keeps, ``source_id``'s form, a stamped ``created_at``) is read from the
    index each test makes and asserted as declared: expected records are the written ones as
    the index declares it keeps them (the oracle is fed those), the threshold and tie tests
    check the declared rule. An index without ``traits`` is held to the port's own rules.
    """

    # ---- capability flags (class attributes; override in the subclass) ----------------
    dim: int = 16
    """Dimension used by the fixed corpus."""
    score_tolerance: float = 2e-3
    """Allowed |score - exact cosine| (float16 storage needs ~1e-3)."""
    preserves_source_id_form: bool = True
    """``source_id`` comes back in the form it was written (string stays string, list stays list).
    Off: compared as parsed chunk ids."""
    stores_arbitrary_metadata: bool = True
    """Every ``metadata`` key round-trips. Off: only the scope fields are compared."""
    run_property_tests: bool = True
    """Run the hypothesis test (random corpora vs the oracle; one fresh index per example)."""
    _traits: VectorIndexTraits = PORT_TRAITS
    """The declared traits of the index the test made last (set by :meth:`_make`)."""

    @pytest.fixture
    def vector_index_factory(self) -> VectorIndexFactory:
        """Override: return ``(namespace, dim, cosine_threshold) -> fresh empty VectorIndex``."""
        raise NotImplementedError("override the vector_index_factory fixture")

    # ---- helpers --------------------------------------------------------------------

    async def _make(
        self,
        factory: VectorIndexFactory,
        namespace: str = "entities",
        dim: int | None = None,
        cosine_threshold: float = 0.2,
    ) -> VectorIndex:
        index: VectorIndex = await resolve(factory(namespace, dim or self.dim, cosine_threshold))
        assert isinstance(index, VectorIndex)
        self._traits = traits_of(index)
        return index

    async def _loaded(
        self, factory: VectorIndexFactory, cosine_threshold: float = 0.2
    ) -> tuple[VectorIndex, VectorOracle, list[VectorRecord]]:
        index = await self._make(factory, cosine_threshold=cosine_threshold)
        records = corpus.vector_records(self.dim)
        await index.upsert(records)
        oracle = VectorOracle(self.dim, cosine_threshold)
        oracle.upsert(self._stored_all(records))
        return index, oracle, records

    def _stored(self, record: VectorRecord) -> VectorRecord:
        """``record`` as the index declares it keeps it: a field it does not keep is ``None``,
        a metadata key it does not keep is dropped (what the oracle and comparisons use)."""
        traits, changes = self._traits, dict[str, Any]()
        if traits.fields is not None:
            for f in fields(VectorRecord):
                if f.name not in ("id", "vector", "metadata") and f.name not in traits.fields:
                    changes[f.name] = None
        if traits.metadata_keys is not None:
            changes["metadata"] = {
                k: v for k, v in record.metadata.items() if k in traits.metadata_keys
            }
        return replace(record, **changes) if changes else record

    def _stored_all(self, records: list[VectorRecord]) -> list[VectorRecord]:
        return [self._stored(r) for r in records]

    def _same(self, actual: VectorRecord | None, expected: VectorRecord, context: str = "") -> None:
        traits = self._traits
        expected = self._stored(expected)
        if traits.stamps_created_at and expected.created_at is None and actual is not None:
            stamped = actual.created_at
            assert isinstance(stamped, int) and abs(stamped - time.time()) < 86_400, (
                f"{expected.id!r}: created_at {stamped!r} is not the write time the index "
                "declares it stamps"
            )
            expected = replace(expected, created_at=stamped)
        assert_same_record(
            actual,
            expected,
            exact_source_id=self.preserves_source_id_form and traits.source_id_as_written,
            full_metadata=self.stores_arbitrary_metadata,
            context=context,
        )

    def _check(self, hits: Any, oracle: VectorOracle, vector: Any, top_k: int, **kw: Any) -> None:
        """:func:`check_hits` with this kit's tolerance and the index's declared tie order."""
        check_hits(hits, oracle, vector, top_k, tol=self.score_tolerance,
                   ties_by_id=self._traits.ties == "id", **kw)


class VectorWriteContract(_VectorIndexBase):
    """Construction properties and writes: upsert, last write wins, bad vectors, batches."""

    # ---- properties -----------------------------------------------------------------

    @pytest.mark.parametrize("namespace", ["entities", "relationships", "chunks"])
    async def test_properties_reflect_construction(
        self, vector_index_factory: VectorIndexFactory, namespace: str
    ) -> None:
        """namespace / dim / cosine_threshold report what the index serves."""
        index = await self._make(vector_index_factory, namespace, 12, 0.35)
        assert index.namespace == namespace
        assert index.dim == 12
        assert index.cosine_threshold == pytest.approx(0.35)

    # ---- upsert -----------------------------------------------------------------------

    async def test_empty_index(self, vector_index_factory: VectorIndexFactory) -> None:
        """An empty index gives ``[]``; count 0; get gives None; get_vectors gives {}."""
        index = await self._make(vector_index_factory, cosine_threshold=-1.0)
        assert await index.query(corpus.query_vectors(self.dim)[0], 10) == []
        assert await index.count() == 0
        assert await index.get(["chunk-1"]) == [None]
        assert await index.get_vectors(["chunk-1"]) == {}

    async def test_upsert_read_your_writes(self, vector_index_factory: VectorIndexFactory) -> None:
        """An upserted record is visible to every later call (read-your-writes)."""
        index, oracle, records = await self._loaded(vector_index_factory, cosine_threshold=-1.0)
        assert await index.count() == len(records)
        got = await index.get([r.id for r in records])
        for actual, expected in zip(got, records, strict=True):
            self._same(actual, expected)
        vectors = await index.get_vectors([r.id for r in records])
        assert set(vectors) == {r.id for r in records}
        for r in records:
            hits = await index.query(r.vector, 1)  # type: ignore[arg-type]
            self._check(hits, oracle, r.vector, 1, context=r.id)

    async def test_upsert_is_idempotent(self, vector_index_factory: VectorIndexFactory) -> None:
        """Upserting the same records twice stores them once."""
        index, _, records = await self._loaded(vector_index_factory)
        await index.upsert(records)
        await index.upsert(records[:3])
        assert await index.count() == len(records)
        for actual, expected in zip(await index.get([r.id for r in records]), records, strict=True):
            self._same(actual, expected)

    async def test_last_write_wins_across_batches(
        self, vector_index_factory: VectorIndexFactory
    ) -> None:
        """Insert or replace by id: a later upsert replaces every field and the vector (but
        ``created_at`` where the index declares it keeps the first one)."""
        index, oracle, records = await self._loaded(vector_index_factory, cosine_threshold=-1.0)
        target = records[4]
        new_vec = -np.asarray(target.vector, dtype=np.float32)
        updated = VectorRecord(
            id=target.id,
            vector=new_vec,
            entity_name="renamed é",
            content="replaced content 中文",
            source_id="chunk-10",
            file_path=corpus.P1_FILE_PATH,
            created_at=42,
            metadata={"product_id": "p9"},
        )
        await index.upsert([updated])
        if self._traits.keeps_first_created_at:
            updated = replace(updated, created_at=target.created_at)
        oracle.upsert([self._stored(updated)])
        assert await index.count() == len(records)
        self._same((await index.get([target.id]))[0], updated)
        got = (await index.get_vectors([target.id]))[target.id]
        assert cosine(got, new_vec) > 1 - self.score_tolerance
        hits = await index.query(new_vec, 3)
        self._check(hits, oracle, new_vec, 3)
        assert hits[0].id == target.id

    async def test_last_write_wins_within_a_batch(
        self, vector_index_factory: VectorIndexFactory
    ) -> None:
        """The last write of an id wins, also inside one batch."""
        index = await self._make(vector_index_factory, cosine_threshold=-1.0)
        first = VectorRecord(id="dup", vector=_basis(self.dim, (0, 1.0)), content="first")
        second = VectorRecord(id="dup", vector=_basis(self.dim, (1, 2.0)), content="second")
        await index.upsert([first, second])
        assert await index.count() == 1
        self._same((await index.get(["dup"]))[0], second)
        hits = await index.query(_basis(self.dim, (1, 1.0)), 5)
        assert [h.id for h in hits] == ["dup"]
        assert hits[0].score == pytest.approx(1.0, abs=self.score_tolerance)

    @pytest.mark.parametrize(
        "bad",
        [
            pytest.param(lambda dim: np.ones(dim + 1, dtype=np.float32), id="too-long"),
            pytest.param(lambda dim: np.ones(dim - 1, dtype=np.float32), id="too-short"),
            pytest.param(lambda dim: None, id="missing"),
        ],
    )
    async def test_bad_vector_raises_and_writes_nothing(
        self, vector_index_factory: VectorIndexFactory, bad: Callable[[int], Any]
    ) -> None:
        """A vector not of length dim raises ConfigurationError and nothing is written."""
        index = await self._make(vector_index_factory, cosine_threshold=-1.0)
        keep = VectorRecord(id="keep", vector=_basis(self.dim, (0, 1.0)), content="old")
        await index.upsert([keep])
        batch = [
            VectorRecord(id="new-good", vector=_basis(self.dim, (1, 1.0))),
            replace(keep, content="new", vector=_basis(self.dim, (2, 1.0))),
            VectorRecord(id="new-bad", vector=bad(self.dim)),
        ]
        with pytest.raises(ConfigurationError):
            await index.upsert(batch)
        assert await index.count() == 1
        assert await index.get(["new-good", "new-bad"]) == [None, None]
        self._same((await index.get(["keep"]))[0], keep)
        hits = await index.query(_basis(self.dim, (0, 1.0)), 5)
        assert [h.id for h in hits] == ["keep"]
        assert hits[0].score == pytest.approx(1.0, abs=self.score_tolerance)

    async def test_large_batch(self, vector_index_factory: VectorIndexFactory) -> None:
        """Batches of hundreds of ids work for upsert, get, get_vectors and delete."""
        index = await self._make(vector_index_factory, cosine_threshold=-1.0)
        rng = np.random.default_rng(3)
        vecs = rng.standard_normal((600, self.dim)).astype(np.float32)
        records = [VectorRecord(id=f"bulk-{i:04d}", vector=vecs[i]) for i in range(600)]
        await index.upsert(records)
        assert await index.count() == 600
        ids = [r.id for r in records]
        assert [g.id if g else None for g in await index.get(ids)] == ids
        assert set(await index.get_vectors(ids)) == set(ids)
        await index.delete(ids[:550])
        assert await index.count() == 50
        oracle = VectorOracle(self.dim, -1.0)
        oracle.upsert(self._stored_all(records[550:]))
        self._check(await index.query(vecs[0], 60), oracle, vecs[0], 60)

class VectorQueryContract(_VectorIndexBase):
    """Search: the oracle's hits, threshold, ties, scope pre-filtering, stored fields."""

    # ---- query ------------------------------------------------------------------------

    @pytest.mark.parametrize("threshold", [-1.0, 0.2])
    async def test_query_matches_oracle_for_every_scope(
        self, vector_index_factory: VectorIndexFactory, threshold: float
    ) -> None:
        """top_k best first; threshold; scope pre-filter; ties by id (checked vs the oracle)."""
        index, oracle, _ = await self._loaded(vector_index_factory, cosine_threshold=threshold)
        for qi, q in enumerate(corpus.query_vectors(self.dim)):
            for scope in corpus.SCOPES:
                for top_k in (1, 5, 100):
                    hits = await index.query(q, top_k, scope=scope)
                    self._check(
                        hits,
                        oracle,
                        q,
                        top_k,
                        scope=scope,
                        context=f"query {qi}, scope {scope!r}, top_k {top_k}",
                    )

    async def test_query_vector_need_not_be_normalised(
        self, vector_index_factory: VectorIndexFactory
    ) -> None:
        """The query vector need not be normalised: scaling it changes nothing."""
        index, oracle, _ = await self._loaded(vector_index_factory, cosine_threshold=-1.0)
        q = corpus.query_vectors(self.dim)[1]
        for factor in (0.01, 1.0, 7.5):
            scaled = await index.query(q * np.float32(factor), 8)
            self._check(scaled, oracle, q, 8, context=f"x{factor}")

    async def test_query_accepts_a_sequence_of_floats(
        self, vector_index_factory: VectorIndexFactory
    ) -> None:
        """``vector`` may be a plain sequence of floats."""
        index, oracle, _ = await self._loaded(vector_index_factory, cosine_threshold=-1.0)
        q = corpus.query_vectors(self.dim)[2]
        hits = await index.query([float(x) for x in q], 5)
        self._check(hits, oracle, q, 5)

    async def test_score_is_cosine_higher_is_better(
        self, vector_index_factory: VectorIndexFactory
    ) -> None:
        """score is the cosine similarity, higher is better, in [-1, 1] (a declared strict
        threshold of -1.0 drops the exact opposite)."""
        index = await self._make(vector_index_factory, cosine_threshold=-1.0)
        d = self.dim
        await index.upsert(
            [
                VectorRecord(id="same", vector=_basis(d, (0, 3.0))),
                VectorRecord(id="diag", vector=_basis(d, (0, 1.0), (1, 1.0), (2, 1.0), (3, 1.0))),
                VectorRecord(id="orth", vector=_basis(d, (1, 5.0))),
                VectorRecord(id="opposite", vector=_basis(d, (0, -2.0))),
            ]
        )
        hits = await index.query(_basis(d, (0, 0.5)), 10)
        ids, expected = ["same", "diag", "orth", "opposite"], [1.0, 0.5, 0.0, -1.0]
        if self._traits.threshold == "strict":
            ids, expected = ids[:3], expected[:3]
        assert [h.id for h in hits] == ids
        for h, want in zip(hits, expected, strict=True):
            assert h.score == pytest.approx(want, abs=self.score_tolerance)
            assert -1.0 <= h.score <= 1.0

    async def test_threshold_is_inclusive(self, vector_index_factory: VectorIndexFactory) -> None:
        """Only records with ``score >= cosine_threshold`` are returned (boundary included);
        with a declared strict threshold only ``score > cosine_threshold`` (boundary left out)."""
        index = await self._make(vector_index_factory, cosine_threshold=0.5)
        d = self.dim
        await index.upsert(
            [
                # cosine exactly 0.5 (exactly representable in float16/32/64)
                VectorRecord(id="at", vector=_basis(d, (0, 1.0), (1, 1.0), (2, 1.0), (3, 1.0))),
                # cosine 1/sqrt(4.21) ~ 0.487
                VectorRecord(id="below", vector=_basis(d, (0, 1.0), (1, 1.0), (2, 1.0), (3, 1.1))),
                VectorRecord(id="above", vector=_basis(d, (0, 1.0), (1, 0.5))),
            ]
        )
        hits = await index.query(_basis(d, (0, 2.0)), 10)
        strict = self._traits.threshold == "strict"
        assert [h.id for h in hits] == (["above"] if strict else ["above", "at"])

    async def test_fewer_than_top_k_when_threshold_excludes(
        self, vector_index_factory: VectorIndexFactory
    ) -> None:
        """So fewer than top_k may come back."""
        index, oracle, records = await self._loaded(vector_index_factory, cosine_threshold=0.2)
        q = corpus.as_float32(records[0].vector)  # type: ignore[arg-type]
        exact = oracle.scores(q)
        assert sum(s >= 0.2 for s in exact.values()) < len(records)  # the case is real
        hits = await index.query(q, len(records) + 10)
        self._check(hits, oracle, q, len(records) + 10)
        assert len(hits) < len(records)

    async def test_ties_broken_by_id_ascending(
        self, vector_index_factory: VectorIndexFactory
    ) -> None:
        """Ties on score are broken by id, ascending (code-point order), also at the top_k cut.

        An index declaring the backend's tie order keeps the tied records together, best first,
        with one score: which of them make the cut is the backend's choice."""
        index = await self._make(vector_index_factory, cosine_threshold=-1.0)
        d = self.dim
        tied = ["chunk-2", "chunk-10", "é", "a", "chunk-1", "Z", "B", "中文", "🚀", "xchunk-1"]
        await index.upsert([VectorRecord(id=t, vector=_basis(d, (0, 1.0), (1, 1.0))) for t in tied])
        await index.upsert(
            [
                VectorRecord(id="zz-best", vector=_basis(d, (0, 1.0))),
                VectorRecord(id="0-worst", vector=_basis(d, (1, 1.0))),
            ]
        )
        q = _basis(d, (0, 1.0))
        ordered = sorted(tied)  # Python str order is code-point order
        if self._traits.ties == "backend":
            cut = await index.query(q, 4)
            whole = await index.query(q, 20)
            assert [h.id for h in cut][:1] == ["zz-best"] and len(cut) == 4
            assert set(h.id for h in cut[1:]) <= set(tied)
            ids = [h.id for h in whole]
            assert ids[0] == "zz-best" and ids[-1] == "0-worst" and len(ids) == len(tied) + 2
            assert sorted(ids[1:-1]) == ordered
            assert len({h.score for h in whole[1:-1]} | {h.score for h in cut[1:]}) == 1
            return
        hits = await index.query(q, 4)
        assert [h.id for h in hits] == ["zz-best", *ordered[:3]]
        hits = await index.query(q, 20)
        assert [h.id for h in hits] == ["zz-best", *ordered, "0-worst"]

    async def test_scope_filters_before_ranking(
        self, vector_index_factory: VectorIndexFactory
    ) -> None:
        """scope pre-filters before ranking, so top_k counts admitted records (the excluded
        records name their product in metadata, or in file_path when the index declares it keeps
        no product metadata)."""
        index = await self._make(vector_index_factory, cosine_threshold=-1.0)
        d = self.dim
        q = _basis(d, (0, 1.0))
        keys = self._traits.metadata_keys
        where: dict[str, Any] = (
            {"metadata": {"product_id": "p2"}}
            if keys is None or "product_id" in keys
            else {"file_path": "product_id:p2:category:crm:source:out"}
        )
        close = [
            VectorRecord(id=f"out-{i}", vector=_basis(d, (0, 1.0), (1, 0.01 * i)), **where)
            for i in range(12)
        ]
        far = [
            VectorRecord(
                id=f"in-{i}",
                vector=_basis(d, (0, 1.0), (1, 1.0 + i)),
                file_path=corpus.P1_FILE_PATH,
            )
            for i in range(3)
        ]
        await index.upsert(close + far)
        scope = QueryScope(product_id="p1")
        hits = await index.query(q, 3, scope=scope)
        assert [h.id for h in hits] == ["in-0", "in-1", "in-2"]
        oracle = VectorOracle(d, -1.0)
        oracle.upsert(self._stored_all(close + far))
        self._check(hits, oracle, q, 3, scope=scope)

    async def test_scope_excludes_only_on_a_known_contradicting_field(
        self, vector_index_factory: VectorIndexFactory
    ) -> None:
        """Excluded only when a field it knows (first-class metadata, else its encoded
        file_path) contradicts the scope; unknown fields pass; multi-product records match each
        product; scope values are literals, never patterns. Fields and metadata keys the
        index declares it does not keep are unknown to it (a probe they alone decide is left
        out)."""
        index, _, written = await self._loaded(vector_index_factory, cosine_threshold=-1.0)
        records = self._stored_all(written)
        keeps_all = self._traits.fields is None and self._traits.metadata_keys is None
        all_ids = {r.id for r in records}
        unknown = {r.id for r in records if not record_scope_values(r)["product_id"]}
        assert unknown, "corpus lacks records without a product"
        hits = await index.query(
            corpus.query_vectors(self.dim)[0], len(records), scope=QueryScope(product_id="p1")
        )
        assert unknown <= {h.id for h in hits}, "a record without a product must pass"
        products = ("p1", "p2", "p%", "p_", 'p"or 1==1', "p'q\\x", "产品-é")
        probes = [
            *(QueryScope(product_id=product) for product in products),
            QueryScope(category_id="crm", product_id="p2"),
            QueryScope(doc_ids=["doc-2"]),
        ]
        multi = next(r.id for r in records if r.file_path == corpus.MULTI_PRODUCT_FILE_PATH)
        contradicted = next(
            r.id
            for r in written
            if r.metadata.get("product_id") == "p2" and r.file_path == corpus.P1_FILE_PATH
        )
        biting = 0
        for scope in probes:
            expected = {r.id for r in records if prefilter_match(scope, record_scope_values(r))}
            assert expected != all_ids or not keeps_all, f"probe {scope!r} excludes nothing"
            biting += expected != all_ids
            hits = await index.query(corpus.query_vectors(self.dim)[0], len(records), scope=scope)
            assert {h.id for h in hits} == expected, f"scope {scope!r}"
            if scope.product_id in (("p1",), ("p2",)):
                assert multi in expected
            if scope.product_id == ("p1",) and keeps_all:
                assert contradicted not in expected
        assert biting >= 5, f"only {biting} scope probes exclude a record"

    @pytest.mark.parametrize("scope", [None, QueryScope()], ids=["none", "empty"])
    async def test_no_or_empty_scope_filters_nothing(
        self, vector_index_factory: VectorIndexFactory, scope: QueryScope | None
    ) -> None:
        """None or an empty scope filters nothing."""
        index, _, records = await self._loaded(vector_index_factory, cosine_threshold=-1.0)
        hits = await index.query(corpus.query_vectors(self.dim)[0], len(records) + 5, scope=scope)
        assert {h.id for h in hits} == {r.id for r in records}

    async def test_hits_carry_every_stored_field(
        self, vector_index_factory: VectorIndexFactory
    ) -> None:
        """Returned records carry every stored field except that vector may be None."""
        index, _, records = await self._loaded(vector_index_factory, cosine_threshold=-1.0)
        hits = await index.query(corpus.query_vectors(self.dim)[3], len(records))
        assert len(hits) == len(records)
        by_id = {r.id: r for r in records}
        for h in hits:
            self._same(h.record, by_id[h.id], context="query hit")
            if h.record.vector is not None:
                assert cosine(h.record.vector, by_id[h.id].vector) > 1 - self.score_tolerance  # type: ignore[arg-type]

    async def test_none_fields_stay_none(self, vector_index_factory: VectorIndexFactory) -> None:
        """A record with only an id and a vector comes back with every field None/empty."""
        index = await self._make(vector_index_factory, cosine_threshold=-1.0)
        bare = VectorRecord(id="bare", vector=_basis(self.dim, (0, 1.0)))
        empty = VectorRecord(
            id="empty-strings", vector=_basis(self.dim, (1, 1.0)), content="", entity_name=""
        )
        await index.upsert([bare, empty])
        got = await index.get(["bare", "empty-strings"])
        self._same(got[0], bare)
        self._same(got[1], empty)

class VectorReadContract(_VectorIndexBase):
    """Reads by id, stored vectors, scoring, deletes, counts, namespaces."""

    # ---- get / get_vectors / delete / count --------------------------------------------

    async def test_get_in_request_order(self, vector_index_factory: VectorIndexFactory) -> None:
        """Records by id, in request order, None for a missing id (no exception)."""
        index, _, records = await self._loaded(vector_index_factory)
        by_id = {r.id: r for r in records}
        request = ["chunk-10", "missing", "chunk-1", "B", "a", "chunk-10", "chunk-", "CHUNK-1"]
        got = await index.get(request)
        assert len(got) == len(request)
        for rid, actual in zip(request, got, strict=True):
            if rid in by_id:
                self._same(actual, by_id[rid])
            else:
                assert actual is None, rid
        assert await index.get([]) == []

    async def test_get_vectors(self, vector_index_factory: VectorIndexFactory) -> None:
        """float32, 1-D, the direction of the upserted vector; missing ids absent; duplicates
        once."""
        index, _, records = await self._loaded(vector_index_factory)
        wanted = [records[0].id, "missing", records[1].id, records[0].id]
        got = await index.get_vectors(wanted)
        assert set(got) == {records[0].id, records[1].id}
        for r in records[:2]:
            v = got[r.id]
            assert isinstance(v, np.ndarray)
            assert v.dtype == np.float32
            assert v.shape == (self.dim,)
            assert cosine(v, r.vector) > 1 - self.score_tolerance  # type: ignore[arg-type]
            norm, raw = float(np.linalg.norm(v)), float(np.linalg.norm(r.vector))  # type: ignore[arg-type]
            assert norm == pytest.approx(raw, rel=1e-2) or norm == pytest.approx(1.0, rel=1e-2)
        assert await index.get_vectors([]) == {}

    async def test_score_ids_equals_scoring_the_fetched_vectors(
        self, vector_index_factory: VectorIndexFactory
    ) -> None:
        """The optional :class:`~hexrag.ports.ScoresIds` capability, when offered: aligned with
        the request, NaN for a missing id, and the numbers the core computes from
        :meth:`get_vectors` (what it falls back to without the capability)."""
        index, _, records = await self._loaded(vector_index_factory)
        q = corpus.query_vectors(self.dim)[0]
        wanted = [records[2].id, "missing", records[0].id, records[2].id, records[7].id]
        expected = await score_ids(cast(VectorIndex, _NoScoring(index)), wanted, q)
        assert np.isnan(expected[1]) and not np.isnan(np.delete(expected, 1)).any()
        if not isinstance(index, ScoresIds):
            return  # the core's fallback (checked just above) is what queries use
        got = await index.score_ids(wanted, q)
        assert isinstance(got, np.ndarray) and got.dtype == np.float64
        assert got.shape == (len(wanted),)
        assert np.isnan(got[1])
        np.testing.assert_allclose(np.delete(got, 1), np.delete(expected, 1), rtol=1e-9)
        assert (await index.score_ids([], q)).shape == (0,)

    async def test_delete(self, vector_index_factory: VectorIndexFactory) -> None:
        """Remove records by id; unknown ids are ignored; count follows."""
        index, oracle, records = await self._loaded(vector_index_factory, cosine_threshold=-1.0)
        victims = [records[1].id, records[5].id, "never-existed", records[1].id]
        await index.delete(victims)
        oracle.delete(victims)
        assert await index.count() == len(records) - 2
        assert await index.get([records[1].id, records[5].id]) == [None, None]
        assert await index.get_vectors([records[1].id]) == {}
        for q in corpus.query_vectors(self.dim):
            self._check(await index.query(q, 100), oracle, q, 100)
        await index.delete([])
        await index.delete(["never-existed"])
        assert await index.count() == len(records) - 2

    async def test_delete_then_reupsert(self, vector_index_factory: VectorIndexFactory) -> None:
        """A deleted id can be written again."""
        index, oracle, records = await self._loaded(vector_index_factory, cosine_threshold=-1.0)
        await index.delete([records[0].id])
        again = replace(records[0], content="again")
        await index.upsert([again])
        oracle.upsert([self._stored(again)])
        assert await index.count() == len(records)
        self._same((await index.get([again.id]))[0], again)
        q = corpus.query_vectors(self.dim)[0]
        self._check(await index.query(q, 100), oracle, q, 100)

    async def test_delete_everything(self, vector_index_factory: VectorIndexFactory) -> None:
        """Deleting every record empties the index."""
        index, _, records = await self._loaded(vector_index_factory, cosine_threshold=-1.0)
        await index.delete([r.id for r in records])
        assert await index.count() == 0
        assert await index.query(corpus.query_vectors(self.dim)[0], 5) == []

    async def test_namespaces_are_independent(
        self, vector_index_factory: VectorIndexFactory
    ) -> None:
        """One instance serves one namespace: writes to one index are invisible to another."""
        entities = await self._make(vector_index_factory, "entities", cosine_threshold=-1.0)
        chunks = await self._make(vector_index_factory, "chunks", cosine_threshold=-1.0)
        await entities.upsert([VectorRecord(id="shared-id", vector=_basis(self.dim, (0, 1.0)))])
        await chunks.upsert(
            [VectorRecord(id="shared-id", vector=_basis(self.dim, (1, 1.0)), content="chunk")]
        )
        await chunks.upsert([VectorRecord(id="only-chunks", vector=_basis(self.dim, (2, 1.0)))])
        assert await entities.count() == 1
        assert await chunks.count() == 2
        assert (await entities.get(["shared-id"]))[0].content is None  # type: ignore[union-attr]
        assert await entities.get(["only-chunks"]) == [None]
        await chunks.delete(["shared-id"])
        assert await entities.count() == 1

class VectorPropertyContract(_VectorIndexBase):
    """Random corpora against the oracle (hypothesis)."""

    # ---- property test --------------------------------------------------------------

    @settings(
        max_examples=20,
        deadline=None,
        database=None,
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.too_slow,
            HealthCheck.differing_executors,  # one method, many backend subclasses
        ],
    )
    @given(
        seed=st.integers(0, 2**31 - 1),
        n=st.integers(1, 30),
        top_k=st.integers(1, 40),
        threshold=st.sampled_from([-1.0, -0.1, 0.0, 0.2, 0.45]),
        scope_index=st.integers(0, len(corpus.SCOPES) - 1),
        delete_fraction=st.sampled_from([0.0, 0.3]),
    )
    async def test_random_corpora_match_oracle(
        self,
        vector_index_factory: VectorIndexFactory,
        seed: int,
        n: int,
        top_k: int,
        threshold: float,
        scope_index: int,
        delete_fraction: float,
    ) -> None:
        """Invariant: on any corpus (duplicate ids, rewrites, deletes), query == oracle."""
        if not self.run_property_tests:
            pytest.skip("run_property_tests is off")
        rng = np.random.default_rng(seed)
        dim = 8
        index = await self._make(vector_index_factory, "chunks", dim, threshold)
        oracle = VectorOracle(dim, threshold)
        first = corpus.random_vector_records(rng, n, dim)
        second = corpus.random_vector_records(rng, max(1, n // 2), dim)
        for batch in (first, second):
            await index.upsert(batch)
            oracle.upsert(self._stored_all(batch))
        ids = sorted(oracle.records)
        victims = [i for i in ids if rng.random() < delete_fraction]
        await index.delete(victims)
        oracle.delete(victims)
        assert await index.count() == len(oracle.records)
        scope = corpus.SCOPES[scope_index]
        q = rng.standard_normal(dim).astype(np.float32)
        hits = await index.query(q, top_k, scope=scope)
        self._check(hits, oracle, q, top_k, scope=scope)
        got = await index.get(ids)
        for rid, actual in zip(ids, got, strict=True):
            expected = oracle.stored(rid)
            if expected is None:
                assert actual is None
            else:
                self._same(actual, expected)

class VectorScanContract(_VectorIndexBase):
    """The scan capability (:mod:`hexrag.ports.scan`)."""

    # ---- scan (hexrag.ports.scan) --------------------------------------------------------

    async def test_scan_lists_every_record_with_its_vector(
        self, vector_index_factory: VectorIndexFactory
    ) -> None:
        """``scan_records`` pages list every record once, with every field ``get`` returns and
        its stored vector (float32, 1-D, the upserted direction); an empty index gives one
        empty last page; a bad limit is InvalidQuery."""
        empty = await self._make(vector_index_factory)
        assert isinstance(empty, ScansVectorIndex), "VectorIndex must offer scan_records"
        page = await empty.scan_records(None, limit=10)
        assert page.items == [] and page.cursor is None
        index, _, records = await self._loaded(vector_index_factory)
        assert isinstance(index, ScansVectorIndex)
        await check_scan_basics(index.scan_records, lambda r: r.id, {r.id for r in records})
        items, _ = await collect(index.scan_records, limit=4)
        by_id = {r.id: r for r in records}
        for item in items:
            self._same(item, by_id[item.id], context="scan")
            vec = item.vector
            assert isinstance(vec, np.ndarray), f"{item.id}: scanned vector is {type(vec)}"
            assert vec.dtype == np.float32 and vec.ndim == 1 and vec.shape[0] == self.dim
            assert cosine(vec, by_id[item.id].vector) > 1 - self.score_tolerance, item.id  # type: ignore[arg-type]

    async def test_scan_resumes_after_writes(
        self, vector_index_factory: VectorIndexFactory
    ) -> None:
        """A scan resumed from a saved cursor after upserts and deletes lists every record
        present for the whole scan, none twice."""
        index, _, records = await self._loaded(vector_index_factory)
        assert isinstance(index, ScansVectorIndex)
        extra = [
            replace(r, id=f"scan-new-{i}")
            for i, r in enumerate(
                corpus.random_vector_records(np.random.default_rng(99), 5, self.dim)
            )
        ]

        async def write(seen: set[Any]) -> tuple[set[Any], set[Any]]:
            gone = {next(iter(seen)), *[r.id for r in records if r.id not in seen][:2]}
            await index.delete(sorted(gone))
            await index.upsert(extra)
            return {r.id for r in extra}, gone

        await check_resume_after_writes(
            index.scan_records, lambda r: r.id, {r.id for r in records}, write
        )



class VectorIndexContract(
    VectorWriteContract,
    VectorQueryContract,
    VectorReadContract,
    VectorPropertyContract,
    VectorScanContract,
):
    """Subclass in a ``Test*`` class and override the ``vector_index_factory`` fixture.

    The factory returns a **fresh, empty** index each call (use a unique collection / table /
    key prefix per call, and drop them at fixture teardown); it may return an awaitable. The
    tests come from the capability mixins (writes, queries, reads, property tests, scan), each
    usable alone for a backend that offers only part of the port's capabilities.
    """
