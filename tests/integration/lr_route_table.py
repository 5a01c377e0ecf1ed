"""The route tables of LightRAG 1.5.7's server and of hexrag's app, as ``(method, path)`` sets.

:func:`route_table` flattens a FastAPI app's routes (routers included lazily by FastAPI
0.16x, mounts as ``("MOUNT", path)``). ``python -m tests.integration.lr_route_table`` prints
LightRAG's own table as JSON: ``lightrag_server.create_app`` exactly as ``lightrag-server``
builds it, configured by the environment (:func:`lightrag_env`), in a process of its own
(LightRAG keeps process-wide state). No request is served and no model is called.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
#: LightRAG's API documentation pages (FastAPI's own), not part of the 45 routes.
DOCS_ROUTES = frozenset({("GET", "/openapi.json"), ("HEAD", "/openapi.json"),
                         ("GET", "/redoc"), ("HEAD", "/redoc"), ("GET", "/docs"),
                         ("GET", "/docs/oauth2-redirect"), ("MOUNT", "/static/swagger-ui")})


def route_table(routes: Sequence[Any], prefix: str = "") -> Iterator[tuple[str, str]]:
    """Every ``(METHOD, path)`` of ``routes`` (an app's ``routes``), mounts as ``MOUNT``."""
    from starlette.routing import Mount

    for route in routes:
        inner = getattr(route, "original_router", None)  # FastAPI's lazily included router
        if inner is not None:
            yield from route_table(inner.routes, prefix + route.include_context.prefix)
            continue
        if isinstance(route, Mount):
            yield ("MOUNT", prefix + route.path)
            continue
        for method in sorted(getattr(route, "methods", None) or ()):
            yield (method, prefix + route.path)


def lightrag_env(tmp: Path) -> dict[str, str]:
    """A clean environment for LightRAG's server on ``tmp`` (a model URL nobody answers)."""
    env = {k: v for k, v in os.environ.items()
           if k in ("PATH", "HOME", "LANG", "TMPDIR", "VIRTUAL_ENV")}
    env.update({
        "PYTHONPATH": str(REPO), "WORKING_DIR": str(tmp / "rag"), "INPUT_DIR": str(tmp / "in"),
        "LLM_BINDING": "openai", "LLM_BINDING_HOST": "http://127.0.0.1:9",
        "LLM_BINDING_API_KEY": "stub", "LLM_MODEL": "standin", "EMBEDDING_BINDING": "openai",
        "EMBEDDING_BINDING_HOST": "http://127.0.0.1:9", "EMBEDDING_BINDING_API_KEY": "stub",
        "EMBEDDING_MODEL": "standin-embed", "EMBEDDING_DIM": "32", "LOG_LEVEL": "WARNING",
    })
    return env


def lightrag_routes(tmp: Path) -> set[tuple[str, str]]:
    """LightRAG 1.5.7's route table (its own process)."""
    out = subprocess.run([sys.executable, "-m", "tests.integration.lr_route_table"],
                         env=lightrag_env(tmp), cwd=tmp, capture_output=True, text=True,
                         timeout=300, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"LightRAG's create_app failed: {out.stderr[-4000:]}")
    return {(m, p) for m, p in json.loads(out.stdout.strip().splitlines()[-1])}


def main() -> None:
    """Print LightRAG's route table as one JSON line."""
    from hexrag.devtools.lightrag_data import register_offline_tiktoken

    register_offline_tiktoken()
    sys.argv = ["lightrag-server"]
    from lightrag.api.config import global_args, initialize_config

    initialize_config()
    from lightrag.api.lightrag_server import create_app

    app = create_app(global_args)
    print(json.dumps(sorted(set(route_table(app.routes)))))


if __name__ == "__main__":
    main()
