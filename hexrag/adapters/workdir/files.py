"""File names of a LightRAG working directory, JSON KV files, and atomic replacement."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from hexrag.domain.errors import ConfigurationError

__all__ = [
    "DOC_STATUS_FILE",
    "FRAGMENTS_FILE",
    "GRAPH_FILE",
    "LLM_CACHE_FILE",
    "TEXT_CHUNKS_FILE",
    "VDB_FILES",
    "AtomicWriter",
    "is_lightrag_file",
    "read_json_kv",
    "tmp_sibling",
    "write_json_kv",
]

GRAPH_FILE = "graph_chunk_entity_relation.graphml"
VDB_FILES = {
    "entities": "vdb_entities.json",
    "relationships": "vdb_relationships.json",
    "chunks": "vdb_chunks.json",
}
TEXT_CHUNKS_FILE = "kv_store_text_chunks.json"
#: LightRAG's document status file (hexrag writes LightRAG's fields plus ``seq``).
DOC_STATUS_FILE = "kv_store_doc_status.json"
#: hexrag's description fragments (LightRAG ignores the file).
FRAGMENTS_FILE = "kv_store_hexrag_fragments.json"
LLM_CACHE_FILE = "kv_store_llm_response_cache.json"


def is_lightrag_file(name: str) -> bool:
    """True for a file name LightRAG's default storages write in a working directory."""
    return (
        name == GRAPH_FILE
        or name in VDB_FILES.values()
        or (name.startswith("kv_store_") and name.endswith(".json"))
    )


def read_json_kv(path: Path) -> dict[str, Any] | None:
    """A JSON KV file as LightRAG reads it (``utf-8-sig``; empty or blank file = missing).

    ``None`` when the file is missing or blank. Raises
    :class:`~hexrag.core.errors.ConfigurationError` naming the file on malformed JSON or a
    top level that is not an object.
    """
    try:
        with open(path, encoding="utf-8-sig") as fh:
            text = fh.read()
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise ConfigurationError(f"{path} is not UTF-8 text: {exc}") from exc
    if not text.strip():
        return None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigurationError(f"malformed JSON in {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigurationError(
            f"{path} must hold a JSON object (key -> record), found {type(data).__name__}"
        )
    return data


def write_json_kv(fh: IO[str], data: dict[str, Any]) -> None:
    """Write ``data`` as LightRAG's ``write_json`` does (``indent=2``, ``ensure_ascii=False``)."""
    json.dump(data, fh, indent=2, ensure_ascii=False)


def tmp_sibling(final: Path) -> Path:
    """A per-writer temporary next to ``final``, named as LightRAG names its own
    (``<file>.tmp.<pid>.<tid>.<ns>``), so LightRAG's orphan reaper removes a leftover."""
    return final.with_name(
        f"{final.name}.tmp.{os.getpid()}.{threading.get_ident()}.{time.time_ns()}"
    )


class AtomicWriter:
    """Stage several files as temporaries, then publish them all with ``os.replace``.

    Every file is fully written and flushed to disk before the first rename, so a failure
    while writing leaves the directory exactly as it was (temporaries are removed). Each
    rename is atomic; readers never see a half-written file.
    """

    def __init__(self) -> None:
        self._staged: list[tuple[Path, Path]] = []

    def stage(self, final: Path, write: Callable[[IO[str]], None]) -> None:
        """Write ``final``'s new content to a temporary sibling through ``write(stream)``."""
        tmp = tmp_sibling(final)
        self._staged.append((tmp, final))
        with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        if final.exists():
            try:
                os.chmod(tmp, final.stat().st_mode & 0o7777)
            except OSError:
                pass

    def stage_bytes(self, final: Path, content: bytes) -> None:
        """Stage ``content`` verbatim."""
        tmp = tmp_sibling(final)
        self._staged.append((tmp, final))
        with open(tmp, "wb") as fh:
            fh.write(content)
            fh.flush()
            os.fsync(fh.fileno())

    def commit(self) -> None:
        """Rename every staged temporary onto its final name."""
        for tmp, final in self._staged:
            os.replace(tmp, final)
        self._staged.clear()

    def abort(self) -> None:
        """Remove the temporaries (best effort)."""
        for tmp, _ in self._staged:
            try:
                tmp.unlink()
            except OSError:
                pass
        self._staged.clear()
