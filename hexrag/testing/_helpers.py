"""Assertion helpers shared by the contract base classes."""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import fields, replace
from typing import Any, TypeVar

from hexrag.core.model import QueryScope, VectorHit, VectorRecord
from hexrag.core.query.source_ids import parse_source_ids
from hexrag.core.reference.oracle import VectorOracle, record_scope_values

T = TypeVar("T")


async def resolve(value: T | Any) -> T:
    """``await value`` when a factory returned an awaitable, else ``value``."""
    if inspect.isawaitable(value):
        return await value  # type: ignore[no-any-return]
    return value  # type: ignore[no-any-return]


def check_hits(
    hits: Sequence[VectorHit],
    oracle: VectorOracle,
    vector: Any,
    top_k: int,
    *,
    scope: QueryScope | None = None,
    tol: float = 2e-3,
    context: str = "",
    ties_by_id: bool = True,
) -> None:
    """Assert that ``hits`` is a correct answer of the port, allowing for storage precision.

    Exact: every hit is admitted by the scope, no id repeats, the hits are ordered by their own
    ``(-score, id)`` (by their own score alone when ``ties_by_id`` is off: an index that
    declares the backend's tie order) and reach the threshold. Within ``tol`` of the oracle's
    float64 cosine: each score, the number of hits, and that no better admitted record was left
    out (so the inclusive and the strict threshold rule both pass here; the contract's
    threshold tests tell them apart).
    """
    where = f" [{context}]" if context else ""
    thr = oracle.cosine_threshold
    exact = oracle.scores(vector, scope)
    ids = [h.id for h in hits]
    assert len(ids) == len(set(ids)), f"duplicate ids in hits{where}: {ids}"
    assert len(hits) <= top_k, f"{len(hits)} hits for top_k={top_k}{where}"
    for h in hits:
        assert isinstance(h, VectorHit), f"not a VectorHit: {h!r}{where}"
        assert h.id in exact, (
            f"hit {h.id!r} is not admitted by scope {scope!r} (or was never stored){where}"
        )
        assert abs(h.score - exact[h.id]) <= tol, (
            f"score of {h.id!r} is {h.score}, expected cosine {exact[h.id]:.6f}{where}"
        )
        assert -1.0 - 1e-6 <= h.score <= 1.0 + 1e-6, f"score out of [-1, 1]: {h.score}{where}"
        assert h.score >= thr - 1e-6, (
            f"hit {h.id!r} score {h.score} below cosine_threshold {thr}{where}"
        )
    for prev, nxt in itertools.pairwise(hits):
        ok = prev.score > nxt.score or (
            prev.score == nxt.score and (prev.id < nxt.id or not ties_by_id)
        )
        assert ok, (
            f"hits not ordered by (-score, id): {prev.id!r}={prev.score} before "
            f"{nxt.id!r}={nxt.score}{where}"
        )
    n_sure = sum(1 for s in exact.values() if s >= thr + tol)
    n_maybe = sum(1 for s in exact.values() if s >= thr - tol)
    assert min(top_k, n_sure) <= len(hits) <= min(top_k, n_maybe), (
        f"{len(hits)} hits; expected between {min(top_k, n_sure)} and {min(top_k, n_maybe)}"
        f" (top_k={top_k}, threshold={thr}){where}"
    )
    returned = set(ids)
    floor = min((exact[i] for i in ids), default=thr)
    for rid, s in exact.items():
        if rid in returned:
            continue
        if len(hits) == top_k:
            assert s <= floor + 2 * tol, (
                f"{rid!r} (cosine {s:.6f}) should rank above the last hit{where}"
            )
        else:
            assert s < thr + tol, (
                f"{rid!r} (cosine {s:.6f} >= threshold {thr}) is missing{where}"
            )


def assert_same_record(
    actual: VectorRecord | None,
    expected: VectorRecord,
    *,
    exact_source_id: bool = True,
    full_metadata: bool = True,
    context: str = "",
) -> None:
    """Compare two records field by field, ignoring ``vector``.

    ``exact_source_id=False`` compares ``source_id`` as parsed ids; ``full_metadata=False``
    compares ``metadata`` by its scope values only.
    """
    where = f" [{context}]" if context else ""
    assert actual is not None, f"record {expected.id!r} is missing{where}"
    assert isinstance(actual, VectorRecord), f"not a VectorRecord: {actual!r}{where}"
    for f in fields(VectorRecord):
        name = f.name
        if name == "vector":
            continue
        got, want = getattr(actual, name), getattr(expected, name)
        if name == "source_id" and not exact_source_id:
            got, want = parse_source_ids(got), parse_source_ids(want)
        if name == "metadata":
            if full_metadata:
                assert dict(got) == dict(want), (
                    f"metadata of {expected.id!r}: {got!r} != {want!r}{where}"
                )
            else:
                assert record_scope_values(actual) == record_scope_values(expected), (
                    f"scope metadata of {expected.id!r}: {got!r} vs {want!r}{where}"
                )
            continue
        assert got == want, (
            f"field {name} of {expected.id!r}: {got!r} != {want!r}{where}"
        )


def without_vector(record: VectorRecord) -> VectorRecord:
    """``record`` with ``vector=None``."""
    return replace(record, vector=None)


def mapping_equal(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Deep equality of two mappings (``dict`` vs other Mapping types tolerated)."""
    return dict(a) == dict(b)
