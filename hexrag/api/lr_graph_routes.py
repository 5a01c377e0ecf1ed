"""LightRAG 1.5.7's graph routes (``lightrag/api/routers/graph_routes.py``) on hexrag.

``GET /graph/label/list``, ``/graph/label/popular``, ``/graph/label/search``, ``/graphs``
(a label's subgraph: LightRAG's BFS, ``max_depth`` / ``max_nodes``, ``is_truncated``),
``/graph/entity/exists``; ``POST /graph/entity/create``, ``/graph/entity/edit``,
``/graph/relation/create``, ``/graph/relation/edit``, ``/graph/entities/merge``;
``DELETE /graph/entity/delete``, ``/graph/relation/delete``. Request models, response
bodies, status codes (400 with LightRAG's message for a refused edit, 404 for a missing
entity or relation on delete, 409 while the document pipeline is busy) are LightRAG's.

The reads and edits are :mod:`hexrag.core.ingest.graph_view` and
:class:`~hexrag.core.ingest.graph_edit.GraphEditor` over the stack's stores: an edit
re-embeds with the stack's embedder, keeps chunk tracking and fragments, and the corpus
version wrappers retire cached answers. A working directory held in memory is written back
after each edit (``app.state.commit``, set by :func:`hexrag.serving.stack_app`).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, HTTPException, Query, Request
from pydantic import AfterValidator, BaseModel, Field, field_validator, model_validator

from hexrag.core.errors import NotFound
from hexrag.core.ingest import graph_view
from hexrag.core.ingest.graph_edit import GraphEditor

__all__ = ["add_lr_graph_routes", "graph_editor"]

MAX_NAME = 1024


def _name(value: str) -> str:
    if not value or not value.strip():
        raise ValueError("Entity name cannot be empty")
    return value.strip()


#: An entity name in a request body: at most MAX_NAME characters, stripped, not blank.
EntityName = Annotated[str, Field(max_length=MAX_NAME), AfterValidator(_name)]
#: The same, with at least one character before stripping (LightRAG's ``min_length=1``).
NewEntityName = Annotated[str, Field(min_length=1, max_length=MAX_NAME), AfterValidator(_name)]


class EntityUpdateRequest(BaseModel):
    """LightRAG's ``EntityUpdateRequest``."""

    entity_name: EntityName
    updated_data: dict[str, Any]
    allow_rename: bool = False
    allow_merge: bool = False

    @model_validator(mode="after")
    def _rename_target(self) -> EntityUpdateRequest:
        if "entity_name" in self.updated_data:
            new = self.updated_data["entity_name"]
            if not isinstance(new, str):
                raise ValueError("Entity name cannot be empty")
            self.updated_data["entity_name"] = _name(new)
        return self


class RelationUpdateRequest(BaseModel):
    """LightRAG's ``RelationUpdateRequest``."""

    source_id: EntityName
    target_id: EntityName
    updated_data: dict[str, Any]


class EntityMergeRequest(BaseModel):
    """LightRAG's ``EntityMergeRequest``."""

    entities_to_change: list[str] = Field(..., min_length=1, max_length=1000)
    entity_to_change_into: NewEntityName

    @field_validator("entities_to_change", mode="after")
    @classmethod
    def _sources(cls, value: list[str]) -> list[str]:
        return [_name(v) for v in value]


class EntityCreateRequest(BaseModel):
    """LightRAG's ``EntityCreateRequest``."""

    entity_name: NewEntityName
    entity_data: dict[str, Any]


class DeleteEntityRequest(BaseModel):
    """LightRAG's ``DeleteEntityRequest``."""

    entity_name: EntityName


class DeleteRelationRequest(BaseModel):
    """LightRAG's ``DeleteRelationRequest``."""

    source_entity: EntityName
    target_entity: EntityName


class RelationCreateRequest(BaseModel):
    """LightRAG's ``RelationCreateRequest``."""

    source_entity: NewEntityName
    target_entity: NewEntityName
    relation_data: dict[str, Any]


class DeletionResult(BaseModel):
    """LightRAG's ``DeletionResult``."""

    status: str
    doc_id: str
    message: str
    status_code: int = 200
    file_path: str | None = None


