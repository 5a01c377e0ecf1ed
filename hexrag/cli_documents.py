"""``hexrag ingest``, ``hexrag documents`` and ``hexrag delete``: a stack's documents in, listed
and out, as LightRAG 1.5.7 handles them.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from hexrag.cli_common import (
    _Bars,
    _fail,
    _guarded,
    _RequiredStackOption,
    _WorkspaceOption,
)
from hexrag.core.errors import HexragError

__all__ = ["delete_command", "documents_command", "ingest_command"]


def _documents(paths: list[Path]) -> list[Path]:
    """The document files named by ``paths`` (folders: their .txt/.md/.pdf/.docx files,
    recursively, sorted)."""
    from hexrag.parsers import DOCUMENT_SUFFIXES

    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out += sorted(p for p in path.rglob("*") if p.suffix.lower() in DOCUMENT_SUFFIXES
                          and p.is_file())
        elif path.is_file():
            out.append(path)
        else:
            _fail(f"no such file or folder: {path}")
    if not out:
        _fail("no .txt, .md, .pdf or .docx document found in the given paths")
    return out



def ingest_command(
    stack: _RequiredStackOption,
    paths: Annotated[
        list[Path] | None, typer.Argument(help="Documents (.txt, .md; .pdf, .docx with the "
                                          "docs extra) or folders of them.",
                                          show_default=False)
    ] = None,
    llm: Annotated[
        str | None,
        typer.Option(help="Extraction LLM, e.g. openai:gpt-4o-mini (OPENAI_BASE_URL, "
                     "OPENAI_API_KEY); default: the stack's LLM.", show_default=False),
    ] = None,
    embedder: Annotated[
        str | None,
        typer.Option(help="Embedder spec; default: the model the stack records (a new "
                     "stack: the TOML's, else hashing:384). Another model than the recorded "
                     "one is refused (hexrag migrate --re-embed changes it).",
                     show_default=False),
    ] = None,
    product_id: Annotated[
        str | None, typer.Option(help="Product of these documents (scope metadata).")
    ] = None,
    category: Annotated[str | None, typer.Option(help="Category (scope metadata).")] = None,
    source: Annotated[
        str | None, typer.Option(help="Source label (default: the file name).")
    ] = None,
    chunk_size: Annotated[
        int | None, typer.Option(help="Tokens per chunk (default: CHUNK_SIZE, else 1200).",
                                 min=2, max=100000, show_default=False)
    ] = None,
    chunk_overlap: Annotated[
        int | None, typer.Option(help="Tokens shared by neighbouring chunks (default: "
                                 "CHUNK_OVERLAP_SIZE, else 100).", min=0, show_default=False)
    ] = None,
    metadata: Annotated[
        list[str] | None,
        typer.Option("--metadata", help="KEY=VALUE metadata for every document (repeatable).",
                     show_default=False),
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Also ingest again the stack's unfinished "
                           "documents (pending, interrupted or failed), as LightRAG's pipeline "
                           "does.")
    ] = False,
    retry_failed: Annotated[
        bool, typer.Option("--retry-failed", help="Also ingest again every document whose "
                           "status is failed, from the text kept on its status row.")
    ] = False,
    workspace: _WorkspaceOption = None,
) -> None:
    """Insert documents into STACK as LightRAG 1.5.7 does: chunks, LLM entity/relation
    extraction (with gleaning), merged descriptions, vectors. A document already processed
    is skipped; each document's status and description fragments are recorded (see
    `hexrag documents` and `hexrag delete`).

    With --product-id/--category every chunk, entity and relation of these documents carries
    them in LightRAG's encoded file_path (product_id:<pid>:category:<cat>:source:<src>), so
    scoped queries see them. A working directory is written at the end (LightRAG opens it).
    """
    from hexrag.env import ingest_settings

    settings = _guarded(lambda: ingest_settings(chunk_token_size=chunk_size,
                                                chunk_overlap_token_size=chunk_overlap))
    extra = _metadata_pairs(metadata or [])
    if not paths and not resume and not retry_failed:
        _fail("give documents or folders to ingest (or --resume, --retry-failed)")
    files = _documents(paths) if paths else []

    async def go() -> dict[str, int]:

        from hexrag.bootstrap import build_llm, open_stack
        from hexrag.config import StackConfig
        from hexrag.core.documents import encode_file_path
        from hexrag.parsers import read_document

        # the stack's recorded model unless --embedder names one (which must be it); a new
        # working directory without --embedder gets the 384-dimensional hashing model
        opened = await open_stack(stack, create_dim=384, embedder=embedder,
                                  workspace=workspace)
        try:
            chat = build_llm(StackConfig(llm=llm)) if llm else opened.engine.llm
            if chat is None:
                _fail("ingestion needs an LLM: pass --llm openai:MODEL (any OpenAI-compatible "
                      "server via OPENAI_BASE_URL / OPENAI_API_KEY) or set llm in the stack")
            await opened.record_model()
            ingestor = opened.ingestor(chat, settings=settings)
            totals = {"documents": 0, "skipped": 0, "failed": 0, "chunks": 0,
                      "entities": 0, "relations": 0, "llm_calls": 0, "llm_cache_hits": 0}
            with _Bars() as bars:
                for i, file in enumerate(files):
                    bars("documents", i, len(files))
                    meta = dict(extra)
                    if product_id:
                        meta["product_id"] = product_id
                    if category:
                        meta["category_id"] = category
                    meta["source"] = source or file.name
                    file_path = (encode_file_path(meta) if product_id or category
                                 else file.name)
                    try:
                        report = await ingestor.ingest_text(
                            read_document(file), file_path=file_path, metadata=meta
                        )
                    except HexragError as exc:  # recorded (status failed); go on
                        totals["failed"] += 1
                        typer.echo(f"failed: {file}: {str(exc)[:300]}", err=True)
                        continue
                    if report.skipped:
                        totals["skipped"] += 1
                        continue
                    totals["documents"] += 1
                    totals["chunks"] += len(report.chunk_ids)
                    totals["entities"] += len(report.entities)
                    totals["relations"] += len(report.relations)
                    totals["llm_calls"] += report.llm_calls
                    totals["llm_cache_hits"] += report.cache_hits
                bars("documents", len(files), len(files))
                if resume or retry_failed:
                    rows = [r for r in await ingestor.unfinished()
                            if resume or r.status == "failed"]
                    for row in rows:
                        typer.echo(f"resuming {row.id} ({row.status})", err=True)
                    for result in await ingestor.resume(rows):
                        if isinstance(result, BaseException):
                            totals["failed"] += 1
                            typer.echo(f"failed: {str(result)[:300]}", err=True)
                        else:
                            totals["resumed"] = totals.get("resumed", 0) + 1
                            totals["chunks"] += len(result.chunk_ids)
                            totals["llm_calls"] += result.llm_calls
                            totals["llm_cache_hits"] += result.cache_hits
            await opened.commit()
            if llm and chat is not None and hasattr(chat, "aclose"):
                await chat.aclose()
            return totals
        finally:
            await opened.aclose()

    totals = _guarded(lambda: asyncio.run(go()))
    typer.echo(f"ingested into {stack}: {json.dumps(totals)}")
    if totals["failed"]:
        raise typer.Exit(1)



def _metadata_pairs(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key or len(key) > 64 or len(value) > 1000:
            _fail(f"--metadata takes KEY=VALUE (key up to 64, value up to 1000 characters), "
                  f"got {item[:80]!r}")
        if key in ("product_id", "category_id", "source"):
            _fail(f"--metadata {key}=...: use --{key.replace('_id', '-id')} instead"
                  if key != "category_id" else "--metadata category_id=...: use --category")
        out[key] = value
    return out



def documents_command(
    stack: _RequiredStackOption,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines.")] = False,
    workspace: _WorkspaceOption = None,
    wide: Annotated[bool, typer.Option(
        "--wide", help="Full ids and file paths (folded); default: one line per document, "
        "ids shortened.")] = False,
) -> None:
    """List the documents of STACK with their status (pending, processing, processed,
    failed with the error), chunk count and file path."""

    async def go() -> list[Any]:
        from hexrag.bootstrap import open_stack

        opened = await open_stack(stack, workspace=workspace, read_only=True)
        try:
            if opened.documents is None:
                _fail(f"{stack} keeps no document records")
            return list(await opened.documents.list_docs())
        finally:
            await opened.aclose()

    from rich.console import Console

    docs = _guarded(lambda: asyncio.run(go()))
    console = Console()
    if as_json:
        for d in docs:
            row = {k: v for k, v in d.to_json().items() if k != "content"}
            typer.echo(json.dumps({"id": d.id, **row}, ensure_ascii=False))
        return
    from hexrag.cli_documents_table import documents_table

    console.print(documents_table(docs, wide=wide, width=console.width))
    console.print(f"{len(docs)} documents")



def delete_command(
    doc_ids: Annotated[list[str], typer.Argument(help="Document ids (doc-...).",
                                                 show_default=False)],
    stack: _RequiredStackOption,
    llm: Annotated[
        str | None,
        typer.Option(help="LLM for re-summarising rebuilt descriptions (only called where "
                     "LightRAG's merge rule summarises); default: the stack's, else the "
                     "offline scripted one refuses.", show_default=False),
    ] = None,
    delete_llm_cache: Annotated[
        bool, typer.Option("--delete-llm-cache", help="Also drop the deleted chunks' "
                           "extraction answers from the LLM cache (LightRAG's flag).")
    ] = False,
    embedder: Annotated[
        str | None,
        typer.Option(help="Embedder of the rebuilt entities and relations; default: the "
                     "model the stack records (another one is refused).", show_default=False),
    ] = None,
    workspace: _WorkspaceOption = None,
) -> None:
    """Delete documents exactly: their chunks, vectors, fragments and status rows go; the
    entities and relations they touched are rebuilt from the remaining documents' fragments
    (or deleted when none remain). A working directory is written back at the end."""

    async def go() -> dict[str, Any]:
        from hexrag.bootstrap import RefusingLLM, build_llm, open_stack
        from hexrag.config import StackConfig
        from hexrag.env import ingest_settings

        opened = await open_stack(stack, embedder=embedder, workspace=workspace)
        try:
            chat = build_llm(StackConfig(llm=llm)) if llm else opened.engine.llm
            await opened.record_model()
            # the same model and ingestion settings as ingest: the rebuilt records equal a
            # fresh build of the remaining documents
            ingestor = opened.ingestor(chat or RefusingLLM(), settings=ingest_settings())
            report = await ingestor.delete_documents(doc_ids,
                                                     delete_llm_cache=delete_llm_cache)
            await opened.commit()
            return {
                "deleted": report.deleted, "not_found": report.not_found,
                "chunks": report.chunks, "entities_deleted": len(report.entities_deleted),
                "entities_rebuilt": len(report.entities_rebuilt),
                "relations_deleted": len(report.relations_deleted),
                "relations_rebuilt": len(report.relations_rebuilt),
                "llm_calls": report.llm_calls, "llm_cache_deleted": report.llm_cache_deleted,
            }
        finally:
            await opened.aclose()

    out = _guarded(lambda: asyncio.run(go()))
    typer.echo(json.dumps(out))
    if out["not_found"] and not out["deleted"]:
        raise typer.Exit(1)

