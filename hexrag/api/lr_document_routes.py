"""LightRAG 1.5.7's document-manager routes (``lightrag/api/routers/document_routes.py``).

On top of :mod:`hexrag.api.documents` (text(s), upload, ``GET /documents``, delete, pipeline
status), with LightRAG's request and response models:

* ``POST /documents/paginated`` - status filters (``status_filter`` / ``status_filters``),
  ``page`` / ``page_size`` (10-200), ``sort_field`` (``created_at``, ``updated_at``, ``id``,
  ``file_path``) and ``sort_direction``; ``status_counts`` of every document;
* ``GET /documents/status_counts``; ``GET /documents/track_status/{track_id}`` (the
  ``track_id`` an insert or upload answered, or one stored in a LightRAG ``doc_status``);
* ``POST /documents/cancel_pipeline`` (the documents still queued are marked failed),
  ``POST /documents/reprocess_failed`` (failed documents whose text is kept are queued
  again), ``POST /documents/clear_cache`` (the stack's LLM cache), ``GET
  /documents/supported_file_types``;
* ``POST /documents/scan`` / ``GET /documents/scan/status/{track_id}`` - the files of the
  input directory (``INPUT_DIR``, LightRAG's default ``./inputs``) that no document came
  from yet are queued;
* ``GET /documents/source_conflicts`` (+ ``POST /documents/source_conflicts/repair``) -
  documents sharing one source name; ``POST /documents/recovery/force_reset`` (hexrag never
  raises LightRAG's recovery fence: ``no_recovery_required``);
* ``DELETE /documents`` - clear every document (:mod:`hexrag.api.lr_clear_documents`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import time
from enum import StrEnum
from typing import Any, Literal

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request, Response
from pydantic import BaseModel, Field, model_validator

from hexrag.api.documents import DocumentQueue, bind_store, new_track_id
from hexrag.api.lr_clear_documents import add_clear_documents_route, input_dir
from hexrag.core.errors import ConfigurationError

__all__ = ["add_lr_document_routes", "document_views"]

#: LightRAG's ``DocStatus`` values, in its order.
DOC_STATUS = ("pending", "parsing", "analyzing", "processing", "preprocessed", "processed",
              "failed")


class DocStatus(StrEnum):
    """LightRAG's ``DocStatus``."""

    PENDING = "pending"
    PARSING = "parsing"
    ANALYZING = "analyzing"
    PROCESSING = "processing"
    PREPROCESSED = "preprocessed"
    PROCESSED = "processed"
    FAILED = "failed"


UNKNOWN_FILE_SOURCE = "unknown_source"
#: Scan jobs remembered for ``/documents/scan/status``.
MAX_SCAN_JOBS = 100


def _file_path(value: Any) -> str:
    """LightRAG's ``normalize_file_path``: the base name (missing or legacy-empty:
    ``unknown_source``)."""
    if not isinstance(value, str) or value.strip() in ("", "no-file-path"):
        return UNKNOWN_FILE_SOURCE
    return value.strip().rsplit("/", 1)[-1] or UNKNOWN_FILE_SOURCE


class DocStatusResponse(BaseModel):
    """LightRAG's ``DocStatusResponse``."""

    id: str
    content_summary: str
    content_length: int
    status: str
    created_at: str
    updated_at: str
    track_id: str | None = None
    chunks_count: int | None = None
    error_msg: str | None = None
    metadata: dict[str, Any] | None = None
    file_path: str


class DocumentsRequest(BaseModel):
    """LightRAG's ``DocumentsRequest``."""

    status_filter: DocStatus | None = None
    status_filters: list[DocStatus] | None = Field(default=None, max_length=len(DOC_STATUS))
    page: int = Field(default=1, ge=1, le=10_000_000)
    page_size: int = Field(default=50, ge=10, le=200)
    sort_field: Literal["created_at", "updated_at", "id", "file_path"] = "updated_at"
    sort_direction: Literal["asc", "desc"] = "desc"


