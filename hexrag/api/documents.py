"""LightRAG-compatible document endpoints: insert texts, list their status, pipeline status.

``POST /documents/text`` and ``POST /documents/texts`` (LightRAG's bodies: ``text`` /
``texts`` and ``file_source`` / ``file_sources``, plus hexrag's ``product_id``, ``category``
and ``source`` scope metadata) answer at once with a ``track_id``; the documents are then
ingested in the background, one at a time (LightRAG's pipeline is single-flight), by
:class:`hexrag.core.ingest.ingestion.Ingestor`, while queries keep being served. ``GET /documents``
lists every document this server received with its status (``pending``, ``processing``,
``processed``, ``failed`` with the error) - the stack's document store's rows together with
what this process has queued - and ``GET /documents/pipeline_status`` says whether the
pipeline is busy. ``DELETE /documents/delete_document`` (LightRAG's body: ``doc_ids``) queues
an exact deletion (:meth:`hexrag.core.ingest.ingestion.Ingestor.delete_documents`) behind the
ingestions already queued. A failed document records a short error and never fails the
server; one that failed because a store was unreachable or timed out is tried again with
backoff until the store is back (:mod:`hexrag.api.ingest_retry`; the waiting retries are in the
pipeline status). A stack without an LLM answers 503 naming the missing setting.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import PurePath
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, File, Form, HTTPException, Request, UploadFile
from pydantic import AfterValidator, BaseModel, Field, field_validator

from hexrag.api.ingest_retry import RetryBook
from hexrag.api.models import _check_text
from hexrag.core.documents import DocRecord, content_summary, encode_file_path
from hexrag.core.errors import ConfigurationError, HexragError, InvalidQuery
from hexrag.core.ingest.extraction import sanitize_text_for_encoding
from hexrag.core.ingest.ids import mdhash_id
from hexrag.core.ingest.ingestion import Ingestor

__all__ = ["DocumentQueue", "add_document_routes"]

MAX_TEXTS = 1000
MAX_LABEL = 512
#: File parts accepted by one ``POST /documents/upload``.
MAX_UPLOAD_FILES = 100
Label = Annotated[str, Field(min_length=1, max_length=MAX_LABEL)]


#: LightRAG's ``chunking`` strategies (``TextChunkingConfig.strategy``).
_STRATEGIES = ("fixed_token", "recursive_character", "semantic_vector", "paragraph_semantic",
               "custom")


def _check_chunking(value: Any) -> Any:
    """LightRAG's optional ``chunking`` of an insert: hexrag chunks by fixed tokens with the
    server's settings (``CHUNK_SIZE``, ``CHUNK_OVERLAP_SIZE``), so only that default is
    taken; any other strategy or parameter is refused (422), never silently ignored."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - {"strategy", "params"}:
        raise ValueError("chunking takes 'strategy' and 'params' only")
    strategy = value.get("strategy", "fixed_token")
    if strategy not in _STRATEGIES:
        raise ValueError(f"chunking strategy must be one of {', '.join(_STRATEGIES)}")
    params = value.get("params") or {}
    if strategy != "fixed_token" or not isinstance(params, dict) or any(
            v is not None for v in params.values()):
        raise ValueError("hexrag chunks by fixed tokens with the server's CHUNK_SIZE and "
                         "CHUNK_OVERLAP_SIZE: a chunking strategy or parameter per request "
                         "is not supported")
    return value


#: LightRAG's optional ``chunking`` of an insert, checked by :func:`_check_chunking`.
Chunking = Annotated[
    dict[str, Any] | None,
    Field(description="LightRAG's chunking; only the default (fixed_token, no "
                      "params) is taken: the server's CHUNK_SIZE applies"),
    AfterValidator(_check_chunking),
]