def graph_editor(app: FastAPI) -> GraphEditor:
    """The :class:`GraphEditor` over the app's stack: ``app.state.sections`` (the stack's
    :class:`~hexrag.ports.stack.Stack`, with its chunk tracking and fragments) when set,
    else the engine's stores; the engine's embedder."""
    editor: GraphEditor | None = getattr(app.state, "graph_editor", None)
    if editor is not None:
        return editor
    engine = app.state.engine
    sections = getattr(app.state, "sections", None)
    src = sections if sections is not None else engine.stores
    if engine.embedder is None:
        from hexrag.core.errors import ConfigurationError

        raise ConfigurationError("editing the graph needs the stack's embedder")
    tracking = {ns: store for ns, store in (getattr(sections, "kv", None) or {}).items()
                if ns in ("entity_chunks", "relation_chunks")}
    editor = GraphEditor(
        graph=src.graph, entities=src.entities, relationships=src.relationships,
        embedder=engine.embedder, clock=lambda: int(time.time()), tracking=tracking,
        fragments=getattr(sections, "documents", None),
    )
    app.state.graph_editor = editor
    return editor


def _max_graph_nodes() -> int:
    """LightRAG's ``MAX_GRAPH_NODES`` (default 1000): the most nodes ``/graphs`` returns."""
    raw = os.environ.get("MAX_GRAPH_NODES", "")
    try:
        value = int(raw) if raw.strip() else graph_view.DEFAULT_MAX_GRAPH_NODES
    except ValueError:
        return graph_view.DEFAULT_MAX_GRAPH_NODES
    return max(1, value)


def _busy(app: FastAPI) -> None:
    queue = getattr(app.state, "documents", None)
    if queue is not None and queue.busy:
        raise HTTPException(status_code=409, detail=(
            "Pipeline is busy with another operation. Wait for the running job to finish "
            "before editing the knowledge graph."))