class PaginationInfo(BaseModel):
    """LightRAG's ``PaginationInfo``."""

    page: int
    page_size: int
    total_count: int
    total_pages: int
    has_next: bool
    has_prev: bool


class PaginatedDocsResponse(BaseModel):
    """LightRAG's ``PaginatedDocsResponse``."""

    documents: list[DocStatusResponse]
    pagination: PaginationInfo
    status_counts: dict[str, int]


class StatusCountsResponse(BaseModel):
    """LightRAG's ``StatusCountsResponse``."""

    status_counts: dict[str, int]


class TrackStatusResponse(BaseModel):
    """LightRAG's ``TrackStatusResponse``."""

    track_id: str
    documents: list[DocStatusResponse]
    total_count: int
    status_summary: dict[str, int]


class CancelPipelineResponse(BaseModel):
    """LightRAG's ``CancelPipelineResponse``."""

    status: Literal["cancellation_requested", "not_busy"]
    message: str


class ReprocessResponse(BaseModel):
    """LightRAG's ``ReprocessResponse``."""

    status: Literal["reprocessing_started"]
    message: str
    track_id: str = ""


class ClearCacheResponse(BaseModel):
    """LightRAG's ``ClearCacheResponse``."""

    status: Literal["success", "fail"]
    message: str


class SupportedFileTypesResponse(BaseModel):
    """LightRAG's ``SupportedFileTypesResponse``."""

    supported_extensions: list[str]
    engines: dict[str, list[str]]


class ScanResponse(BaseModel):
    """LightRAG's ``ScanResponse``."""

    status: Literal["scanning_started", "scanning_skipped_pipeline_busy"]
    message: str | None = None
    track_id: str


class ScanJobSampleBucket(BaseModel):
    """LightRAG's ``ScanJobSampleBucket``."""

    items: list[str] = Field(default_factory=list)
    truncated: bool = False
    dropped: int = 0


class ScanJobStatusResponse(BaseModel):
    """LightRAG's ``ScanJobStatusResponse``."""

    track_id: str
    status: Literal["running", "completed", "failed", "cancelled", "abandoned"]
    counts: dict[str, int] = Field(default_factory=dict)
    counters_dropped: int = 0
    samples: dict[str, ScanJobSampleBucket] = Field(default_factory=dict)
    created_at: float
    updated_at: float
    version: int
    message: str = ""


class SourceConflictItem(BaseModel):
    """LightRAG's ``SourceConflictItem``."""

    canonical_source_key: str
    candidate_count: int | None = None
    sample_doc_ids: list[str] = Field(default_factory=list)


class SourceConflictListResponse(BaseModel):
    """LightRAG's ``SourceConflictListResponse``."""

    conflicts: list[SourceConflictItem] = Field(default_factory=list)
    next_cursor: str | None = None


class SourceConflictRepairRequest(BaseModel):
    """LightRAG's ``SourceConflictRepairRequest``."""

    canonical_source_key: str = Field(min_length=1, max_length=4096)
    primary_doc_id: str = Field(min_length=1, max_length=512)
    expected_candidate_count: int | None = Field(default=None, ge=0)
    expected_candidate_fingerprint: str | None = Field(default=None, max_length=256)
    dry_run: bool = True

    @model_validator(mode="after")
    def _commit_requires_cas_tokens(self) -> SourceConflictRepairRequest:
        if not self.dry_run and (self.expected_candidate_count is None
                                 or not self.expected_candidate_fingerprint):
            raise ValueError(
                "expected_candidate_count and expected_candidate_fingerprint are required "
                "when dry_run is false; run a dry-run first and echo both values back")
        return self


class SourceConflictRepairResponse(BaseModel):
    """LightRAG's ``SourceConflictRepairResponse``."""

    canonical_source_key: str
    primary_doc_id: str
    candidate_count: int
    fingerprint: str
    demoted_sample_doc_ids: list[str] = Field(default_factory=list)
    committed: bool


