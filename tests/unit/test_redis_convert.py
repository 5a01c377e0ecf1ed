"""Chunk <-> JSON conversion of the Redis adapter (no server)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hexrag.adapters.redis.convert import (
    CHUNK_FIELDS,
    chunk_from_json,
    chunk_to_json,
    decode_object,
    encode_object,
)
from hexrag.core.errors import BackendError, ConfigurationError
from hexrag.core.model import Chunk
from hexrag.testing import corpus


def test_corpus_chunks_round_trip() -> None:
    for chunk in corpus.chunks():
        text = chunk_to_json(chunk)
        assert chunk_from_json(chunk.id, text) == chunk
        assert chunk_from_json(chunk.id, text.encode("utf-8")) == chunk


def test_flat_lightrag_shape_with_nulls_kept() -> None:
    chunk = Chunk(id="c1", content="x", metadata={"heading": None, "create_time": 5})
    assert json.loads(chunk_to_json(chunk)) == {
        "content": "x",
        "tokens": None,
        "full_doc_id": None,
        "chunk_order_index": None,
        "file_path": None,
        "heading": None,
        "create_time": 5,
    }


def test_reads_a_lightrag_record() -> None:
    raw = json.dumps(
        {
            "tokens": 12,
            "content": "hello",
            "chunk_order_index": 3,
            "full_doc_id": "doc-1",
            "file_path": "a.txt",
            "llm_cache_list": [],
            "create_time": 1,
            "update_time": 2,
            "_id": "chunk-1",
        }
    )
    chunk = chunk_from_json("chunk-1", raw)
    assert chunk == Chunk(
        id="chunk-1",
        content="hello",
        tokens=12,
        full_doc_id="doc-1",
        chunk_order_index=3,
        file_path="a.txt",
        metadata={"llm_cache_list": [], "create_time": 1, "update_time": 2, "_id": "chunk-1"},
    )


def test_missing_core_fields_read_as_none() -> None:
    chunk = chunk_from_json("c", "{}")
    assert (chunk.tokens, chunk.full_doc_id, chunk.chunk_order_index, chunk.file_path) == (
        None,
        None,
        None,
        None,
    )
    assert chunk.metadata == {}


@pytest.mark.parametrize("field", CHUNK_FIELDS)
def test_metadata_cannot_shadow_core_fields(field: str) -> None:
    with pytest.raises(ConfigurationError, match="clash"):
        chunk_to_json(Chunk(id="c", content="x", metadata={field: 1}))


@pytest.mark.parametrize("raw", [b"nope", b"[1]", b"\xff\xfe", b"3"])
def test_decode_rejects_non_objects(raw: bytes) -> None:
    with pytest.raises(BackendError) as info:
        decode_object(raw, key="ws:ns:k")
    assert info.value.backend == "redis"
    assert "ws:ns:k" in str(info.value)


def test_encode_keeps_non_ascii() -> None:
    assert encode_object({"a": "中文 🚀"}) == '{"a":"中文 🚀"}'


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@given(
    content=st.text(),
    tokens=st.none() | st.integers(),
    doc=st.none() | st.text(),
    order=st.none() | st.integers(),
    path=st.none() | st.text(),
    metadata=st.dictionaries(
        st.text().filter(lambda k: k not in CHUNK_FIELDS), _json, max_size=4
    ),
)
def test_round_trip_property(
    content: str,
    tokens: int | None,
    doc: str | None,
    order: int | None,
    path: str | None,
    metadata: dict[str, object],
) -> None:
    chunk = Chunk(
        id="c",
        content=content,
        tokens=tokens,
        full_doc_id=doc,
        chunk_order_index=order,
        file_path=path,
        metadata=metadata,
    )
    assert chunk_from_json("c", chunk_to_json(chunk)) == chunk
