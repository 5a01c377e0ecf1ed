"""``MemoryManifestStore``: a memory stack's manifest, held in the value itself."""

from __future__ import annotations

from hexrag.ports.stack import StackManifest

__all__ = ["MemoryManifestStore"]


class MemoryManifestStore:
    """The :class:`~hexrag.ports.stack.ManifestStore` of a memory stack."""

    def __init__(self, manifest: StackManifest | None = None) -> None:
        self._manifest = manifest

    async def read(self) -> StackManifest | None:
        """The manifest written so far (``None``: none)."""
        return self._manifest

    async def write(self, manifest: StackManifest) -> None:
        """Keep ``manifest``."""
        self._manifest = manifest

    def __repr__(self) -> str:
        return f"MemoryManifestStore({self._manifest!r})"
