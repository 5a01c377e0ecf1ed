"""Copies into LightRAG's own key-value layouts verify when exact, and fail when damaged.

A LightRAG 1.5.7 working directory (every document-side file: ``doc_status`` and the five
key-value namespaces) is migrated with ``hexrag migrate`` into a stack TOML with
``layout = "lightrag"`` on PostgreSQL (LightRAG's ``LIGHTRAG_DOC_FULL`` ...
``LIGHTRAG_RELATION_CHUNKS`` tables), on Milvus Lite + Redis (``<ws>_<namespace>:<key>``)
and into another working directory. PostgreSQL
reads a record back with ``id`` instead of ``_id``, with a ``create_time`` where LightRAG's
JSON row had none and without ``full_docs``' times; the copy is exact all the same, and
must verify (``hexrag migrate`` and ``hexrag check A --against B`` exit 0), and LightRAG's
own ``PGKVStorage`` reads the copy's records. Then one value field changed (a chunk id
added to an ``entity_chunks`` row, a ``full_docs`` text or file path) and one row missing
(a ``full_relations`` / ``relation_chunks`` row) must each fail, naming the section; a
record only re-stamped (``create_time`` / ``update_time`` / ``_id``) must not.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from hexrag.devtools.lightrag_data import require_lightrag
from tests.integration.test_cli_transfer import _cli
from tests.integration.test_ingest_lightrag import DIM, _lightrag
from tests.services.redis import redis_server  # noqa: F401

require_lightrag()

pytestmark = [pytest.mark.backend("postgres"), pytest.mark.backend("milvus"),
              pytest.mark.backend("redis")]

KV = ("full_docs", "full_entities", "full_relations", "entity_chunks", "relation_chunks")


def _migrate(original: Path, stack: Path) -> dict[str, object]:
    r = _cli("migrate", "--from", str(original), "--to", str(stack))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    report = json.loads(r.stdout)
    assert report["ok"] is True, report
    digests = report["digests"]
    assert isinstance(digests, dict)
    for section in ("doc_status", *KV):
        got = digests[section]
        assert got["source"] == got["target"] and got["target"]["count"] > 0, section
    return report


def _check(original: Path, stack: Path) -> tuple[int, list[str]]:
    r = _cli("check", str(original), "--against", str(stack))
    assert r.returncode in (0, 1), r.stdout[-3000:] + r.stderr[-3000:]
    report = json.loads(r.stdout)
    assert report["ok"] is (r.returncode == 0)
    return r.returncode, list(report["mismatches"])



def _lightrag_pg_workspace(dsn: str, workspace: str) -> None:
    """LightRAG's own PostgreSQL storages initialised in ``workspace`` (its tables created,
    as a deployment has them; hexrag does not create LightRAG's tables)."""
    import asyncio

    from hexrag.adapters.memory import HashingEmbedder
    from hexrag.devtools.lightrag_pg import init_lightrag_pg, make_lightrag_pg

    async def run() -> None:
        rag = make_lightrag_pg(dsn, HashingEmbedder(DIM), workspace=workspace)
        await init_lightrag_pg(rag, dsn)
        await rag.finalize_storages()

    asyncio.run(run())



def _workspaces_apart(original: Path, stack: Path, ws: str, other: str) -> None:
    """A second copy in another LightRAG workspace of the same servers, one document
    deleted there: the first workspace keeps both (its status rows, key-value rows and
    fragments are its own) and still verifies against the original."""
    toml = stack.with_name("other.toml")
    toml.write_text(stack.read_text().replace(f'workspace = "{ws}"', f'workspace = "{other}"'))
    _migrate(original, toml)
    doc = sorted(_kv_file(original, "doc_status"))[0]
    r = _cli("delete", doc, "--stack", str(toml))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    for where, want in ((toml, 1), (stack, 2)):
        r = _cli("documents", "--stack", str(where), "--json")
        assert r.returncode == 0, r.stderr[-3000:]
        assert len([line for line in r.stdout.splitlines() if line.strip()]) == want, where
    assert _check(original, stack) == (0, [])


def _expect_fail(original: Path, stack: Path, prefix: str) -> None:
    code, mismatches = _check(original, stack)
    assert code == 1 and any(m.startswith(prefix) for m in mismatches), mismatches


