"""MilvusVectorIndex behaviour beyond the port contract, on real Milvus Lite.

Collection lifecycle (lazy creation, reopening, foreign collections), exactness when more
candidates tie than the search slack, the from_uri convenience path and driver-error
translation.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np
import pytest

from hexrag.adapters.milvus import MilvusVectorIndex
from hexrag.core.errors import (
    BackendTimeout,
    BackendUnavailable,
    ConfigurationError,
    NotFound,
)
from hexrag.core.model import QueryScope, VectorRecord
from hexrag.core.reference.oracle import VectorOracle
from hexrag.testing._helpers import assert_same_record, check_hits
from tests.services import milvus as service
from tests.services.milvus import StallingProxy, grpc_address

# The shared service fixtures, registered in this module.
milvus_uri = service.milvus_uri
milvus_client = service.milvus_client
milvus_collection = service.milvus_collection
milvus_index_factory = service.milvus_index_factory

pytestmark = pytest.mark.backend("milvus")

DIM = 8


def _basis(*weights: tuple[int, float]) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    for i, w in weights:
        v[i] = w
    return v


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# ---- construction ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"namespace": "nodes"},
        {"collection": "1starts-with-digit"},
        {"collection": "has-dash"},
        {"collection": ""},
        {"dim": 0},
        {"dim": True},
        {"cosine_threshold": float("nan")},
        {"index_type": "DISKANN"},
        {"timeout": 0},
    ],
)
def test_bad_options_are_configuration_errors(
    milvus_client: Any,
    options: dict[str, Any],
) -> None:
    kwargs: dict[str, Any] = {
        "collection": "fine_name",
        "namespace": "entities",
        "dim": DIM,
        **options,
    }
    with pytest.raises(ConfigurationError):
        MilvusVectorIndex(milvus_client, **kwargs)


async def test_construction_and_from_uri_open_nothing(
    milvus_client: Any,
    milvus_collection: str,
) -> None:
    """Constructing creates no collection; from_uri does not even connect."""
    MilvusVectorIndex(milvus_client, collection=milvus_collection, namespace="chunks", dim=DIM)
    assert not milvus_client.has_collection(milvus_collection)
    index = MilvusVectorIndex.from_uri(
        f"http://127.0.0.1:{_free_port()}", namespace="chunks", dim=DIM, timeout=2
    )
    assert index.collection == "hexrag_chunks"
    with pytest.raises(BackendUnavailable) as info:
        await index.count()
    assert info.value.backend == "milvus"
    assert "127.0.0.1" in str(info.value) and "running" in str(info.value)


async def test_from_uri_on_the_lite_file(
    milvus_uri: str,
    milvus_client: Any,
    milvus_collection: str,
) -> None:
    """from_uri on the test Milvus (a Lite file: pymilvus reuses the running Lite server)."""
    index = MilvusVectorIndex.from_uri(
        milvus_uri, collection=milvus_collection, namespace="entities", dim=DIM
    )
    try:
        await index.upsert([VectorRecord(id="a", vector=_basis((0, 1.0)))])
        assert await index.count() == 1
        assert milvus_client.query(milvus_collection, filter='id == "a"', output_fields=["id"])
    finally:
        await index.close()
    assert milvus_client.has_collection(milvus_collection)  # closing left the server running


@pytest.mark.parametrize("uri", ["/no/such/dir/x.db", "ftp://example.org/milvus"])
async def test_from_uri_bad_address_is_a_configuration_error(uri: str) -> None:
    index = MilvusVectorIndex.from_uri(uri, namespace="entities", dim=DIM)
    with pytest.raises(ConfigurationError, match="Milvus"):
        await index.count()


# ---- collection lifecycle ---------------------------------------------------------------


async def test_collection_has_the_explicit_schema(
    milvus_index_factory: Any,
    milvus_client: Any,
) -> None:
    index = milvus_index_factory("relationships", DIM, 0.2)
    await index.count()
    info = milvus_client.describe_collection(index.collection)
    fields = {f["name"]: f for f in info["fields"]}
    assert info.get("enable_dynamic_field") in (False, None)
    assert fields["id"].get("is_primary") is True
    assert fields["vector"]["params"]["dim"] == DIM
    from pymilvus import DataType

    for name in ("product_ids", "category_ids", "doc_ids", "chunk_ids"):
        assert fields[name]["type"] == DataType.ARRAY
        assert fields[name]["element_type"] == DataType.VARCHAR
    for name in ("metadata", "source_id_json"):
        assert fields[name]["type"] == DataType.JSON
    for name in ("created_at", "content", "file_path", "source_id", "entity_name"):
        assert fields[name].get("nullable") is True
    assert info["consistency_level_name"] == "Strong" or info.get("consistency_level") == 0
    index_info = milvus_client.describe_index(index.collection, "vector")
    assert index_info["metric_type"] == "COSINE"
    assert index_info["index_type"] == "FLAT"


async def test_reopening_an_existing_collection(
    milvus_index_factory: Any,
    milvus_client: Any,
) -> None:
    first = milvus_index_factory("entities", DIM, -1.0)
    rec = VectorRecord(id="keep", vector=_basis((0, 1.0)), content="c", source_id=["x"])
    await first.upsert([rec])
    again = MilvusVectorIndex(
        milvus_client,
        collection=first.collection,
        namespace="entities",
        dim=DIM,
        cosine_threshold=-1.0,
    )
    assert await again.count() == 1
    assert_same_record((await again.get(["keep"]))[0], rec)


async def test_existing_collection_with_another_dim_is_refused(
    milvus_index_factory: Any,
    milvus_client: Any,
) -> None:
    first = milvus_index_factory("entities", DIM, 0.2)
    await first.count()
    other = MilvusVectorIndex(
        milvus_client, collection=first.collection, namespace="entities", dim=DIM * 2
    )
    with pytest.raises(ConfigurationError, match=f"dim {DIM}"):
        await other.count()


async def test_foreign_collection_is_refused(
    milvus_client: Any,
    milvus_collection: str,
) -> None:
    """A collection with LightRAG's schema (no scope arrays) is not silently misread."""
    milvus_client.create_collection(milvus_collection, dimension=DIM, metric_type="COSINE")
    index = MilvusVectorIndex(
        milvus_client, collection=milvus_collection, namespace="entities", dim=DIM
    )
    with pytest.raises(ConfigurationError, match="lacks the field"):
        await index.query(_basis((0, 1.0)), 3)