class InsertTextRequest(BaseModel):
    """LightRAG's ``InsertTextRequest`` (+ hexrag's scope metadata)."""

    text: str = Field(..., min_length=1, description="The document text.")
    file_source: Label | None = None
    chunking: Chunking = None
    product_id: Label | None = None
    category: Label | None = None
    source: Label | None = None

    @field_validator("text", "file_source", "product_id", "category", "source")
    @classmethod
    def _text(cls, value: str | None) -> str | None:
        return _check_text(value)


class InsertTextsRequest(BaseModel):
    """LightRAG's ``InsertTextsRequest`` (+ hexrag's scope metadata)."""

    texts: list[Annotated[str, Field(min_length=1)]] = Field(
        ..., min_length=1, max_length=MAX_TEXTS
    )
    file_sources: list[Label] | None = Field(default=None, max_length=MAX_TEXTS)
    chunking: Chunking = None
    product_id: Label | None = None
    category: Label | None = None
    source: Label | None = None

    @field_validator("texts", "file_sources")
    @classmethod
    def _texts(cls, value: list[str] | None) -> list[str] | None:
        for item in value or []:
            _check_text(item)
        return value

    @field_validator("product_id", "category", "source")
    @classmethod
    def _label(cls, value: str | None) -> str | None:
        return _check_text(value)


class InsertResponse(BaseModel):
    """LightRAG's ``InsertResponse``."""

    status: Literal["success", "duplicated", "partial_success", "failure"]
    message: str
    track_id: str


class DeleteDocRequest(BaseModel):
    """LightRAG's ``DeleteDocRequest``."""

    doc_ids: list[Annotated[str, Field(min_length=1, max_length=MAX_LABEL)]] = Field(
        ..., min_length=1, max_length=MAX_TEXTS
    )
    delete_file: bool = False
    delete_llm_cache: bool = False

    @field_validator("doc_ids")
    @classmethod
    def _ids(cls, value: list[str]) -> list[str]:
        for item in value:
            _check_text(item)
        return value


class DeleteDocResponse(BaseModel):
    """LightRAG's ``DeleteDocByIdResponse``."""

    status: Literal["deletion_started", "busy", "not_allowed"]
    message: str
    doc_id: str


@dataclass(frozen=True)
class _Deletion:
    ids: list[str]
    delete_llm_cache: bool = False


@dataclass
class _Doc:
    id: str
    text: str
    file_path: str
    track_id: str
    metadata: dict[str, Any] = field(default_factory=dict)
    status: str = "pending"
    created_at: str = ""
    updated_at: str = ""
    chunks_count: int | None = None
    error_msg: str | None = None

    @classmethod
    def of_row(cls, row: DocRecord, text: str, *, track_id: str,
               status: str = "pending") -> _Doc:
        """The document of a stored status row whose text is ``text`` (``track_id``: when
        the row records none)."""
        return cls(row.id, text, row.file_path, str(row.extra.get("track_id") or track_id),
                   dict(row.metadata), status=status, created_at=row.created_at,
                   updated_at=row.updated_at)

    def view(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "content_summary": self.text[:100],
            "content_length": len(self.text),
            "status": self.status,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "track_id": self.track_id,
            "chunks_count": self.chunks_count,
            "error_msg": self.error_msg,
            "file_path": self.file_path,
        }


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def new_track_id(prefix: str = "upload") -> str:
    """LightRAG's ``generate_track_id``: ``{prefix}_{YYYYmmdd_HHMMSS}_{8 hex}``."""
    return f"{prefix}_{time.strftime('%Y%m%d_%H%M%S')}_{uuid.uuid4().hex[:8]}"


