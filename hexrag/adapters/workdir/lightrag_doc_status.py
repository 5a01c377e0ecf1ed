"""LightRAG 1.5.7's ``JsonDocStatusStorage`` beside a Milvus + Redis deployment, in place.

A LightRAG deployment on Milvus + Redis (``layout = lightrag``) keeps its document status
rows either in Redis (``RedisDocStatusStorage``:
:mod:`hexrag.adapters.redis.lightrag_doc_status`) or in its working directory
(``JsonDocStatusStorage``: ``<working_dir>/<workspace>/kv_store_doc_status.json``). When the
stack names the working directory (``workdir``) and that file is there, it holds the rows:
:func:`json_doc_status_dir` finds it, :func:`open_json_documents` reads it (with hexrag's
fragments beside it, ``kv_store_hexrag_fragments.json``, as in a working-directory stack)
and writes both back atomically when the stack commits a change (``json.dump(...,
indent=2, ensure_ascii=False)``, as LightRAG's ``write_json``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from hexrag.adapters.memory import MemoryDocumentStore
from hexrag.adapters.workdir.files import DOC_STATUS_FILE, AtomicWriter
from hexrag.openings import OpeningContext

__all__ = ["json_doc_status_dir", "open_json_documents", "save_json_documents"]


def json_doc_status_dir(workdir: str | Path | None, workspace: str) -> Path | None:
    """The directory whose ``kv_store_doc_status.json`` holds the deployment's status rows
    (``<workdir>/<workspace>``, or ``<workdir>`` without a workspace), or ``None`` when the
    stack names no working directory or the file is not there."""
    if workdir is None:
        return None
    directory = Path(workdir).expanduser() / workspace if workspace else Path(workdir)
    return directory if (directory / DOC_STATUS_FILE).is_file() else None


def save_json_documents(documents: MemoryDocumentStore, directory: Path) -> None:
    """Write the rows and fragments back (both files, atomically)."""
    from hexrag.adapters.workdir.stack import stage_documents

    writer = AtomicWriter()
    try:
        stage_documents(writer, directory, documents)
        writer.commit()
    except BaseException:
        writer.abort()
        raise


async def open_json_documents(ctx: OpeningContext, directory: Path) -> MemoryDocumentStore:
    """The rows of ``directory``'s ``kv_store_doc_status.json`` (and hexrag's fragments),
    written back when the stack commits a change (never by a read-only opening)."""
    from hexrag.adapters.workdir.stack import load_documents

    ctx.say(f"LightRAG JsonDocStatusStorage in {directory}")
    documents = await asyncio.to_thread(load_documents, directory)

    async def save() -> None:
        if documents.changed:
            await asyncio.to_thread(save_json_documents, documents, directory)

    if not ctx.read_only:
        ctx.commit_with("LightRAG doc status file", save)
    return documents