class ForceResetRecoveryRequest(BaseModel):
    """LightRAG's ``ForceResetRecoveryRequest``."""

    confirm: bool = False


class ForceResetRecoveryResponse(BaseModel):
    """LightRAG's ``ForceResetRecoveryResponse``."""

    status: Literal["reset", "no_recovery_required"]
    message: str
    cancelled_manual_retries: int = 0


# ------------------------------------------------------------------------------ views


async def document_views(queue: DocumentQueue) -> list[dict[str, Any]]:
    """Every document of the server as LightRAG's ``DocStatusResponse`` dicts: the stack's
    status rows, and what this process queued that the stack does not hold (yet)."""
    views: dict[str, dict[str, Any]] = {}
    store = queue.store
    if store is not None:
        for rec in await store.list_docs():
            chunks = rec.extra.get("chunks_count", rec.chunks_count)
            views[rec.id] = {
                "id": rec.id, "content_summary": rec.content_summary,
                "content_length": rec.content_length, "status": rec.status,
                "created_at": rec.created_at, "updated_at": rec.updated_at,
                "track_id": rec.extra.get("track_id"),
                "chunks_count": chunks if isinstance(chunks, int) else None,
                "error_msg": rec.error_msg, "metadata": dict(rec.metadata),
                "file_path": _file_path(rec.file_path), "_path": rec.file_path,
            }
    for doc in queue.docs.values():
        if doc.id not in views or doc.status in ("pending", "failed"):
            view = doc.view()
            stored = views.get(doc.id, {})
            views[doc.id] = {**view, "metadata": stored.get("metadata", dict(doc.metadata)),
                             "file_path": _file_path(view["file_path"]),
                             "_path": view["file_path"]}
    return list(views.values())


def status_counts(views: list[dict[str, Any]]) -> dict[str, int]:
    """LightRAG's ``get_all_status_counts``: every status (0 when none) and ``all``."""
    counts = dict.fromkeys(DOC_STATUS, 0)
    for v in views:
        counts[str(v["status"])] = counts.get(str(v["status"]), 0) + 1
    counts["all"] = len(views)
    return counts


def _sort_key(view: dict[str, Any], field_name: str) -> str:
    if field_name == "file_path":  # the stored path, as LightRAG sorts it
        return str(view.get("_path") or "no-file-path").lower()
    return str(view.get(field_name) or "")


#: LightRAG's sample bound of a conflict listing / repair, and its page bound.
CONFLICT_SAMPLE_CAP = 32
CONFLICT_PAGE_MAX = 200
_BAD_CURSOR = "Malformed cursor; pass back the next_cursor value verbatim."