@dataclass
class DocumentQueue:
    """The documents of this server and the single-flight background pipeline."""

    ingestor: Ingestor | None
    why_not: str = (
        "document ingestion is not configured: the stack has no LLM (set llm = "
        "\"openai:MODEL\" in the stack TOML, or HEXRAG_LLM)"
    )
    docs: dict[str, _Doc] = field(default_factory=dict)
    queue: list[str | _Deletion] = field(default_factory=list)
    busy: bool = False
    _latest: str = ""
    history: deque[str] = field(default_factory=lambda: deque(maxlen=50))
    run_done: int = 0
    _task: asyncio.Task[None] | None = None
    #: documents failed on an unreachable or timed-out store, tried again with backoff
    #: (:mod:`hexrag.api.ingest_retry`)
    retries: RetryBook = field(default_factory=RetryBook)
    #: ``POST /documents/cancel_pipeline`` asked to stop: the queued documents fail
    cancelling: bool = False
    job_start: str | None = None
    #: the stack's document store, read when no ingestor is configured (listing only)
    documents_store: Any = None
    #: ``DELETE /documents`` is emptying the stack: new work is refused (409)
    clearing: bool = False
    #: ``POST /documents/scan`` requests reading the input directory now
    scanning: int = 0

    @property
    def store(self) -> Any:
        """The document store the routes read (the ingestor's, else the stack's)."""
        if self.ingestor is not None:
            return self.ingestor.documents
        return self.documents_store

    async def submit(self, texts: list[str], sources: list[str | None],
                     meta: dict[str, str | None], *, track: str = "insert"
                     ) -> InsertResponse:
        """Queue documents; with a document store each one is first written as a
        ``pending`` row holding its text, so that a restarted server resumes it.
        ``track``: the ``track_id``'s prefix (LightRAG's ``insert``, ``upload``,
        ``scan``), or a whole ``track_id`` when it holds an ``_``."""
        if self.ingestor is None or not getattr(self.ingestor, "accepts_documents", True):
            raise ConfigurationError(self.why_not)
        self.refuse_while_clearing()
        track_id = track if "_" in track else new_track_id(track)
        contents = []
        for text in texts:
            content = sanitize_text_for_encoding(text)
            if not content:
                raise InvalidQuery("a document is empty once control characters are removed")
            contents.append(content)
        store = self.ingestor.documents
        stored: dict[str, DocRecord] = {}
        if store is not None:
            ids = [mdhash_id(c, "doc-") for c in contents]
            stored = {r.id: r for r in await store.get_docs(ids) if r is not None}
        added = duplicated = 0
        rows: list[DocRecord] = []
        for content, source in zip(contents, sources, strict=True):
            doc_id = mdhash_id(content, "doc-")
            if ((doc_id in self.docs and self.docs[doc_id].status != "failed")
                    or (doc_id in stored and stored[doc_id].status != "failed")):
                duplicated += 1
                continue
            label = meta.get("source") or source or "unknown_source"
            metadata: dict[str, Any] = {"source": label}
            if meta.get("product_id"):
                metadata["product_id"] = meta["product_id"]
            if meta.get("category"):
                metadata["category_id"] = meta["category"]
            if meta.get("product_id") or meta.get("category"):
                file_path = encode_file_path(metadata)
            else:
                file_path = label
            stamp = _now()
            self.docs[doc_id] = _Doc(doc_id, content, file_path, track_id, metadata,
                                     created_at=stamp, updated_at=stamp)
            self.queue.append(doc_id)
            rows.append(DocRecord(
                id=doc_id, status="pending", file_path=file_path,
                content_summary=content_summary(content), content_length=len(content),
                created_at=stamp, updated_at=stamp, metadata=metadata,
                extra={"content": content, "track_id": track_id},
            ))
            added += 1
        if rows and store is not None:
            await store.upsert_docs(rows)
        if added:
            self._kick()
        if not added:
            return InsertResponse(status="duplicated", track_id=track_id,
                                  message="every document was already received")
        status: Literal["success", "partial_success"] = (
            "success" if not duplicated else "partial_success"
        )
        return InsertResponse(status=status, track_id=track_id,
                              message=f"{added} document(s) queued, {duplicated} duplicate(s)")

    async def resume(self) -> int:
        """Queue the stack's unfinished documents (pending, processing after a crash,
        failed) again; returns how many. Called when the server starts."""
        if self.ingestor is None or self.ingestor.documents is None:
            return 0
        count = 0
        from hexrag.api.resume_policy import current

        policy = current()  # one of several workers: only what nobody is working on
        for row in await self.ingestor.unfinished():
            if row.id in self.docs or not policy.takes(row):
                continue
            self.docs[row.id] = _Doc.of_row(row, row.extra["content"], track_id="resumed")
            self.queue.append(row.id)
            count += 1
        return self._kicked(count, f"resuming {count} unfinished document(s)")

    def _kicked(self, count: int, message: str) -> int:
        """``count`` documents were queued: say ``message`` and start the worker (when any)."""
        if count:
            self.latest_message = message
            self._kick()
        return count

    def _kick(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run())

    def refuse_while_clearing(self) -> None:
        """409 with LightRAG's detail while ``DELETE /documents`` runs."""
        if self.clearing:
            raise HTTPException(status_code=409, detail=(
                "Pipeline is clearing or deleting documents. Wait for the running job to "
                "finish before submitting new work."))

    def delete(self, doc_ids: list[str], *, delete_llm_cache: bool = False
               ) -> DeleteDocResponse:
        if self.ingestor is None:
            raise ConfigurationError(self.why_not)
        if self.clearing:
            return DeleteDocResponse(status="busy", doc_id=", ".join(doc_ids)[:MAX_LABEL],
                                     message="Pipeline is busy with another operation.")
        if self.ingestor.documents is None:
            raise ConfigurationError("deleting documents needs a stack with a document store")
        ids = list(dict.fromkeys(doc_ids))
        self.queue.append(_Deletion(ids, delete_llm_cache))
        self._kick()
        return DeleteDocResponse(
            status="deletion_started", doc_id=", ".join(ids)[:MAX_LABEL],
            message=f"deletion of {len(ids)} document(s) queued",
        )

    async def _run(self) -> None:
        assert self.ingestor is not None
        self.run_done = 0
        self.job_start = _now()
        while self.queue:
            if self.cancelling:
                await self._cancel_queued()
                continue
            item = self.queue.pop(0)
            self.busy = True
            if isinstance(item, _Deletion):
                await self._delete(item)
                continue
            doc = self.docs[item]
            doc.status, doc.updated_at = "processing", _now()
            self.latest_message = f"processing {doc.id}"
            try:
                report = await self.ingestor.ingest_text(
                    doc.text, file_path=doc.file_path, metadata=doc.metadata, doc_id=doc.id
                )
            except Exception as exc:  # recorded on the document, never raised
                message = str(exc) if isinstance(exc, HexragError) else type(exc).__name__
                doc.status, doc.error_msg = "failed", message[:300]
                retry = self.retries.after_failure(doc.id, exc, self._requeue)
                if retry:
                    doc.error_msg = f"{message[:300]} ({retry})"
            else:
                doc.status, doc.chunks_count = "processed", len(report.chunk_ids)
                doc.text = doc.text[:100]  # the summary is all that is shown from now on
                self.retries.forget(doc.id)
                retry = None
            doc.updated_at = _now()
            self.latest_message = f"{doc.status} {doc.id}" + (f" ({retry})" if retry else "")
            self.run_done += 1
        self.busy = False

    def _requeue(self, doc_id: str) -> None:
        """Queue a failed document again (its retry is due)."""
        doc = self.docs.get(doc_id)
        if doc is None or doc.status != "failed" or doc_id in self.queue:
            return  # deleted, sent again or already queued meanwhile
        doc.status, doc.updated_at = "pending", _now()
        self.queue.append(doc_id)
        self.latest_message = f"retrying {doc_id}"
        self._kick()

    async def _delete(self, job: _Deletion) -> None:
        assert self.ingestor is not None
        self.latest_message = f"deleting {len(job.ids)} document(s)"
        try:
            report = await self.ingestor.delete_documents(
                job.ids, delete_llm_cache=job.delete_llm_cache)
        except Exception as exc:  # reported, never raised
            message = str(exc) if isinstance(exc, HexragError) else type(exc).__name__
            self.latest_message = f"deletion failed: {message[:300]}"
            return
        for doc_id in report.deleted:
            self.docs.pop(doc_id, None)
        self.latest_message = (f"deleted {len(report.deleted)} document(s), "
                               f"{len(report.not_found)} not found")

    async def statuses(self) -> dict[str, list[dict[str, Any]]]:
        views: dict[str, dict[str, Any]] = {}
        store = self.store
        if store is not None:
            for rec in await store.list_docs():
                views[rec.id] = {"id": rec.id, **{k: v for k, v in rec.to_json().items()
                                                  if k not in ("seq", "chunks_list", "content")}}
        for doc in self.docs.values():
            if doc.id not in views or doc.status in ("pending", "failed"):
                views[doc.id] = doc.view()
        out: dict[str, list[dict[str, Any]]] = {}
        for view in views.values():
            out.setdefault(str(view["status"]), []).append(view)
        return out

    @property
    def latest_message(self) -> str:
        """The pipeline's last message (also kept in ``history``)."""
        return self._latest

    @latest_message.setter
    def latest_message(self, message: str) -> None:
        self._latest = message
        self.history.append(f"{_now()} {message}")

    def cancel(self) -> None:
        """Stop after the document in progress: the queued documents are marked failed."""
        self.cancelling = True
        self.latest_message = "Pipeline cancellation requested"

    async def _cancel_queued(self) -> None:
        """Mark the queued documents failed (here and on their stored rows); queued
        deletions stay queued."""
        stamp = _now()
        failed = []
        for item in self.queue:
            doc = self.docs.get(item) if isinstance(item, str) else None
            if doc is not None:
                doc.status, doc.error_msg, doc.updated_at = "failed", "User cancelled", stamp
                failed.append(doc.id)
        self.queue[:] = [i for i in self.queue if isinstance(i, _Deletion)]
        self.cancelling = False
        self.latest_message = "Pipeline cancelled: the queued documents are marked failed"
        store = self.store
        if store is not None and failed:
            try:
                rows = [r for r in await store.get_docs(failed) if r is not None]
                await store.upsert_docs([replace(r, status="failed", updated_at=stamp,
                                                 error_msg="User cancelled") for r in rows])
            except Exception as exc:  # reported, never raised
                self.latest_message += f" (status rows not updated: {type(exc).__name__})"

    async def reprocess_failed(self) -> int:
        """Queue again every failed document whose text is kept (this process's, or a
        stored row's); returns how many."""
        if self.ingestor is None or not getattr(self.ingestor, "accepts_documents", True):
            raise ConfigurationError(self.why_not)
        store = self.ingestor.documents
        if store is not None:
            for row in await store.list_docs():
                text = row.extra.get("content")
                if (row.status == "failed" and isinstance(text, str) and text
                        and row.id not in self.docs):
                    self.docs[row.id] = _Doc.of_row(row, text, track_id="", status="failed")
        count = 0
        for doc in self.docs.values():
            if doc.status == "failed" and doc.id not in self.queue and len(doc.text) > 0:
                doc.status, doc.error_msg, doc.updated_at = "pending", None, _now()
                self.queue.append(doc.id)
                count += 1
        return self._kicked(count, f"reprocessing {count} failed document(s)")

    async def mark_duplicates(self, doc_ids: list[str], primary: str) -> None:
        """Mark stored documents as duplicates of ``primary`` (LightRAG's source-conflict
        repair: ``metadata.is_duplicate``; content is never deleted)."""
        store = self.store
        if store is None:
            raise ConfigurationError("this stack keeps no document status rows")
        rows = [r for r in await store.get_docs(doc_ids) if r is not None]
        await store.upsert_docs([replace(r, metadata={
            **r.metadata, "is_duplicate": True, "original_doc_id": primary}) for r in rows])

    def pipeline(self) -> dict[str, Any]:
        waiting = len(self.queue) + (1 if self.busy else 0)
        return {
            "busy": self.busy or self.clearing,
            "docs": waiting,
            # LightRAG's progress fields: work items done in this run / in this run overall
            "cur_batch": self.run_done if self.busy or waiting else 0,
            "batchs": self.run_done + waiting if self.busy or waiting else 0,
            "history_messages": list(self.history)[-20:],
            "queued_deletions": sum(isinstance(i, _Deletion) for i in self.queue),
            "job_name": "hexrag ingestion" if self.job_start else "-",
            # LightRAG's PipelineStatusResponse fields (hexrag raises no recovery fence)
            "job_start": self.job_start,
            "update_status": {},
            "recovery_required": False,
            "recovery_kind": None,
            "recovery_message": None,
            "cancellation_requested": self.cancelling,
            "destructive_busy": self.clearing or any(isinstance(i, _Deletion)
                                                     for i in self.queue),
            "scanning": self.scanning > 0,
            "scanning_exclusive": False,
            "pending_enqueues": 0,
            "latest_message": self.latest_message,
            **self.retries.view(),
        }


