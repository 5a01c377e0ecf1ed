"""HTTP API (FastAPI): a thin driving adapter over the engine."""

from hexrag.api.app import create_app

__all__ = ["create_app"]
