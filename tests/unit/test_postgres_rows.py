"""Row <-> domain conversion of the PostgreSQL adapters, without a server.

A "server row" here is what asyncpg hands back for the adapters' SELECTs: JSON columns read as
``::text`` (so strings), ``text[]`` as lists, vectors as ``::real[]`` (lists of floats).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from hexrag.adapters.postgres._rows import (
    chunk_to_row,
    decode_json,
    entity_to_row,
    relation_to_row,
    row_to_chunk,
    row_to_entity,
    row_to_relation,
    row_to_vector_record,
    rows_document,
    vector_array,
    vector_record_to_row,
    vector_text,
)
from hexrag.core.errors import ConfigurationError
from hexrag.core.model import Chunk, Entity, Relation, VectorRecord
from hexrag.core.query.source_ids import parse_source_ids
from hexrag.core.scope import scope_values
from hexrag.testing import corpus

_JSON_COLUMNS = ("metadata", "source_id", "properties")


def as_server_row(row: dict[str, Any]) -> dict[str, Any]:
    """What the adapters' SELECT returns for a written row (JSON columns as text)."""
    out = dict(json.loads(rows_document([row]))[0])  # the JSON document the server parses
    for col in _JSON_COLUMNS:
        if col in out:
            out[col] = None if out[col] is None else json.dumps(out[col])
    if "vector" in out:  # pgvector text -> real[]
        out["vector"] = [float(x) for x in out["vector"].strip("[]").split(",")]
    return out


@pytest.mark.parametrize("record", corpus.vector_records(16), ids=lambda r: repr(r.id))
def test_vector_record_round_trip(record: VectorRecord) -> None:
    row = vector_record_to_row(record, dim=16)
    back = row_to_vector_record(as_server_row(row))
    for name in (
        "id",
        "entity_name",
        "src_id",
        "tgt_id",
        "content",
        "source_id",
        "file_path",
        "full_doc_id",
        "created_at",
    ):
        assert getattr(back, name) == getattr(record, name), name
    assert dict(back.metadata) == json.loads(json.dumps(dict(record.metadata)))
    assert isinstance(back.vector, np.ndarray) and back.vector.dtype == np.float32
    np.testing.assert_array_equal(back.vector, np.asarray(record.vector, dtype=np.float32))


@pytest.mark.parametrize("record", corpus.vector_records(16), ids=lambda r: repr(r.id))
def test_vector_row_derived_columns_use_the_core_parsers(record: VectorRecord) -> None:
    row = vector_record_to_row(record, dim=16)
    assert row["chunk_ids"] == parse_source_ids(record.source_id)
    values = scope_values(record.metadata, record.file_path, record.full_doc_id)
    assert set(row["product_ids"]) == values["product_id"]
    assert set(row["category_ids"]) == values["category_id"]
    assert set(row["doc_ids"]) == values["doc_ids"]


def test_seed001_array_text_source_id() -> None:
    """Seed 001: ``{chunk-…}`` array text is stored raw and parsed into ``chunk_ids``."""
    sid = "{" + corpus.SEED_001_CHUNK + "}"
    record = VectorRecord(id="r", vector=np.ones(4), src_id="Airtable", tgt_id="n8n", source_id=sid)
    row = vector_record_to_row(record, dim=4)
    assert row["chunk_ids"] == [corpus.SEED_001_CHUNK]
    assert row_to_vector_record(as_server_row(row)).source_id == sid


def test_query_hits_may_omit_the_vector() -> None:
    row = as_server_row(vector_record_to_row(VectorRecord(id="x", vector=[1.0, 2.0]), dim=2))
    assert row_to_vector_record(row, with_vector=False).vector is None


def test_none_and_empty_strings_stay_apart() -> None:
    bare = VectorRecord(id="bare", vector=[1.0, 0.0])
    empty = VectorRecord(id="empty", vector=[1.0, 0.0], content="", entity_name="")
    got_bare = row_to_vector_record(as_server_row(vector_record_to_row(bare, dim=2)))
    got_empty = row_to_vector_record(as_server_row(vector_record_to_row(empty, dim=2)))
    assert got_bare.content is None and got_bare.entity_name is None
    assert got_bare.source_id is None and dict(got_bare.metadata) == {}
    assert got_empty.content == "" and got_empty.entity_name == ""


@pytest.mark.parametrize(
    "vector",
    [None, [1.0, 2.0, 3.0], [1.0], [float("nan"), 1.0], [float("inf"), 1.0], [1e39, 1.0]],
    ids=["missing", "long", "short", "nan", "inf", "float32-overflow"],
)
def test_bad_vectors_are_configuration_errors(vector: Any) -> None:
    with pytest.raises(ConfigurationError, match="postgres"):
        vector_record_to_row(VectorRecord(id="bad", vector=vector), dim=2)


def test_vector_text_parses_back_to_the_same_float32() -> None:
    rng = np.random.default_rng(0)
    v = (rng.standard_normal(64) * 10.0 ** rng.integers(-30, 30, size=64)).astype(np.float32)
    text = vector_text(vector_array(v, dim=64, record_id="v"))
    parsed = np.asarray([np.float32(float(x)) for x in text.strip("[]").split(",")])
    np.testing.assert_array_equal(parsed, v)


def test_non_json_metadata_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="JSON"):
        vector_record_to_row(VectorRecord(id="x", vector=[1.0], metadata={"s": {1, 2}}), dim=1)
    with pytest.raises(ConfigurationError, match="JSON"):
        chunk_to_row(Chunk(id="c", content="x", metadata={"f": float("nan")}))


@pytest.mark.parametrize("entity", corpus.entities(), ids=lambda e: repr(e.name))
def test_entity_round_trip(entity: Entity) -> None:
    assert row_to_entity(as_server_row(entity_to_row(entity))) == entity


@pytest.mark.parametrize("relation", corpus.relations(), ids=lambda r: repr(r.id))
def test_relation_round_trip(relation: Relation) -> None:
    row = relation_to_row(relation)
    assert row["chunk_ids"] == parse_source_ids(relation.source_id)
    assert (row["pa"], row["pb"]) == relation.pair
    assert row_to_relation(as_server_row(row)) == relation


def test_missing_endpoint_node_row_is_a_bare_entity() -> None:
    """A node created for a missing endpoint has only its name (all other columns NULL/{})."""
    row = {
        "name": "ghost",
        "entity_type": None,
        "description": None,
        "source_id": None,
        "file_path": None,
        "created_at": None,
        "properties": "{}",
    }
    assert row_to_entity(row) == Entity(name="ghost")


@pytest.mark.parametrize("chunk", corpus.chunks(), ids=lambda c: repr(c.id))
def test_chunk_round_trip(chunk: Chunk) -> None:
    assert row_to_chunk(as_server_row(chunk_to_row(chunk))) == chunk


def test_decode_json_accepts_already_decoded_values() -> None:
    """A pool with a JSON codec registered hands back Python objects; both forms work."""
    assert decode_json('{"a": [1, null]}') == {"a": [1, None]}
    assert decode_json({"a": 1}) == {"a": 1}
    assert decode_json(None) is None


def test_empty_ids_are_refused() -> None:
    with pytest.raises(ConfigurationError):
        relation_to_row(Relation(id="", src_id="a", tgt_id="b"))
    with pytest.raises(ConfigurationError):
        entity_to_row(Entity(name=""))
    with pytest.raises(ConfigurationError):
        chunk_to_row(Chunk(id="", content="x"))
