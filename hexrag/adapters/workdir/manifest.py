"""``WorkdirManifestStore``: a working directory's manifest, ``hexrag_manifest.json``.

LightRAG 1.5.7 reads only its own ``kv_store_*``, ``vdb_*`` and GraphML files, so the
hexrag-owned ``hexrag_manifest.json`` beside them is ignored by LightRAG (and kept when
LightRAG writes the directory). A write is held until :meth:`WorkdirManifestStore.flush`,
which the working directory's commit calls after its files are written: an interrupted
import or ingestion leaves no manifest naming data that was never written.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from hexrag.domain.errors import ConfigurationError
from hexrag.ports.stack import StackManifest

__all__ = ["MANIFEST_FILE", "WorkdirManifestStore"]

MANIFEST_FILE = "hexrag_manifest.json"


class WorkdirManifestStore:
    """The :class:`~hexrag.ports.stack.ManifestStore` of the working directory ``directory``
    (the workspace folder itself, i.e. ``<working_dir>/<workspace>``)."""

    def __init__(self, directory: str | Path) -> None:
        self.path = Path(directory) / MANIFEST_FILE
        self._pending: StackManifest | None = None

    async def read(self) -> StackManifest | None:
        """The manifest written (or about to be: a pending write wins); ``None``: none."""
        if self._pending is not None:
            return self._pending
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ConfigurationError(f"cannot read {self.path}: {exc}") from None
        try:
            data = json.loads(text)
        except ValueError:
            raise ConfigurationError(f"{self.path} is not JSON: the manifest is damaged") from None
        if not isinstance(data, dict):
            raise ConfigurationError(f"{self.path} is not a JSON object")
        return StackManifest.from_json(data, where=str(self.path.parent))

    async def write(self, manifest: StackManifest) -> None:
        """Hold ``manifest`` until :meth:`flush` (the directory's commit)."""
        self._pending = manifest

    @property
    def pending(self) -> bool:
        """Whether a write waits for :meth:`flush`."""
        return self._pending is not None

    def flush(self) -> None:
        """Write a pending manifest, atomically (a temporary sibling renamed over)."""
        if self._pending is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{MANIFEST_FILE}.tmp.{os.getpid()}")
        tmp.write_text(json.dumps(self._pending.to_json(), indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, self.path)
        self._pending = None
