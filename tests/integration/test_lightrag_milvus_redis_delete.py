"""``hexrag delete`` on data LightRAG 1.5.7 built on Milvus Lite + Redis + NetworkX, with its
status rows in ``RedisDocStatusStorage`` or in ``JsonDocStatusStorage``'s file in the working
directory, and LightRAG's own ``adelete_by_doc_id`` as the oracle (issue 21 point 4 on the
Milvus + Redis layout).

LightRAG ingests four documents with its own storage classes (scripted LLM, hashing
embedder, frozen clock) into workspace A; ``hexrag migrate`` copies A into workspace B of the
same Milvus and Redis (an identical copy). ``hexrag documents`` lists LightRAG's status rows
of A; ``hexrag delete`` removes one document from A (no fragments: LightRAG's status row,
recovery rows, chunk tracking and extraction cache drive it) while LightRAG's
``adelete_by_doc_id`` removes it from B. ``hexrag check B --against A`` must then pass (every
section: vectors, graph, chunks, cache, status rows, the five key-value namespaces; golden
queries), and LightRAG's scheduling sidecar of A must equal what LightRAG left in B.
Milvus Lite serves one process at a time, so LightRAG and every hexrag command run in
processes of their own, in turn; the records either deletion rebuilds are stamped at ``NOW``
(LightRAG's ``time`` in its own modules only: gRPC's deadlines keep the real clock).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from hexrag.adapters.memory import HashingEmbedder
from hexrag.devtools.lightrag_data import (
    _quiet_lightrag,
    lightrag_embedding_func,
    register_offline_tiktoken,
    require_lightrag,
)
from hexrag.devtools.scripted_kg import kg_reply
from tests.integration.test_lightrag_kv_delete import DIM, DOCS, NOW

require_lightrag()

pytestmark = [pytest.mark.backend("milvus"), pytest.mark.backend("redis")]

MODEL = "hashemb_v1"
STORAGES = {"kv_storage": "RedisKVStorage", "vector_storage": "MilvusVectorDBStorage",
            "graph_storage": "NetworkXStorage"}


def _lightrag_run(root: Path, ws: str, milvus: str, redis: str, doc_status: str, *,
                  insert: Sequence[tuple[str, str]] = (), delete: str | None = None) -> None:
    """LightRAG with its Milvus, Redis, NetworkX and Redis doc-status classes."""
    register_offline_tiktoken()
    import pymilvus  # noqa: F401  (parses MILVUS_URI at import: before it is set)
    from lightrag import LightRAG
    from lightrag.utils import TiktokenTokenizer

    from hexrag.devtools.lightrag_deploy import lightrag_env

    _quiet_lightrag()

    async def llm(prompt: str, system_prompt: str | None = None,
                  history_messages: list[dict[str, Any]] | None = None, **_: Any) -> str:
        return kg_reply(prompt, system_prompt, history_messages or [])

    if delete is not None:  # the records LightRAG rebuilds are stamped at NOW, as hexrag's
        import lightrag.kg.milvus_impl
        import lightrag.lightrag
        import lightrag.operate

        for module in (lightrag.operate, lightrag.lightrag, lightrag.kg.milvus_impl):
            module.time = _frozen_time()  # type: ignore[attr-defined]

    async def run() -> None:
        rag = LightRAG(
            working_dir=str(root), workspace=ws,
            embedding_func=lightrag_embedding_func(HashingEmbedder(DIM), model_name=MODEL),
            llm_model_func=llm, tokenizer=TiktokenTokenizer("gpt-4o-mini"),
            chunk_token_size=20, chunk_overlap_token_size=4, force_llm_summary_on_merge=8,
            enable_llm_cache=False, enable_llm_cache_for_entity_extract=True, **STORAGES,
            doc_status_storage=doc_status,
        )
        await rag.initialize_storages()
        try:
            for text, name in insert:
                await rag.ainsert(text, file_paths=[name])
            if delete is not None:
                result = await rag.adelete_by_doc_id(delete)
                assert result.status == "success", result
        finally:
            await rag.finalize_storages()

    with lightrag_env({"MILVUS_URI": milvus, "MILVUS_DB_NAME": "", "REDIS_URI": redis},
                      unset=("REDIS_WORKSPACE",)):
        asyncio.run(run())


def _frozen_time() -> Any:
    """The ``time`` module with ``time()`` stopped at ``NOW``, for one module's name ``time``
    (gRPC deadlines keep the real clock)."""
    import types

    names = {n: getattr(time, n) for n in dir(time) if not n.startswith("_")}
    return types.SimpleNamespace(**{**names, "time": lambda: float(NOW)})


def _in_child(root: Path, ws: str, milvus: str, redis: str, doc_status: str,
              **kwargs: Any) -> None:
    """Run :func:`_lightrag_run` in a process of its own (Milvus Lite serves one process at
    a time: LightRAG and each hexrag command open the file in turn)."""
    args = json.dumps([str(root), ws, milvus, redis, doc_status, kwargs])
    code = ("import json, sys; from pathlib import Path\n"
            "from tests.integration.test_lightrag_milvus_redis_delete import _lightrag_run\n"
            "root, ws, milvus, redis, status, kw = json.loads(sys.argv[1])\n"
            "kw['insert'] = [tuple(d) for d in kw.get('insert', [])]\n"
            "_lightrag_run(Path(root), ws, milvus, redis, status, **kw)\n")
    r = subprocess.run([sys.executable, "-c", code, args], capture_output=True, text=True,
                       timeout=600, cwd=str(Path(__file__).resolve().parents[2]),
                       env={"PATH": "/usr/bin:/bin", "HOME": "/tmp"})
    assert r.returncode == 0, r.stderr[-3000:]


def _hexrag_at_now(*args: str) -> subprocess.CompletedProcess[str]:
    """A hexrag command in a process of its own whose ingestion clock reads ``NOW`` (the
    records a deletion rebuilds are stamped as LightRAG's above)."""
    code = ("import sys\nimport hexrag.bootstrap as b\nc = b.compose_ingestor\n"
            f"b.compose_ingestor = lambda *a, **k: c(*a, **{{**k, 'clock': lambda: {NOW}}})\n"
            "from hexrag.cli import app\napp(sys.argv[1:])\n")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=600, cwd=str(Path(__file__).resolve().parents[2]),
                          env={"PATH": "/usr/bin:/bin", "HOME": "/tmp", "COLUMNS": "200"})