async def test_collection_with_another_metric_is_refused(
    milvus_index_factory: Any,
    milvus_client: Any,
) -> None:
    first = milvus_index_factory("entities", DIM, 0.2)
    await first.count()
    milvus_client.release_collection(first.collection)
    milvus_client.drop_index(first.collection, "vector")
    params = milvus_client.prepare_index_params()
    params.add_index(field_name="vector", index_type="FLAT", metric_type="L2")
    milvus_client.create_index(first.collection, params, sync=False)
    other = MilvusVectorIndex(
        milvus_client, collection=first.collection, namespace="entities", dim=DIM
    )
    with pytest.raises(ConfigurationError, match="COSINE"):
        await other.count()


async def test_dropped_collection_is_not_found_then_recreated(
    milvus_index_factory: Any,
    milvus_client: Any,
) -> None:
    index = milvus_index_factory("chunks", DIM, 0.2)
    await index.upsert([VectorRecord(id="a", vector=_basis((0, 1.0)))])
    milvus_client.drop_collection(index.collection)
    with pytest.raises(NotFound):
        await index.count()
    assert await index.count() == 0  # created again on the next call


# ---- ranking exactness ------------------------------------------------------------------


@pytest.mark.parametrize("top_k", [1, 3, 17, 40])
async def test_more_ties_than_the_search_slack(milvus_index_factory: Any, top_k: int) -> None:
    """With 70 tied candidates Milvus' own cut is arbitrary; the adapter still returns the
    smallest ids (it widens the search when the slack is exhausted)."""
    index = milvus_index_factory("entities", DIM, 0.2)
    tied = [VectorRecord(id=f"t{i:03d}", vector=_basis((0, 1.0), (1, 1.0))) for i in range(70)]
    rng = np.random.default_rng(1)
    rng.shuffle(tied)  # type: ignore[arg-type]
    await index.upsert(tied)
    hits = await index.query(_basis((0, 1.0)), top_k)
    assert [h.id for h in hits] == [f"t{i:03d}" for i in range(top_k)]
    assert all(h.score == pytest.approx(2**-0.5) for h in hits)


async def test_default_autoindex_on_lite_is_exact(milvus_index_factory: Any) -> None:
    index = milvus_index_factory("chunks", DIM, 0.0, index_type="AUTOINDEX")
    rng = np.random.default_rng(9)
    records = [
        VectorRecord(
            id=f"r{i}",
            vector=rng.standard_normal(DIM).astype(np.float32),
            metadata={"product_id": f"p{i % 3}"},
        )
        for i in range(200)
    ]
    await index.upsert(records)
    oracle = VectorOracle(DIM, 0.0)
    oracle.upsert(records)
    for scope in (None, QueryScope(product_id="p1")):
        q = rng.standard_normal(DIM).astype(np.float32)
        check_hits(await index.query(q, 25, scope=scope), oracle, q, 25, scope=scope, tol=1e-6)


