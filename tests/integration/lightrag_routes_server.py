"""LightRAG 1.5.7's own server routes on a working directory, run as a separate process.

``python -m tests.integration.lightrag_routes_server ROOT WORKSPACE INPUT_DIR DIM PORT``
serves a FastAPI app built the way ``lightrag_server.create_app`` builds it: LightRAG's
``create_document_routes`` and ``create_graph_routes`` routers over a ``LightRAG`` object
on ``ROOT/WORKSPACE`` (default file storages), storages initialised in the app's lifespan.
The embedding function is hexrag's ``HashingEmbedder(DIM)`` (the hexrag side of a test uses
the same one); the LLM refuses every call (no route under test needs one).

LightRAG keeps process-wide shared state, hence a process of its own per server.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator


def main() -> None:
    """Serve until killed."""
    root, workspace, input_dir, dim, port = sys.argv[1:6]
    sys.argv = sys.argv[:1]
    import uvicorn
    from fastapi import FastAPI

    from hexrag.adapters.memory import HashingEmbedder
    from hexrag.devtools.lightrag_data.lightrag_side import new_lightrag

    rag = new_lightrag(HashingEmbedder(int(dim)), working_dir=root, workspace=workspace,
                       kg_chunk_pick_method="WEIGHT", cosine_threshold=0.2)
    from lightrag.api.routers.document_routes import DocumentManager, create_document_routes
    from lightrag.api.routers.graph_routes import create_graph_routes
    from lightrag.kg.shared_storage import finalize_share_data

    @contextlib.asynccontextmanager
    async def lifespan(app_: FastAPI) -> AsyncIterator[None]:
        app_.state.background_tasks = set()  # as LightRAG's lifespan
        await rag.initialize_storages()
        try:
            yield
        finally:
            await rag.finalize_storages()
            finalize_share_data()

    app = FastAPI(lifespan=lifespan)
    app.include_router(create_document_routes(rag, DocumentManager(input_dir,
                                                                   workspace=workspace)))
    app.include_router(create_graph_routes(rag))
    uvicorn.run(app, host="127.0.0.1", port=int(port), log_level="warning")


if __name__ == "__main__":
    main()
