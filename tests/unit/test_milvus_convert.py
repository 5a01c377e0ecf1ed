"""The Milvus row <-> VectorRecord conversion and the exact re-scoring, without a server."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hexrag.adapters.milvus._convert import (
    ARRAY_CAPACITY,
    ARRAY_ELEMENT_MAX_BYTES,
    OUTPUT_FIELDS,
    VARCHAR_LIMITS,
    cosine_scores,
    record_to_row,
    row_to_record,
)
from hexrag.core.errors import ConfigurationError
from hexrag.core.model import VectorRecord
from hexrag.core.query.source_ids import parse_source_ids
from hexrag.core.reference.oracle import cosine
from hexrag.core.scope import scope_values
from hexrag.testing import corpus
from hexrag.testing._helpers import assert_same_record

DIM = 16


def _through_milvus(row: dict[str, Any]) -> dict[str, Any]:
    """What Milvus hands back for a row: JSON columns decoded, vector as float32 values."""
    back: dict[str, Any] = json.loads(json.dumps(row))
    back["vector"] = [float(np.float32(x)) for x in row["vector"]]
    return back


@pytest.mark.parametrize("record", corpus.vector_records(DIM), ids=lambda r: r.id)
def test_corpus_records_roundtrip(record: VectorRecord) -> None:
    row = record_to_row(record, DIM)
    assert set(row) == set(OUTPUT_FIELDS)
    back = row_to_record(_through_milvus(row), with_vector=True)
    assert_same_record(back, record)
    assert isinstance(back.vector, np.ndarray) and back.vector.dtype == np.float32
    np.testing.assert_array_equal(back.vector, np.asarray(record.vector, dtype=np.float32))
    assert row_to_record(_through_milvus(row), with_vector=False).vector is None


@pytest.mark.parametrize("record", corpus.vector_records(DIM), ids=lambda r: r.id)
def test_derived_columns(record: VectorRecord) -> None:
    row = record_to_row(record, DIM)
    values = scope_values(record.metadata, record.file_path, record.full_doc_id)
    assert row["product_ids"] == sorted(values["product_id"])
    assert row["category_ids"] == sorted(values["category_id"])
    assert row["doc_ids"] == sorted(values["doc_ids"])
    assert row["chunk_ids"] == parse_source_ids(record.source_id)


def test_source_id_forms() -> None:
    text = record_to_row(VectorRecord(id="a", vector=np.ones(DIM), source_id="c1<SEP>c2"), DIM)
    assert (text["source_id"], text["source_id_json"]) == ("c1<SEP>c2", None)
    listed = record_to_row(VectorRecord(id="a", vector=np.ones(DIM), source_id=["c1", "c2"]), DIM)
    assert (listed["source_id"], listed["source_id_json"]) == (None, ["c1", "c2"])
    assert row_to_record(_through_milvus(listed), with_vector=False).source_id == ["c1", "c2"]
    none = record_to_row(VectorRecord(id="a", vector=np.ones(DIM)), DIM)
    assert (none["source_id"], none["source_id_json"], none["chunk_ids"]) == (None, None, [])


def test_none_stays_none_and_empty_stays_empty() -> None:
    bare = row_to_record(
        _through_milvus(record_to_row(VectorRecord(id="b", vector=np.ones(DIM)), DIM)),
        with_vector=False,
    )
    assert bare == VectorRecord(id="b")
    empty = VectorRecord(id="e", vector=np.ones(DIM), content="", entity_name="", file_path="")
    back = row_to_record(_through_milvus(record_to_row(empty, DIM)), with_vector=False)
    assert (back.content, back.entity_name, back.file_path) == ("", "", "")


@pytest.mark.parametrize(
    "vector", [None, np.ones(DIM - 1), np.ones(DIM + 1), np.ones((2, DIM)), ["x"] * DIM]
)
def test_bad_vectors_are_configuration_errors(vector: object) -> None:
    with pytest.raises(ConfigurationError):
        record_to_row(VectorRecord(id="a", vector=vector), DIM)  # type: ignore[arg-type]


@pytest.mark.parametrize("column", ["id", "entity_name", "content", "file_path", "source_id"])
def test_oversized_varchar_is_refused(column: str) -> None:
    big = "é" * (VARCHAR_LIMITS[column] // 2 + 1)  # 2 bytes per character
    fields = {"id": "a", column: big}
    with pytest.raises(ConfigurationError, match=column):
        record_to_row(VectorRecord(vector=np.ones(DIM), **fields), DIM)  # type: ignore[arg-type]


def test_non_json_metadata_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="metadata"):
        record_to_row(VectorRecord(id="a", vector=np.ones(DIM), metadata={"x": object()}), DIM)
    with pytest.raises(ConfigurationError, match="metadata"):
        record_to_row(VectorRecord(id="a", vector=np.ones(DIM), metadata={"x": float("nan")}), DIM)


def test_bad_ids_and_created_at_are_refused() -> None:
    with pytest.raises(ConfigurationError):
        record_to_row(VectorRecord(id="", vector=np.ones(DIM)), DIM)
    with pytest.raises(ConfigurationError):
        record_to_row(VectorRecord(id="a", vector=np.ones(DIM), created_at=1.5), DIM)  # type: ignore[arg-type]


def test_unstorable_scope_array_becomes_unknown() -> None:
    """Too many or too long values: stored empty, which the pre-filter admits (sound)."""
    many = [f"p{i}" for i in range(ARRAY_CAPACITY + 1)]
    row = record_to_row(
        VectorRecord(
            id="a", vector=np.ones(DIM), metadata={"product_id": many, "category_id": "crm"}
        ),
        DIM,
    )
    assert row["product_ids"] == [] and row["category_ids"] == ["crm"]
    long_value = "x" * (ARRAY_ELEMENT_MAX_BYTES + 1)
    row = record_to_row(
        VectorRecord(id="a", vector=np.ones(DIM), metadata={"product_id": [long_value, "p1"]}),
        DIM,
    )
    assert row["product_ids"] == []
    # ...but the metadata itself round-trips unchanged.
    assert row["metadata"]["product_id"] == [long_value, "p1"]  # type: ignore[index]


def test_chunk_ids_are_capped_not_refused() -> None:
    ids = "<SEP>".join(f"chunk-{i}" for i in range(ARRAY_CAPACITY + 10))
    row = record_to_row(VectorRecord(id="a", vector=np.ones(DIM), source_id=ids), DIM)
    assert len(row["chunk_ids"]) == ARRAY_CAPACITY  # type: ignore[arg-type]
    assert row["source_id"] == ids


# ---- exact scores ---------------------------------------------------------------------

vectors = st.lists(st.floats(-1e3, 1e3, allow_nan=False, width=32), min_size=DIM, max_size=DIM)


@given(st.lists(vectors, min_size=1, max_size=8), vectors)
def test_cosine_scores_match_the_oracle(rows: list[list[float]], query: list[float]) -> None:
    m = np.asarray(rows, dtype=np.float32)
    q = np.asarray(query, dtype=np.float32)
    got = cosine_scores(q, m)
    for i, row in enumerate(m):
        assert got[i] == pytest.approx(cosine(row, q), abs=1e-9)
        assert -1.0 <= got[i] <= 1.0


@given(vectors, st.integers(0, 5))
def test_identical_vectors_score_exactly_one_and_tie(v: list[float], position: int) -> None:
    q = np.asarray(v, dtype=np.float32)
    if not np.any(q):
        return
    m = np.tile(q, (6, 1))
    m[position] = q
    scores = cosine_scores(q, m)
    assert np.all(scores == 1.0)


def test_zero_vectors_score_zero() -> None:
    m = np.stack([np.zeros(DIM), np.ones(DIM)]).astype(np.float32)
    assert list(cosine_scores(np.ones(DIM, dtype=np.float32), m)) == [0.0, 1.0]
    assert list(cosine_scores(np.zeros(DIM, dtype=np.float32), m)) == [0.0, 0.0]