async def test_concurrent_calls(milvus_index_factory: Any) -> None:
    index = milvus_index_factory("entities", DIM, -1.0)
    rng = np.random.default_rng(4)
    batches = [
        [
            VectorRecord(id=f"b{b}-{i}", vector=rng.standard_normal(DIM).astype(np.float32))
            for i in range(20)
        ]
        for b in range(5)
    ]
    await asyncio.gather(*(index.upsert(batch) for batch in batches))
    counts = await asyncio.gather(*(index.count() for _ in range(5)))
    assert counts == [100] * 5
    results = await asyncio.gather(*(index.query(batch[0].vector, 1) for batch in batches))
    assert [r[0].id for r in results] == [batch[0].id for batch in batches]


# ---- writes that must not happen ------------------------------------------------------


async def test_oversized_field_writes_nothing(milvus_index_factory: Any) -> None:
    index = milvus_index_factory("chunks", DIM, -1.0)
    good = VectorRecord(id="good", vector=_basis((0, 1.0)))
    huge = VectorRecord(id="huge", vector=_basis((1, 1.0)), content="x" * 70_000)
    with pytest.raises(ConfigurationError, match="content"):
        await index.upsert([good, huge])
    assert await index.count() == 0


async def test_query_vector_of_wrong_length(milvus_index_factory: Any) -> None:
    index = milvus_index_factory("chunks", DIM, -1.0)
    with pytest.raises(ConfigurationError, match="dim"):
        await index.query(np.ones(DIM + 1), 3)


# ---- driver errors --------------------------------------------------------------------


async def test_hung_server_becomes_backend_timeout(milvus_uri: str, milvus_collection: str) -> None:
    """A server that stops answering: the call fails after ``timeout`` as BackendTimeout."""
    from pymilvus import MilvusClient

    proxy = StallingProxy(grpc_address(milvus_uri))
    client = MilvusClient(uri=proxy.uri, timeout=10)
    try:
        index = MilvusVectorIndex(
            client, collection=milvus_collection, namespace="entities", dim=DIM, timeout=0.5
        )
        await index.upsert([VectorRecord(id="a", vector=_basis((0, 1.0)))])
        proxy.stalled.set()
        with pytest.raises(BackendTimeout) as info:
            await index.query(_basis((0, 1.0)), 3)
        assert info.value.backend == "milvus"
        assert "0.5 s" in str(info.value) and "timeout=" in str(info.value)
        assert info.value.__cause__ is not None
        proxy.stalled.clear()
        assert [h.id for h in await index.query(_basis((0, 1.0)), 3)] == ["a"]
    finally:
        proxy.close()
        client.close()


async def test_unreachable_server_becomes_backend_unavailable() -> None:
    """Needs no Milvus: nothing listens on the port."""
    pytest.importorskip("pymilvus", reason="pymilvus is not installed")
    index = MilvusVectorIndex.from_uri(
        f"http://127.0.0.1:{_free_port()}",
        collection="unreachable",
        namespace="entities",
        dim=DIM,
        timeout=1,
    )
    for call in (
        index.count(),
        index.get(["a"]),
        index.upsert([VectorRecord(id="a", vector=_basis((0, 1.0)))]),
    ):
        with pytest.raises(BackendUnavailable, match="cannot reach Milvus"):
            await call


# ---- batch-only access ----------------------------------------------------------------


async def test_each_port_method_is_one_client_call(milvus_uri: str, milvus_collection: str) -> None:
    """After the one-off collection setup, every port method makes exactly one call on the
    client, whatever the number of ids."""
    from pymilvus import MilvusClient

    class CountingClient(MilvusClient):  # type: ignore[misc]
        """The real client, recording which public methods the adapter calls."""

        calls: list[str]

        def __getattribute__(self, name: str) -> Any:
            attr = super().__getattribute__(name)
            calls = object.__getattribute__(self, "__dict__").get("calls")
            if calls is not None and not name.startswith("_") and callable(attr):
                calls.append(name)
            return attr

    client = CountingClient(uri=milvus_uri)
    client.calls = []
    try:
        index = MilvusVectorIndex(
            client,
            collection=milvus_collection,
            namespace="chunks",
            dim=DIM,
            cosine_threshold=-1.0,
            index_type="FLAT",
        )
        rng = np.random.default_rng(2)
        records = [
            VectorRecord(id=f"r{i}", vector=rng.standard_normal(DIM).astype(np.float32))
            for i in range(300)
        ]
        ids = [r.id for r in records]
        await index.count()  # collection setup happens here
        q = rng.standard_normal(DIM).astype(np.float32)
        steps: list[tuple[str, Callable[[], Awaitable[object]]]] = [
            ("upsert", lambda: index.upsert(records)),
            ("search", lambda: index.query(q, 50, scope=QueryScope(product_id="p"))),
            ("query", lambda: index.get(ids)),
            ("query", lambda: index.get_vectors(ids)),
            ("query", index.count),
            ("delete", lambda: index.delete(ids)),
        ]
        for method, step in steps:
            client.calls.clear()
            await step()
            assert client.calls == [method]
    finally:
        client.close()
