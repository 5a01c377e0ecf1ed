"""Copies into LightRAG's own key-value layouts verify when exact, and fail when damaged.

A LightRAG 1.5.7 working directory (every document-side file: ``doc_status`` and the five
key-value namespaces) is migrated with ``hexrag migrate`` into a stack TOML with
``layout = "lightrag"`` on PostgreSQL (LightRAG's ``LIGHTRAG_DOC_FULL`` ...
``LIGHTRAG_RELATION_CHUNKS`` tables) and on Redis (``<ws>_<namespace>:<key>``). PostgreSQL
reads a record back with ``id`` instead of ``_id``, with a ``create_time`` where LightRAG's
JSON row had none and without ``full_docs``' times; the copy is exact all the same, and
must verify (``hexrag migrate`` and ``hexrag check A --against B`` exit 0). Then one value
field changed (one chunk id of an ``entity_chunks`` row) and one row missing (a
``full_relations`` row) must each fail, naming the section.
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

pytestmark = [pytest.mark.backend("postgres"), pytest.mark.backend("redis")]

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
