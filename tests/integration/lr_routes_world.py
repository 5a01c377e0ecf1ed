"""The shared harness of the LightRAG-route tests: one LightRAG working directory, LightRAG's
own server on a copy of it, and hexrag's server on every stack kind holding the same data.

* :func:`make_base` writes a generated dataset through LightRAG 1.5.7's own storage classes
  (and LightRAG-format ``doc_status`` rows) into ``root/ws``;
* :class:`LightRAGServer` runs LightRAG's ``create_document_routes`` / ``create_graph_routes``
  over a copy (``tests.integration.lightrag_routes_server``, its own process);
* :class:`HexragServer` serves hexrag on a copy of the working directory, on a memory stack or
  on a PostgreSQL stack, the latter two filled by ``hexrag.transfer.migrate_stack`` from
  the working directory (so every kind starts from LightRAG's very records).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from hexrag.adapters.memory import HashingEmbedder
from hexrag.api.limits import ApiSettings
from hexrag.bootstrap import build_stack
from hexrag.config import StackConfig
from hexrag.serving import stack_app
from tests.integration.live import LiveServer, StackInServerLoop

DIM = 32
WS = "ws"
SEP = "<SEP>"
#: doc_status rows written beside the dataset: mostly processed, a few of each other state.
STATUS_CYCLE = ["processed"] * 5 + ["failed", "pending", "processing"]


async def _write(root: Path, n_entities: int) -> None:
    from hexrag.devtools.lightrag_data.dataset import DatasetSpec, generate_dataset
    from hexrag.devtools.lightrag_data.lightrag_side import write_lightrag_workdir

    spec = DatasetSpec(n_entities=n_entities, seed=7)
    await write_lightrag_workdir(generate_dataset(spec), root, HashingEmbedder(DIM),
                                 workspace=WS)


def make_base(root: Path, n_entities: int = 60, extra_docs: int = 0) -> Path:
    """Write the dataset (LightRAG's classes, in a subprocess: LightRAG keeps process-wide
    state) and ``kv_store_doc_status.json`` rows in LightRAG's format; returns ``root``."""
    code = ("import asyncio, sys; from pathlib import Path; "
            "from tests.integration.lr_routes_world import _write; "
            f"asyncio.run(_write(Path(sys.argv[1]), {n_entities}))")
    subprocess.run([sys.executable, "-c", code, str(root)], check=True, timeout=300,
                   cwd=Path(__file__).resolve().parents[2])
    ws = root / WS
    full = json.loads((ws / "kv_store_full_docs.json").read_text())
    chunks = json.loads((ws / "kv_store_text_chunks.json").read_text())
    rows: dict[str, Any] = {}
    # the dataset's documents, and status rows of more (text gone) so that listings page
    docs = sorted(full.items()) + [
        (f"doc-extra{i:03d}", {"content": f"Extra document {i} about " + "Ωmega " * (i % 5),
                               "file_path": f"extra/{(i * 37) % 41:02d}-Éfile.txt"})
        for i in range(extra_docs)]
    for i, (doc_id, doc) in enumerate(docs):
        status = STATUS_CYCLE[i % len(STATUS_CYCLE)]
        ids = sorted(c for c, v in chunks.items() if v.get("full_doc_id") == doc_id)
        rows[doc_id] = {
            "status": status, "content_summary": doc["content"][:100],
            "content_length": len(doc["content"]), "chunks_count": len(ids),
            "chunks_list": ids, "file_path": doc.get("file_path") or "unknown_source",
            "created_at": f"2025-01-{1 + i % 28:02d}T10:00:{i % 60:02d}+00:00",
            "updated_at": f"2025-02-{1 + (i * 7) % 28:02d}T11:{i % 60:02d}:00+00:00",
            "track_id": f"insert_20250101_000000_{i % 3:08d}",
            "error_msg": "extraction failed" if status == "failed" else None,
            "metadata": {"n": i},
        }
    (ws / "kv_store_doc_status.json").write_text(json.dumps(rows, ensure_ascii=False))
    return root


def copy_base(base: Path, to: Path) -> Path:
    """A copy of the working directory ``base`` at ``to``."""
    shutil.copytree(base, to)
    return to


def free_port() -> int:
    """A free loopback port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class LightRAGServer:
    """LightRAG's own routes on ``root/ws`` in a subprocess (stopped by :meth:`stop`)."""

    def __init__(self, root: Path, input_dir: Path, log: Path) -> None:
        port = free_port()
        input_dir.mkdir(parents=True, exist_ok=True)
        self._log = log.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.lightrag_routes_server", str(root), WS,
             str(input_dir), str(DIM), str(port)],
            cwd=Path(__file__).resolve().parents[2], stdout=self._log,
            stderr=subprocess.STDOUT)
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60)
        deadline = time.monotonic() + 120
        while True:
            try:
                if self.client.get("/graph/label/list").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"LightRAG's server did not start: {log.read_text()[-3000:]}")
            time.sleep(0.3)

    def stop(self) -> None:
        """Stop the process (by its own pid)."""
        self.client.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=20)
        self._log.close()



