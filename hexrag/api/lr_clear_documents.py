"""LightRAG 1.5.7's ``DELETE /documents``: clear every document (``clear_documents``).

Destructive, with LightRAG's guards and answers (always HTTP 200, LightRAG's
``ClearDocumentsResponse``):

* refused with ``status="busy"`` (nothing touched) while the pipeline is busy or has work
  queued (``Pipeline is busy with another operation.``) or a scan reads the input directory;
* otherwise the pipeline is held (``busy`` and ``destructive_busy`` in the pipeline status;
  inserts, uploads and scans are refused with LightRAG's 409 or ``busy`` meanwhile), its
  history restarted, and every section of the stack emptied through its ports
  (:func:`hexrag.core.ingest.clear_all.clear_all`: chunks, LightRAG's key-value records,
  the three vector indexes, the graph, the document rows and fragments - the LLM cache is
  kept, as LightRAG keeps it); a working directory is written back;
* then the files directly in the input directory (``INPUT_DIR``) are deleted, never those
  in its subdirectories;
* ``success`` when everything went, ``partial_success`` when a section or a file could not
  be removed, ``fail`` (files kept) when no section could be emptied.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from hexrag.api.documents import DocumentQueue
from hexrag.core.ingest.clear_all import clear_all

__all__ = ["ClearDocumentsResponse", "add_clear_documents_route", "input_dir"]

BUSY = "Pipeline is busy with another operation."
SCANNING = ("Document scan is in progress. Wait for the scan to complete before clearing or "
            "deleting.")
ALL_FAILED = "All storage drop operations failed. Aborting document clearing process."


class ClearDocumentsResponse(BaseModel):
    """LightRAG's ``ClearDocumentsResponse``."""

    status: Literal["success", "partial_success", "busy", "fail"] = Field(
        description="Status of the clear operation")
    message: str = Field(description="Message describing the operation result")


def _sections(request: Request, queue: DocumentQueue) -> dict[str, Any]:
    state = request.app.state
    sections = getattr(state, "sections", None)
    src = sections if sections is not None else state.engine.stores
    documents = getattr(sections, "documents", None) if sections is not None else None
    return {"entities": src.entities, "relationships": src.relationships, "chunks": src.chunks,
            "graph": src.graph, "chunk_store": src.chunk_store,
            "documents": documents if documents is not None else queue.store,
            "kv": dict(getattr(sections, "kv", None) or {})}


def input_dir() -> Path:
    """The directory ``/documents/scan`` reads (``INPUT_DIR``, default ``./inputs``)."""
    return Path(os.environ.get("INPUT_DIR") or "./inputs")


def _delete_input_files() -> tuple[int, int]:
    root = input_dir()
    deleted = failed = 0
    for path in (root.glob("*") if root.is_dir() else []):
        if path.is_file():
            try:
                path.unlink()
                deleted += 1
            except OSError:
                failed += 1
    return deleted, failed


def add_clear_documents_route(router: APIRouter, queue: DocumentQueue,
                              scans: dict[str, dict[str, Any]]) -> None:
    """Add ``DELETE`` on ``router``'s prefix (``/documents``); ``scans`` are the scan jobs,
    whose finished records go with the documents."""

    @router.delete("", response_model=ClearDocumentsResponse)
    async def clear_documents(request: Request) -> ClearDocumentsResponse:
        """Clear every document, entity, relation and chunk of the stack, and the files of
        the input directory (LightRAG's endpoint; see :mod:`hexrag.api.lr_clear_documents`)."""
        if queue.clearing or queue.busy or queue.queue:
            return ClearDocumentsResponse(status="busy", message=BUSY)
        if queue.scanning:
            return ClearDocumentsResponse(status="busy", message=SCANNING)
        queue.clearing = True
        try:
            queue.history.clear()
            queue.job_start = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            queue.latest_message = "Starting document clearing process"
            for doc_id in [*queue.retries.failures, *queue.retries.due]:
                queue.retries.forget(doc_id)
            queue.docs.clear()
            for tid in [t for t, job in scans.items() if job.get("status") != "running"]:
                scans.pop(tid, None)
            queue.latest_message = "Starting to drop storage components"
            report = await clear_all(**_sections(request, queue))
            errors = list(report.errors)
            if report.dropped:
                commit = getattr(request.app.state, "commit", None)
                if commit is not None:
                    try:
                        await commit()
                    except Exception as exc:  # reported like a failed drop
                        errors.append(f"Error writing the stack back: {type(exc).__name__}")
            ok, bad = len(report.dropped), len(report.errors)
            queue.latest_message = (f"Dropped {ok} storage components with {bad} errors" if bad
                                    else f"Successfully dropped all {ok} storage components")
            if not ok and bad:
                queue.latest_message = ALL_FAILED
                return ClearDocumentsResponse(status="fail", message=ALL_FAILED)
            queue.latest_message = "Starting to delete files in input directory"
            deleted, failed = await asyncio.to_thread(_delete_input_files)
            if failed:
                queue.latest_message = f"Deleted {deleted} files with {failed} errors"
                errors.append(f"Failed to delete {failed} files")
            else:
                queue.latest_message = f"Successfully deleted {deleted} files"
            if errors:
                status: Literal["success", "partial_success"] = "partial_success"
                message = f"Cleared documents with some errors. Deleted {deleted} files."
            else:
                status, message = "success", (
                    f"All documents cleared successfully. Deleted {deleted} files.")
            queue.latest_message = message
            return ClearDocumentsResponse(status=status, message=message)
        finally:
            queue.clearing = False
            queue.latest_message = "Document clearing process completed"