def _toml(tmp_path: Path, root: Path, ws: str, milvus: str, redis: str) -> Path:
    path = tmp_path / f"{ws}.toml"
    path.write_text(
        f'layout = "lightrag"\nworkdir = "{root}"\nworkspace = "{ws}"\n'
        f'vector_index = "milvus://{milvus}"\nchunk_store = "{redis}"\ncache = "{redis}"\n'
        f'lightrag_model_name = "{MODEL}"\nembedder = "hashing:{DIM}"\n', encoding="utf-8")
    return path


def _cli(*args: str) -> Any:
    from tests.integration.test_cli_transfer import _cli as run

    return run(*args)


def _status_rows(client: Any, root: Path, ws: str, doc_status: str) -> list[str]:
    """The ids of LightRAG's status rows of ``ws``, where its doc-status class keeps them."""
    if doc_status == "JsonDocStatusStorage":
        path = root / ws / "kv_store_doc_status.json"
        return list(json.loads(path.read_text(encoding="utf-8"))) if path.exists() else []
    return [k.split(":", 1)[1] for k in client.scan_iter(f"{ws}_doc_status:*")]


def _sidecar(client: Any, ws: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key in client.scan_iter(match=f"{ws}_doc_status__sched*", count=1000):
        name = key.split("__sched", 1)[1]
        members = (client.zrange(key, 0, -1) if client.type(key) == "zset"
                   else client.smembers(key))
        if members:
            out[name] = sorted(members)
    return out


@pytest.mark.parametrize("doc_status", ["RedisDocStatusStorage", "JsonDocStatusStorage"])
def test_hexrag_delete_on_lightrag_milvus_redis_equals_lightrags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, doc_status: str
) -> None:
    from redis import Redis

    from tests.services.redis import redis_server_url

    for var in ("FORCE_LLM_SUMMARY_ON_MERGE", "MAX_SOURCE_IDS_PER_ENTITY",
                "MAX_SOURCE_IDS_PER_RELATION", "SOURCE_IDS_LIMIT_METHOD", "MAX_FILE_PATHS"):
        monkeypatch.delenv(var, raising=False)
    milvus = str(tmp_path / "milvus.db")
    redis = redis_server_url()
    root = tmp_path / "lr"
    mine, theirs = ("hx" + uuid.uuid4().hex[:8], "lr" + uuid.uuid4().hex[:8])
    client = Redis.from_url(redis, decode_responses=True)
    try:
        _in_child(root, mine, milvus, redis, doc_status, insert=DOCS)
        ids = sorted(_status_rows(client, root, mine, doc_status))
        assert len(ids) == len(DOCS)
        a, b = (_toml(tmp_path, root, ws, milvus, redis) for ws in (mine, theirs))
        (root / theirs).mkdir(parents=True)
        in_json = doc_status == "JsonDocStatusStorage"
        if in_json:  # the copy's rows go where its LightRAG keeps them: the file
            (root / theirs / "kv_store_doc_status.json").write_text("{}", encoding="utf-8")
        r = _cli("documents", "--stack", str(a), "--json")
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        listed = sorted(json.loads(line)["id"] for line in r.stdout.splitlines()
                        if line.strip().startswith("{"))
        assert listed == ids  # LightRAG's own status rows
        r = _cli("migrate", "--from", str(a), "--to", str(b))
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        doc_id = ids[2]
        _in_child(root, theirs, milvus, redis, doc_status, delete=doc_id)
        r = _hexrag_at_now("delete", doc_id, "--stack", str(a))
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        assert sorted(_status_rows(client, root, mine, doc_status)) == sorted(
            set(ids) - {doc_id})
        assert sorted(_status_rows(client, root, theirs, doc_status)) == sorted(
            set(ids) - {doc_id})
        r = _cli("documents", "--stack", str(a), "--json")
        left = sorted(json.loads(line)["id"] for line in r.stdout.splitlines()
                      if line.strip().startswith("{"))
        assert left == sorted(set(ids) - {doc_id})
        assert _sidecar(client, mine) == _sidecar(client, theirs)
        assert (_sidecar(client, mine) == {}) is in_json  # LightRAG's Redis index, kept true
        r = _cli("check", str(b), "--against", str(a))
        report = json.loads(r.stdout[r.stdout.index("{"):])
        assert r.returncode == 0 and report["ok"], report["mismatches"]
        assert report["queries"] > 0
    finally:
        for ws in (mine, theirs):
            for key in client.scan_iter(f"{ws}_*"):
                client.delete(key)
            for key in client.scan_iter(f"hexrag_{ws}:*"):
                client.delete(key)
        client.close()