def add_lr_graph_routes(app: FastAPI, *, responses: dict[int | str, dict[str, Any]] | None = None
                        ) -> None:
    """Mount LightRAG's graph routes on ``app`` (see the module docstring)."""
    router = APIRouter(tags=["graph"], responses=responses or {})
    lock = asyncio.Lock()  # one edit at a time (LightRAG's keyed graph lock)

    def graph(request: Request) -> Any:
        app_ = request.app
        sections = getattr(app_.state, "sections", None)
        return (sections if sections is not None else app_.state.engine.stores).graph

    async def edit(request: Request, work: Callable[[GraphEditor], Awaitable[Any]]) -> Any:
        _busy(request.app)
        editor = graph_editor(request.app)
        async with lock:
            try:
                result = await work(editor)
            except NotFound:
                raise
            except ValueError as exc:
                raise HTTPException(status_code=400, detail=str(exc)) from None
            commit = getattr(request.app.state, "commit", None)
            if commit is not None:
                await commit()
        return result

    @router.get("/graph/label/list")
    async def get_graph_labels(request: Request) -> list[str]:
        """Every entity name, sorted."""
        return await graph_view.all_labels(graph(request))

    @router.get("/graph/label/popular")
    async def get_popular_labels(
        request: Request,
        limit: int = Query(300, description="Maximum number of popular labels to return",
                           ge=1, le=1000),
    ) -> list[str]:
        """Entity names by degree (highest first), ties by name."""
        return await graph_view.popular_labels(graph(request), limit)

    @router.get("/graph/label/search")
    async def search_labels(
        request: Request,
        q: str = Query(..., description="Search query string", max_length=MAX_NAME),
        limit: int = Query(50, description="Maximum number of search results to return",
                           ge=1, le=100),
    ) -> list[str]:
        """Entity names matching ``q``, most relevant first."""
        return await graph_view.search_labels(graph(request), q, limit)

    @router.get("/graphs")
    async def get_knowledge_graph(
        request: Request,
        label: str = Query(..., description="Label to get knowledge graph for",
                           max_length=MAX_NAME),
        max_depth: int = Query(3, description="Maximum depth of graph", ge=1),
        max_nodes: int = Query(1000, description="Maximum nodes to return", ge=1),
    ) -> dict[str, Any]:
        """The subgraph around ``label`` (``*``: the best-connected nodes)."""
        return await graph_view.knowledge_graph(graph(request), label, max_depth, max_nodes,
                                                max_graph_nodes=_max_graph_nodes())

    @router.get("/graph/entity/exists")
    async def check_entity_exists(
        request: Request,
        name: str = Query(..., description="Entity name to check", max_length=MAX_NAME),
    ) -> dict[str, bool]:
        """Whether the entity exists."""
        return {"exists": bool(await graph(request).get_nodes([name]))}

    @router.post("/graph/entity/edit")
    async def update_entity(request: Request, req: EntityUpdateRequest) -> dict[str, Any]:
        """Update (rename, merge into an existing name) an entity."""
        result = await edit(request, lambda e: e.edit_entity(
            req.entity_name, req.updated_data, allow_rename=req.allow_rename,
            allow_merge=req.allow_merge))
        summary = result.pop("operation_summary")
        message = (f"Entity merged successfully into '{summary['final_entity']}'"
                   if summary.get("merged") else "Entity updated successfully")
        return {"status": "success", "message": message, "data": result,
                "operation_summary": summary}

    @router.post("/graph/relation/edit")
    async def update_relation(request: Request, req: RelationUpdateRequest) -> dict[str, Any]:
        """Update a relation's properties."""
        result = await edit(request, lambda e: e.edit_relation(
            req.source_id, req.target_id, req.updated_data))
        return {"status": "success", "message": "Relation updated successfully", "data": result}

    @router.post("/graph/entity/create")
    async def create_entity(request: Request, req: EntityCreateRequest) -> dict[str, Any]:
        """Create an entity (embedded with the stack's embedder)."""
        result = await edit(request, lambda e: e.create_entity(req.entity_name,
                                                               req.entity_data))
        name = result.get("entity_name", req.entity_name)
        return {"status": "success", "message": f"Entity '{name}' created successfully",
                "data": result}

    @router.post("/graph/relation/create")
    async def create_relation(request: Request, req: RelationCreateRequest) -> dict[str, Any]:
        """Create a relation between two existing entities."""
        result = await edit(request, lambda e: e.create_relation(
            req.source_entity, req.target_entity, req.relation_data))
        return {"status": "success",
                "message": (f"Relation created successfully between '{req.source_entity}' "
                            f"and '{req.target_entity}'"),
                "data": result}

    @router.post("/graph/entities/merge")
    async def merge_entities(request: Request, req: EntityMergeRequest) -> dict[str, Any]:
        """Merge entities into one (relations moved, duplicates merged)."""
        result = await edit(request, lambda e: e.merge_entities(
            req.entities_to_change, req.entity_to_change_into))
        name = result.get("entity_name", req.entity_to_change_into)
        return {"status": "success",
                "message": (f"Successfully merged {len(req.entities_to_change)} entities "
                            f"into '{name}'"),
                "data": result}

    @router.delete("/graph/entity/delete", response_model=DeletionResult,
                    responses={404: {"description": "No such entity"}})
    async def delete_entity(request: Request, req: DeleteEntityRequest) -> DeletionResult:
        """Delete an entity and its relations (404 when there is none)."""
        try:
            message = await edit(request, lambda e: e.delete_entity(req.entity_name))
        except NotFound as exc:
            raise HTTPException(status_code=404, detail=str(exc)) from None
        return DeletionResult(status="success", doc_id="", message=message)

    @router.delete("/graph/relation/delete", response_model=DeletionResult,
                    responses={404: {"description": "No such relation"}})
    async def delete_relation(request: Request, req: DeleteRelationRequest) -> DeletionResult:
        """Delete the relation between two entities (404 when there is none)."""
        try:
            message = await edit(request, lambda e: e.delete_relation(
                req.source_entity, req.target_entity))
        except NotFound as exc:
            raise HTTPException(status_code=404, detail=str(exc)) from None
        return DeletionResult(status="success", doc_id="", message=message)

    app.include_router(router)