def _kv_file(original: Path, namespace: str) -> dict[str, dict[str, object]]:
    data = json.loads((original / f"kv_store_{namespace}.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict) and data
    return data


def test_a_copy_into_lightrag_postgres_tables_verifies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    import asyncpg

    from hexrag.adapters.postgres.lightrag_doc_status import lightrag_doc_status_view
    from hexrag.devtools.lightrag_pg import MODEL_NAME, init_lightrag_pg, make_lightrag_pg
    from tests.services.postgres import postgres_dsn

    original, _ = _lightrag(tmp_path / "lr", monkeypatch, cache=True)
    dsn = postgres_dsn()
    ws = "lrkv" + uuid.uuid4().hex[:6]
    _lightrag_pg_workspace(dsn, ws)
    stack = tmp_path / "pg.toml"
    stack.write_text(
        f'vector_index = "{dsn}"\ngraph_store = "{dsn}"\nchunk_store = "{dsn}"\n'
        f'cache = "{dsn}"\nlayout = "lightrag"\nworkspace = "{ws}"\n'
        f'lightrag_model_name = "{MODEL_NAME}"\nembedder = "hashing:{DIM}"\n',
        encoding="utf-8")
    _migrate(original, stack)
    assert _check(original, stack) == (0, [])
    r = _cli("documents", "--stack", str(stack), "--json")
    assert r.returncode == 0, r.stderr[-3000:]
    listed = [json.loads(line)["id"] for line in r.stdout.splitlines() if line.strip()]
    assert sorted(listed) == sorted(_kv_file(original, "doc_status"))
    _workspaces_apart(original, stack, ws, "other" + ws)

    # LightRAG's own PGKVStorage reads the copy's records as its JSON storage wrote them
    async def lightrag_reads() -> None:
        from hexrag.adapters.memory import HashingEmbedder

        rag = make_lightrag_pg(dsn, HashingEmbedder(DIM), workspace=ws)
        await init_lightrag_pg(rag, dsn)
        try:
            for ns, field in (("full_docs", "content"), ("full_entities", "entity_names"),
                              ("full_relations", "relation_pairs"),
                              ("entity_chunks", "chunk_ids"), ("relation_chunks", "chunk_ids")):
                want = _kv_file(original, ns)
                got = await getattr(rag, ns).get_by_ids(list(want))
                assert [g[field] if g else None for g in got] == [
                    w[field] for w in want.values()], ns
            # and its PGDocStatusStorage sees the documents, as it reads its own rows
            rows = json.loads((original / "kv_store_doc_status.json").read_text())
            assert await rag.doc_status.get_by_ids(list(rows)) == [
                lightrag_doc_status_view(r) for r in rows.values()]
        finally:
            await rag.finalize_storages()

    asyncio.run(lightrag_reads())

    async def sql(statement: str, *args: object) -> str:
        conn = await asyncpg.connect(dsn)
        try:
            return str(await conn.execute(statement, *args))
        finally:
            await conn.close()

    # one value field changed: a chunk id of one entity's chunk list
    entity = next(iter(_kv_file(original, "entity_chunks")))
    assert asyncio.run(sql(
        """UPDATE LIGHTRAG_ENTITY_CHUNKS SET chunk_ids = chunk_ids || '["chunk-x"]'::jsonb
           WHERE workspace = $1 AND id = $2""", ws, entity)) == "UPDATE 1"
    _expect_fail(original, stack, "entity_chunks: same count")
    asyncio.run(sql("""UPDATE LIGHTRAG_ENTITY_CHUNKS SET chunk_ids = chunk_ids - 'chunk-x'
                       WHERE workspace = $1 AND id = $2""", ws, entity))
    # one full_docs text changed
    doc = next(iter(_kv_file(original, "full_docs")))
    asyncio.run(sql("""UPDATE LIGHTRAG_DOC_FULL SET content = content || '!'
                       WHERE workspace = $1 AND id = $2""", ws, doc))
    _expect_fail(original, stack, "full_docs: same count")
    asyncio.run(sql("""UPDATE LIGHTRAG_DOC_FULL SET content = left(content, -1)
                       WHERE workspace = $1 AND id = $2""", ws, doc))
    # a write stamp is no content: restamping every row changes nothing
    asyncio.run(sql("""UPDATE LIGHTRAG_FULL_ENTITIES SET create_time = create_time
                       + interval '1 day', update_time = CURRENT_TIMESTAMP
                       WHERE workspace = $1""", ws))
    assert _check(original, stack) == (0, [])
    # one row missing
    assert asyncio.run(sql("DELETE FROM LIGHTRAG_FULL_RELATIONS WHERE workspace = $1 AND id = $2",
                           ws, doc)) == "DELETE 1"
    _expect_fail(original, stack, "full_relations: 2 records vs 1")


def test_a_copy_into_lightrag_redis_keys_verifies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, redis_server: str  # noqa: F811
) -> None:
    """LightRAG's Milvus + Redis + NetworkX layout: the KV namespaces as
    ``<ws>_<namespace>:<key>`` JSON strings, stored as given."""
    from redis import Redis

    original, _ = _lightrag(tmp_path / "lr", monkeypatch, cache=True)
    ws = "lrkv" + uuid.uuid4().hex[:6]
    stack = tmp_path / "redis.toml"
    stack.write_text(
        f'layout = "lightrag"\nworkdir = "{tmp_path / "graph"}"\nworkspace = "{ws}"\n'
        f'vector_index = "milvus://{tmp_path / "milvus.db"}"\n'
        f'chunk_store = "{redis_server}"\ncache = "{redis_server}"\n'
        f'lightrag_model_name = "hashemb_v1"\nembedder = "hashing:{DIM}"\n', encoding="utf-8")
    _migrate(original, stack)
    r = _cli("documents", "--stack", str(stack), "--json")
    assert r.returncode == 0, r.stderr[-3000:]
    listed = [json.loads(line)["id"] for line in r.stdout.splitlines() if line.strip()]
    assert sorted(listed) == sorted(_kv_file(original, "doc_status"))
    _workspaces_apart(original, stack, ws, "other" + ws)
    client = Redis.from_url(redis_server, decode_responses=True)
    try:
        for ns in KV:  # LightRAG's own key layout, each record as LightRAG's JSON store has it
            want = _kv_file(original, ns)
            got = client.mget([f"{ws}_{ns}:{k}" for k in want])
            assert [json.loads(g) if g else None for g in got] == list(want.values()), ns
        assert _check(original, stack) == (0, [])
        entity = next(iter(_kv_file(original, "entity_chunks")))
        key = f"{ws}_entity_chunks:{entity}"
        kept = client.get(key)
        assert kept is not None
        changed = json.loads(kept)
        changed["chunk_ids"] = [*changed["chunk_ids"], "chunk-x"]
        client.set(key, json.dumps(changed))
        _expect_fail(original, stack, "entity_chunks: same count")
        client.set(key, kept)
        # LightRAG re-stamps _id on read and update_time on write: not content
        restamped = {**json.loads(kept), "update_time": 1, "_id": entity}
        client.set(key, json.dumps(restamped))
        assert _check(original, stack) == (0, [])
        doc = next(iter(_kv_file(original, "full_relations")))
        assert client.delete(f"{ws}_full_relations:{doc}") == 1
        _expect_fail(original, stack, "full_relations: 2 records vs 1")
    finally:
        for k in client.scan_iter(f"{ws}_*"):
            client.delete(k)
        client.close()


def test_a_copy_into_a_working_directory_verifies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LightRAG directory -> directory: every kv file JSON-equal; a changed value or a
    missing row in a kv file fails."""
    original, _ = _lightrag(tmp_path / "lr", monkeypatch, cache=True)
    copy = tmp_path / "copy"
    _migrate(original, copy)
    for ns in ("doc_status", *KV):
        name = f"kv_store_{ns}.json"
        assert json.loads((copy / name).read_text()) == json.loads((original / name).read_text())
    assert _check(original, copy) == (0, [])
    path = copy / "kv_store_full_docs.json"
    kept = path.read_text(encoding="utf-8")
    data = json.loads(kept)
    doc = next(iter(data))
    data[doc]["file_path"] = "elsewhere.txt"
    path.write_text(json.dumps(data), encoding="utf-8")
    _expect_fail(original, copy, "full_docs: same count")
    path.write_text(kept, encoding="utf-8")
    path = copy / "kv_store_relation_chunks.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data.pop(next(iter(data)))
    path.write_text(json.dumps(data), encoding="utf-8")
    _expect_fail(original, copy, "relation_chunks: ")