def _upload_name(part: UploadFile) -> str:
    """The checked base name of an uploaded file part (422 when missing or unsafe)."""
    name = (part.filename or "").replace("\\", "/").rsplit("/", 1)[-1].strip()
    if not name:
        raise InvalidQuery("the uploaded file has no name")
    try:
        _check_text(name)
    except ValueError as exc:
        raise InvalidQuery(f"file name: {exc}") from None
    if len(name) > MAX_LABEL:
        raise InvalidQuery(f"the file name is longer than {MAX_LABEL} characters")
    return name


def bind_store(request: Request) -> None:
    """Give the app's document queue the stack's document store (``app.state.sections``,
    set by :func:`hexrag.serving.stack_app`) when it has no ingestor of its own."""
    queue = request.app.state.documents
    if queue.ingestor is None and queue.documents_store is None:
        sections = getattr(request.app.state, "sections", None)
        queue.documents_store = getattr(sections, "documents", None)


def add_document_routes(
    app: FastAPI, queue: DocumentQueue, *, responses: dict[int | str, dict[str, Any]] | None = None
) -> None:
    """Mount the document endpoints on ``app`` (see the module docstring); ``responses``
    documents the error answers they share with the other routes."""
    app.state.documents = queue

    async def _resume() -> None:
        try:
            await queue.resume()
        except Exception as exc:  # a store that is down must not stop the server
            queue.latest_message = f"could not resume unfinished documents: {type(exc).__name__}"

    hooks = getattr(app.state, "startup_hooks", None)
    if hooks is not None:
        hooks.append(_resume)
    errors = dict(responses or {})

    @app.post("/documents/text", response_model=InsertResponse, tags=["documents"],
              responses=errors)
    async def insert_text(req: InsertTextRequest) -> InsertResponse:
        """Queue one document for ingestion (LightRAG's endpoint)."""
        return await queue.submit([req.text], [req.file_source], req.model_dump(
            include={"product_id", "category", "source"}))

    @app.post("/documents/texts", response_model=InsertResponse, tags=["documents"],
              responses=errors)
    async def insert_texts(req: InsertTextsRequest) -> InsertResponse:
        """Queue several documents for ingestion (LightRAG's endpoint)."""
        sources: list[str | None] = list(req.file_sources or [])
        if sources and len(sources) != len(req.texts):
            raise InvalidQuery("file_sources must have one entry per text")
        return await queue.submit(req.texts, sources or [None] * len(req.texts), req.model_dump(
            include={"product_id", "category", "source"}))

    @app.post("/documents/upload", response_model=InsertResponse, tags=["documents"],
              responses=errors)
    async def upload(
        file: Annotated[list[UploadFile], File(description=(
            "A .txt, .md, .pdf or .docx document; several `file` parts queue one document "
            f"each (at most {MAX_UPLOAD_FILES})."))],
        product_id: Annotated[str | None, Form(max_length=MAX_LABEL)] = None,
        category: Annotated[str | None, Form(max_length=MAX_LABEL)] = None,
        source: Annotated[str | None, Form(max_length=MAX_LABEL)] = None,
    ) -> InsertResponse:
        """Queue uploaded files for ingestion (LightRAG's endpoint, which takes one `file`
        part; here each `file` part is one document, all parsed before any is queued, so a
        bad one refuses the whole upload with 422). PDF and DOCX need the ``docs`` extra.
        The body is bounded by ``MAX_UPLOAD_BYTES``; the text is extracted in a separate
        process under the parser limits (``MAX_DECOMPRESSED_BYTES``, ``MAX_DOCUMENT_ELEMENTS``,
        ``MAX_DOCUMENT_CHARS``, ``MAX_PDF_PAGES``, ``PARSE_TIMEOUT``, ``PARSE_MEMORY_BYTES``:
        :mod:`hexrag.parsers`); a file over one is refused with 422 naming it."""
        from hexrag.api.parse_pool import shared_pool
        from hexrag.parsers import TEXT_SUFFIXES, document_text

        if len(file) > MAX_UPLOAD_FILES:
            raise InvalidQuery(f"{len(file)} file parts: at most {MAX_UPLOAD_FILES} "
                               "per upload")
        names = [_upload_name(part) for part in file]
        for label, value in (("product_id", product_id), ("category", category),
                             ("source", source)):
            try:
                _check_text(value)
            except ValueError as exc:
                raise InvalidQuery(f"{label}: {exc}") from None
        if queue.ingestor is None:
            raise ConfigurationError(queue.why_not)
        pool = shared_pool()
        texts = []
        for part, name in zip(file, names, strict=True):
            data = await part.read()
            if PurePath(name).suffix.lower() in TEXT_SUFFIXES:  # a decode: no worker needed
                texts.append(await asyncio.to_thread(document_text, data, name, pool.limits))
            else:
                texts.append(await pool.parse(data, name))
        reply = await queue.submit(texts, list(names), {"product_id": product_id or None,
                                                        "category": category or None,
                                                        "source": source or None},
                                   track="upload")
        if len(names) > 1:
            listed = ", ".join(names)
            listed = listed if len(listed) <= 300 else listed[:297] + "..."
            reply.message = f"{reply.message} from {len(names)} files: {listed}"
        return reply

    @app.get("/documents", tags=["documents"], dependencies=[Depends(bind_store)],
             responses={k: v for k, v in errors.items() if k in (403, 500)})
    async def documents() -> dict[str, Any]:
        """Every document this server received, by status (LightRAG's ``statuses`` shape)."""
        return {"statuses": await queue.statuses()}

    @app.delete("/documents/delete_document", response_model=DeleteDocResponse,
                tags=["documents"], responses=errors)
    async def delete_document(req: DeleteDocRequest) -> DeleteDocResponse:
        """Queue an exact deletion of documents (LightRAG's endpoint): their chunks,
        vectors and fragments go, the entities and relations they touched are rebuilt
        from the remaining documents."""
        return queue.delete(req.doc_ids, delete_llm_cache=req.delete_llm_cache)

    @app.get("/documents/pipeline_status", tags=["documents"], responses={
        k: v for k, v in errors.items() if k in (403, 500)})
    async def pipeline_status() -> dict[str, Any]:
        """Whether the ingestion pipeline is busy and how many documents wait."""
        return queue.pipeline()