def _fingerprint(sorted_ids: list[str]) -> str:
    """LightRAG's ``_conflict_fingerprint`` (the repair's compare-and-set token)."""
    digest = hashlib.sha256()
    for doc_id in sorted_ids:
        digest.update(doc_id.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()


def _encode_cursor(key: str) -> str:
    return base64.urlsafe_b64encode(json.dumps(key, ensure_ascii=False).encode()).decode()


def _decode_cursor(raw: str | None) -> str | None:
    if not raw:
        return None
    try:
        key = json.loads(base64.b64decode(raw.encode("ascii"), altchars=b"-_",
                                          validate=True).decode("utf-8"))
    except (binascii.Error, UnicodeError, ValueError):
        raise HTTPException(status_code=400, detail=_BAD_CURSOR) from None
    if not isinstance(key, str) or not key:
        raise HTTPException(status_code=400, detail=_BAD_CURSOR)
    return key


def _conflicts(views: list[dict[str, Any]]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for v in views:
        meta = v.get("metadata") or {}
        path = v.get("_path")
        if (meta.get("is_duplicate") or not isinstance(path, str)
                or path in ("", UNKNOWN_FILE_SOURCE, "no-file-path")):
            continue
        groups.setdefault(path, []).append(v["id"])
    return {k: sorted(ids) for k, ids in sorted(groups.items()) if len(ids) > 1}


def supported_suffixes() -> list[str]:
    """The suffixes ``/documents/upload`` and ``/documents/scan`` read."""
    from hexrag.parsers import TEXT_SUFFIXES

    return sorted({*TEXT_SUFFIXES, ".pdf", ".docx"})


# ------------------------------------------------------------------------------ routes


def add_lr_document_routes(app: FastAPI, queue: DocumentQueue, *,
                           responses: dict[int | str, dict[str, Any]] | None = None) -> None:
    """Mount LightRAG's document-manager routes on ``app`` (see the module docstring)."""
    router = APIRouter(prefix="/documents", tags=["documents"], responses=responses or {},
                       dependencies=[Depends(bind_store)])
    scans: dict[str, dict[str, Any]] = {}
    add_clear_documents_route(router, queue, scans)

    @router.post("/paginated", response_model=PaginatedDocsResponse)
    async def get_documents_paginated(req: DocumentsRequest) -> PaginatedDocsResponse:
        """A page of documents, filtered and sorted as LightRAG does."""
        views = await document_views(queue)
        wanted = ({s.value for s in req.status_filters} if req.status_filters
                  else {req.status_filter.value} if req.status_filter else None)
        rows = [v for v in views if wanted is None or v["status"] in wanted]
        rows.sort(key=lambda v: (v["id"] if req.sort_field == "id"
                                 else _sort_key(v, req.sort_field)),
                  reverse=req.sort_direction == "desc")
        start = (req.page - 1) * req.page_size
        total = len(rows)
        pages = (total + req.page_size - 1) // req.page_size
        return PaginatedDocsResponse(
            documents=[DocStatusResponse(**v) for v in rows[start:start + req.page_size]],
            pagination=PaginationInfo(page=req.page, page_size=req.page_size,
                                      total_count=total, total_pages=pages,
                                      has_next=req.page < pages, has_prev=req.page > 1),
            status_counts=status_counts(views),
        )

    @router.get("/status_counts", response_model=StatusCountsResponse)
    async def get_document_status_counts() -> StatusCountsResponse:
        """How many documents are in each status."""
        return StatusCountsResponse(status_counts=status_counts(await document_views(queue)))

    @router.get("/track_status/{track_id}", response_model=TrackStatusResponse)
    async def get_track_status(track_id: str) -> TrackStatusResponse:
        """The documents an insert, upload or scan answered ``track_id`` for."""
        if not track_id or not track_id.strip():
            raise HTTPException(status_code=400, detail="Track ID cannot be empty")
        track_id = track_id.strip()
        docs = [v for v in await document_views(queue) if v.get("track_id") == track_id]
        summary: dict[str, int] = {}
        for v in docs:
            key = str(v["status"])
            summary[key] = summary.get(key, 0) + 1
        return TrackStatusResponse(track_id=track_id,
                                   documents=[DocStatusResponse(**v) for v in docs],
                                   total_count=len(docs), status_summary=summary)

    @router.post("/cancel_pipeline", response_model=CancelPipelineResponse)
    async def cancel_pipeline() -> CancelPipelineResponse:
        """Stop the pipeline: the documents still queued are marked failed."""
        if not queue.busy:
            return CancelPipelineResponse(
                status="not_busy",
                message="Pipeline is not currently running. No cancellation needed.")
        queue.cancel()
        return CancelPipelineResponse(
            status="cancellation_requested",
            message=("Pipeline cancellation has been requested. Documents will be marked "
                     "as FAILED."))

    @router.post("/reprocess_failed", response_model=ReprocessResponse)
    async def reprocess_failed() -> ReprocessResponse:
        """Queue the failed documents again (they keep their ``track_id``)."""
        await queue.reprocess_failed()
        return ReprocessResponse(
            status="reprocessing_started",
            message=("Reprocessing of failed documents has been initiated in background "
                     "(one retry attempt per failed document). If the pipeline is busy the "
                     "request executes at its next quiescence point. Documents retain "
                     "their original track_id."))

    @router.post("/clear_cache", response_model=ClearCacheResponse)
    async def clear_cache(request: Request) -> ClearCacheResponse:
        """Clear the stack's LLM cache (answers, keywords, extractions)."""
        cache = request.app.state.engine.cache
        sections = getattr(request.app.state, "sections", None)
        if sections is not None and sections.cache is not None:
            cache = sections.cache
        if cache is not None:  # a stack without an LLM cache has nothing to clear
            await cache.clear()
        commit = getattr(request.app.state, "commit", None)
        if commit is not None:
            await commit()
        return ClearCacheResponse(status="success", message="Successfully cleared all cache")

    @router.get("/supported_file_types", response_model=SupportedFileTypesResponse)
    async def get_supported_file_types(response: Response) -> SupportedFileTypesResponse:
        """The file suffixes upload and scan read."""
        response.headers["Cache-Control"] = "no-store"
        response.headers["Vary"] = "LIGHTRAG-WORKSPACE"
        suffixes = supported_suffixes()
        return SupportedFileTypesResponse(supported_extensions=suffixes,
                                          engines={"legacy": suffixes})

    @router.post("/scan", response_model=ScanResponse)
    async def scan_for_new_documents() -> ScanResponse:
        """Queue the input directory's files that no document came from yet."""
        tid = new_track_id("scan")
        now = time.time()
        job: dict[str, Any] = {"track_id": tid, "status": "running", "counts": {},
                               "samples": {}, "created_at": now, "updated_at": now,
                               "version": 1, "message": ""}
        if queue.busy or queue.clearing:
            return ScanResponse(status="scanning_skipped_pipeline_busy", track_id=tid,
                                message="Pipeline reservation is unavailable.")
        if queue.ingestor is None or not getattr(queue.ingestor, "accepts_documents", True):
            raise ConfigurationError(queue.why_not)
        while len(scans) >= MAX_SCAN_JOBS:
            scans.pop(next(iter(scans)))
        scans[tid] = job
        queue.scanning += 1  # DELETE /documents waits for no scan: it refuses (busy)
        try:
            await _scan(queue, tid, job)
        except HTTPException:
            raise
        except Exception as exc:  # recorded on the job, answered by the status route
            job.update(status="failed", message=type(exc).__name__)
        finally:
            queue.scanning -= 1
        job["updated_at"] = time.time()
        job["version"] += 1
        return ScanResponse(status="scanning_started", track_id=tid,
                            message="Scanning process has been initiated in the background")

    @router.get("/scan/status/{track_id}", response_model=ScanJobStatusResponse,
                responses={404: {"description": "No scan job has this track_id"}})
    async def get_scan_job_status(track_id: str) -> ScanJobStatusResponse:
        """A scan job's counters and state."""
        job = scans.get(track_id)
        if job is None:
            raise HTTPException(status_code=404,
                                detail=f"No scan job found for track_id {track_id[:200]}")
        return ScanJobStatusResponse(**job)

    @router.get("/source_conflicts", response_model=SourceConflictListResponse)
    async def list_source_conflicts(
        limit: int = Query(50, ge=1, le=CONFLICT_PAGE_MAX,
                           description="Maximum conflicts to return in this page"),
        cursor: str | None = Query(None, max_length=8192,
                                   description="next_cursor from a previous page (opaque)"),
    ) -> SourceConflictListResponse:
        """Source names several primary documents share."""
        after = _decode_cursor(cursor)
        groups = list(_conflicts(await document_views(queue)).items())
        page = [g for g in groups if after is None or g[0] > after][:limit]
        return SourceConflictListResponse(
            conflicts=[SourceConflictItem(canonical_source_key=k, candidate_count=len(ids),
                                          sample_doc_ids=ids[:CONFLICT_SAMPLE_CAP])
                       for k, ids in page],
            next_cursor=_encode_cursor(page[-1][0]) if len(page) >= limit else None)

    @router.post("/source_conflicts/repair", response_model=SourceConflictRepairResponse,
                 responses={409: {"description": "The conflict changed since it was listed"}})
    async def repair_source_conflict(request: Request, req: SourceConflictRepairRequest
                                     ) -> SourceConflictRepairResponse:
        """Keep one document as the source's primary; mark the others duplicates."""
        ids = _conflicts(await document_views(queue)).get(req.canonical_source_key, [])
        if req.primary_doc_id not in ids:
            raise HTTPException(status_code=409, detail=(
                f"Document {req.primary_doc_id[:200]} is not a current primary candidate "
                f"for source '{req.canonical_source_key[:300]}'; list the conflict again to "
                "see the current candidates."))
        fingerprint = _fingerprint(ids)
        demoted = [i for i in ids if i != req.primary_doc_id]
        if not req.dry_run:
            if (req.expected_candidate_count != len(ids)
                    or req.expected_candidate_fingerprint != fingerprint):
                raise HTTPException(status_code=409, detail=(
                    "The candidate set changed since the dry-run; re-run the dry-run and "
                    "commit with the new count/fingerprint."))
            await queue.mark_duplicates(demoted, req.primary_doc_id)
            commit = getattr(request.app.state, "commit", None)
            if commit is not None:
                await commit()
        return SourceConflictRepairResponse(
            canonical_source_key=req.canonical_source_key, primary_doc_id=req.primary_doc_id,
            candidate_count=len(ids), fingerprint=fingerprint,
            demoted_sample_doc_ids=demoted[:CONFLICT_SAMPLE_CAP], committed=not req.dry_run)

    @router.post("/recovery/force_reset", response_model=ForceResetRecoveryResponse)
    async def force_reset_recovery(req: ForceResetRecoveryRequest) -> ForceResetRecoveryResponse:
        """LightRAG's recovery fence reset (hexrag raises no fence)."""
        if not req.confirm:
            raise HTTPException(status_code=400, detail=(
                "Set confirm=true to force-reset. The workspace may be in a "
                "partially-committed state after a worker died mid "
                "custom_chunks/delete/clear; verify or repair it first."))
        return ForceResetRecoveryResponse(status="no_recovery_required",
                                          message="No recovery_required fence is set.")

    app.include_router(router)


async def _scan(queue: DocumentQueue, tid: str, job: dict[str, Any]) -> None:
    import asyncio

    from hexrag.api.parse_pool import shared_pool
    from hexrag.parsers import TEXT_SUFFIXES, document_text

    root = input_dir()
    known = {v["file_path"] for v in await document_views(queue)}
    suffixes = set(supported_suffixes())
    files = sorted(p for p in (root.iterdir() if root.is_dir() else [])
                   if p.is_file() and p.suffix.lower() in suffixes and p.name not in known)
    counts = {"discovered": len(files), "queued": 0, "failed": 0}
    samples: dict[str, dict[str, Any]] = {"processed": {"items": []}, "error": {"items": []}}
    pool = shared_pool()
    texts: list[str] = []
    names: list[str | None] = []
    for path in files:
        try:
            data = await asyncio.to_thread(path.read_bytes)
            if path.suffix.lower() in TEXT_SUFFIXES:
                text = await asyncio.to_thread(document_text, data, path.name, pool.limits)
            else:
                text = await pool.parse(data, path.name)
        except Exception as exc:  # one bad file does not stop the scan
            counts["failed"] += 1
            samples["error"]["items"].append(f"{path.name}: {type(exc).__name__}"[:300])
            continue
        texts.append(text)
        names.append(path.name)
        samples["processed"]["items"].append(path.name)
    if texts:
        await queue.submit(texts, names, {"product_id": None, "category": None,
                                          "source": None}, track=tid)
        counts["queued"] = len(texts)
    for bucket in samples.values():
        bucket["items"] = bucket["items"][:20]
    job.update(status="completed", counts=counts, samples=samples,
               message=f"{counts['queued']} file(s) queued, {counts['failed']} failed")
