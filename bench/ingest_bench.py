"""Ingestion throughput: LightRAG 1.5.7's ``ainsert`` vs hexrag's ingestion, same documents.

Both sides insert the same generated documents into a fresh LightRAG working directory (JSON KV
+ NanoVectorDB + NetworkX for LightRAG; hexrag's working-directory stack, saved in LightRAG's
format at the end) with the same zero-latency scripted LLM
(:func:`hexrag.devtools.scripted_kg.kg_reply`: entities from capitalised words, one gleaning
answer, summaries) and the same hashing embedder, one document after the other. It prints
documents per second, LLM calls and the wall time of each side, and checks that both wrote the
same entities and relations. With ``--postgres`` it also times hexrag ingesting the same
documents into PostgreSQL (pgvector indexes, graph tables, chunk and document stores; the DSN
from ``HEXRAG_POSTGRES_DSN``, else a throwaway ``pgserver`` instance).

Usage::

    python bench/ingest_bench.py --docs 100
    python bench/ingest_bench.py --docs 1000 --words 400
    python bench/ingest_bench.py --docs 1000 --postgres --no-lightrag

Not run in CI.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from hexrag.devtools.scripted_kg import ScriptedKGLLM  # noqa: E402

DIM = 64
NAMES = [
    "Acme", "Zephyr", "Nimbus", "Orion", "Vega", "Lyra", "Atlas", "Nova", "Helix", "Quasar",
    "Mailchimp", "Xero", "Slack", "Zapier", "Stripe", "Europe", "Asia", "Finance", "Sales",
    "Support", "Invoices", "Contacts", "Newsletter", "Inventory", "Payroll", "Audit",
]
VERBS = ["syncs with", "reports to", "exports to", "feeds", "notifies", "reviews", "plans"]


def documents(n: int, words: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        sentences: list[str] = []
        while sum(len(s.split()) for s in sentences) < words:
            a, b = rng.sample(NAMES, 2)
            sentences.append(f"{a} {rng.choice(VERBS)} {b} in case {i}.")
        docs.append(" ".join(sentences))
    return docs


async def lightrag_side(docs: list[str], root: Path) -> tuple[float, int, Path]:
    from hexrag.adapters.memory import HashingEmbedder
    from hexrag.devtools.lightrag_data import (
        _quiet_lightrag,
        lightrag_embedding_func,
        register_offline_tiktoken,
    )
    from hexrag.devtools.scripted_kg import kg_reply

    register_offline_tiktoken()
    from lightrag import LightRAG
    from lightrag.utils import TiktokenTokenizer

    _quiet_lightrag()
    calls = 0

    async def llm(prompt: str, system_prompt: str | None = None,
                  history_messages: list[dict[str, Any]] | None = None, **_: Any) -> str:
        nonlocal calls
        calls += 1
        return kg_reply(prompt, system_prompt, history_messages or [])

    workspace = "lr" + uuid.uuid4().hex[:6]
    rag = LightRAG(
        working_dir=str(root), workspace=workspace,
        embedding_func=lightrag_embedding_func(HashingEmbedder(DIM)), llm_model_func=llm,
        tokenizer=TiktokenTokenizer("gpt-4o-mini"), enable_llm_cache=False,
        enable_llm_cache_for_entity_extract=False,
    )
    await rag.initialize_storages()
    t0 = time.perf_counter()
    try:
        for doc in docs:
            await rag.ainsert(doc)
    finally:
        await rag.finalize_storages()
    return time.perf_counter() - t0, calls, root / workspace


async def hexrag_side(docs: list[str], root: Path) -> tuple[float, int, Path]:
    from hexrag import bootstrap
    from hexrag.adapters.memory import HashingEmbedder

    out = root / "hexrag"
    app = await bootstrap.open(out, create_dim=DIM, embedder=HashingEmbedder(DIM))
    llm = ScriptedKGLLM()
    ingestor = app.ingestor(llm)
    t0 = time.perf_counter()
    await app.record_model()
    for doc in docs:
        await ingestor.ingest_text(doc)
    await app.commit()
    await app.aclose()
    return time.perf_counter() - t0, llm.calls, out


async def postgres_side(docs: list[str], dsn: str) -> tuple[float, int, tuple[int, int]]:
    import asyncpg

    from hexrag import bootstrap
    from hexrag.config import StackConfig

    prefix = "bench" + uuid.uuid4().hex[:8]
    app = await bootstrap.open(StackConfig(
        vector_index=dsn, graph_store=dsn, chunk_store=dsn, cache="none", namespace=prefix,
        embedder=f"hashing:{DIM}", llm="none", reranker="none"))
    try:
        await app.record_model()
        llm = ScriptedKGLLM()
        ingestor = app.ingestor(llm)
        t0 = time.perf_counter()
        for doc in docs:
            await ingestor.ingest_text(doc)
        seconds = time.perf_counter() - t0
        shape = (await app.graph.count_nodes(), await app.graph.count_edges())
        conn = await asyncpg.connect(dsn)
        try:
            for table in await conn.fetch(
                "SELECT tablename FROM pg_tables WHERE tablename LIKE $1", prefix + "%"):
                await conn.execute(f'DROP TABLE IF EXISTS "{table["tablename"]}" CASCADE')
            await conn.execute(f'DROP SEQUENCE IF EXISTS "{prefix}_doc_seq"')
        finally:
            await conn.close()
        return seconds, llm.calls, shape
    finally:
        await app.aclose()


def _graph_shape(path: Path) -> tuple[int, int]:
    from hexrag import bootstrap

    app = asyncio.run(bootstrap.open(path, read_only=True))
    return len(list(app.graph.iter_nodes())), len(list(app.graph.iter_edges()))  # type: ignore[attr-defined]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=100)
    ap.add_argument("--words", type=int, default=300, help="words per document")
    ap.add_argument("--postgres", action="store_true",
                    help="also time hexrag ingesting into PostgreSQL")
    ap.add_argument("--no-lightrag", action="store_true",
                    help="skip the working-directory comparison with LightRAG")
    args = ap.parse_args()
    docs = documents(args.docs, args.words)
    rows: list[tuple[str, float, int, tuple[int, int]]] = []
    if not args.no_lightrag:
        with tempfile.TemporaryDirectory() as tmp:
            lr_s, lr_calls, lr_dir = asyncio.run(lightrag_side(docs, Path(tmp) / "lr"))
            hx_s, hx_calls, hx_dir = asyncio.run(hexrag_side(docs, Path(tmp)))
            lr_shape, hx_shape = _graph_shape(lr_dir), _graph_shape(hx_dir)
        rows += [("LightRAG 1.5.7, working dir", lr_s, lr_calls, lr_shape),
                 ("hexrag, working dir", hx_s, hx_calls, hx_shape)]
    if args.postgres:
        import os

        from tests.services.postgres import postgres_dsn

        dsn = os.environ.get("HEXRAG_POSTGRES_DSN") or postgres_dsn()
        pg_s, pg_calls, pg_shape = asyncio.run(postgres_side(docs, dsn))
        rows.append(("hexrag, PostgreSQL", pg_s, pg_calls, pg_shape))
    print(f"{args.docs} documents of ~{args.words} words, zero-latency scripted LLM")
    print()
    print("| side | seconds | documents/s | LLM calls | nodes, edges |")
    print("|---|---:|---:|---:|---|")
    for name, secs, calls, shape in rows:
        print(f"| {name} | {secs:.2f} | {args.docs / secs:.1f} | {calls} | {shape} |")
    if not args.no_lightrag:
        print()
        print(f"hexrag / LightRAG throughput: {lr_s / hx_s:.1f}x; "
              f"same graph: {lr_shape == hx_shape}")


if __name__ == "__main__":
    main()