async def _lightrag_pg_tables(dsn: str, workspace: str) -> None:
    """LightRAG's own PostgreSQL storages initialised in ``workspace`` (its tables, as a
    deployment has them: hexrag does not create LightRAG's tables)."""
    from hexrag.devtools.lightrag_pg import init_lightrag_pg, make_lightrag_pg

    rag = make_lightrag_pg(dsn, HashingEmbedder(DIM), workspace=workspace)
    await init_lightrag_pg(rag, dsn)
    await rag.finalize_storages()


class HexragServer:
    """hexrag's server on one stack kind holding the working directory ``workdir``'s data:
    ``"workdir"`` (a copy of it, served in place), ``"memory"``, ``"postgres"`` (hexrag's
    layout, ``dsn``) or ``"pg-lightrag"`` (LightRAG's PostgreSQL tables in a workspace of
    their own, ``layout = "lightrag"``) filled by ``migrate_stack``."""

    def __init__(self, kind: str, workdir: Path, tmp: Path, dsn: str | None = None) -> None:
        self.kind = kind
        self.loop = asyncio.new_event_loop()
        self.stack: Any = None
        self.workdir_root = tmp / f"hx-{kind}"
        copy_base(workdir, self.workdir_root)
        source = StackConfig(workdir=self.workdir_root, workspace=WS,
                             embedder=f"hashing:{DIM}")
        if kind == "workdir":
            self.stack = self.run(build_stack(source, embedder=HashingEmbedder(DIM)))
            self.server = LiveServer(stack_app(self.stack, ApiSettings()))
        elif kind == "memory":
            self.stack = self.run(build_stack(StackConfig(embedder=f"hashing:{DIM}"),
                                              embedder=HashingEmbedder(DIM)))
            self.run(self._migrate(source, self.stack, tmp))
            self.server = LiveServer(stack_app(self.stack, ApiSettings()))
        else:
            assert dsn is not None
            import uuid

            target = StackConfig(vector_index=dsn, graph_store=dsn, chunk_store=dsn, cache=dsn,
                                 namespace="lr" + uuid.uuid4().hex[:8],
                                 embedder=f"hashing:{DIM}")
            if kind == "pg-lightrag":  # LightRAG's own tables, read and written in place
                from hexrag.devtools.lightrag_pg import MODEL_NAME

                workspace = "lrg" + uuid.uuid4().hex[:8]
                self.run(_lightrag_pg_tables(dsn, workspace))
                target = StackConfig(vector_index=dsn, graph_store=dsn, chunk_store=dsn,
                                     cache=dsn, layout="lightrag", workspace=workspace,
                                     lightrag_model_name=MODEL_NAME,
                                     embedder=f"hashing:{DIM}")
            stack = self.run(build_stack(target, embedder=HashingEmbedder(DIM)))
            try:
                self.run(self._migrate(source, stack, tmp))
            finally:
                self.run(stack.aclose())
            self.server = LiveServer(StackInServerLoop(target, ApiSettings(), DIM), lifespan="on")
        self.client = self.server.client

    def run(self, coro: Any) -> Any:
        """Run ``coro`` on this server's test-side loop."""
        return self.loop.run_until_complete(coro)

    async def _migrate(self, source: StackConfig, target: Any, tmp: Path) -> None:
        from hexrag.transfer.migrate import migrate_stack

        src = await build_stack(source, embedder=HashingEmbedder(DIM))
        try:
            await target.record_model()
            await migrate_stack(src.stores, target.stores,
                                state_path=tmp / f"migrate-{self.kind}.json")
        finally:
            await src.aclose()

    def stop(self) -> None:
        """Stop the server and close the stack."""
        self.server.stop()
        if self.stack is not None:
            self.run(self.stack.aclose())
        self.loop.close()


def scrub(value: Any) -> Any:
    """A response with what legitimately differs normalised: ``created_at`` stamps, and
    ``<SEP>``-joined ``source_id`` / ``file_path`` as sorted lists (LightRAG joins merged
    ones in ``set`` order, which changes from process to process)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if k == "created_at" and isinstance(v, int):
                out[k] = "T"
            elif k in ("source_id", "file_path") and isinstance(v, str):
                out[k] = sorted(v.split(SEP))
            else:
                out[k] = scrub(v)
        if isinstance(out.get("nodes"), list) and isinstance(out.get("edges"), list):
            out["nodes"] = sorted(out["nodes"], key=lambda n: n["id"])
            out["edges"] = sorted(out["edges"], key=lambda e: e["id"])
        return out
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


def validation_view(body: Any) -> Any:
    """A 422 body without pydantic's ``input`` / ``ctx`` (hexrag never echoes input)."""
    if isinstance(body, dict) and isinstance(body.get("detail"), list):
        return {"detail": [{k: v for k, v in e.items() if k not in ("input", "ctx", "url")}
                           for e in body["detail"]]}
    return body
