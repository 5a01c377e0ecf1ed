"""LightRAG's document-side key-value stores in a working directory.

LightRAG 1.5.7's ``JsonKVStorage`` keeps each namespace of
:data:`hexrag.ports.cache.KV_NAMESPACES` in ``kv_store_<namespace>.json``: one JSON object,
key -> record, written with ``json.dump(..., indent=2, ensure_ascii=False)``. Every record
carries ``create_time``, ``update_time`` (epoch seconds) and ``_id`` (its key), stamped by
``JsonKVStorage.upsert``. The records are:

===================  ============================  ===============================================
namespace            key                           record
===================  ============================  ===============================================
``full_docs``        document id                   ``content``, ``file_path``, ``parse_format``,
                                                   ``content_hash``, ``chunk_options``...
``full_entities``    document id                   ``entity_names`` (list), ``count``
``full_relations``   document id                   ``relation_pairs`` (list of ``[src, tgt]``),
                                                   ``count``
``entity_chunks``    entity name                   ``chunk_ids`` (list), ``count``
``relation_chunks``  ``src<SEP>tgt`` (sorted)      ``chunk_ids`` (list), ``count``
===================  ============================  ===============================================

:func:`load_kv` reads a directory's files into :class:`~hexrag.adapters.memory.MemoryCache`
stores (one per namespace, ``namespace`` set), :func:`stage_kv` / :func:`save_kv` write them
back in LightRAG's format, so LightRAG reads what hexrag wrote and the other way round.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, Any

from hexrag.adapters.memory import MemoryCache
from hexrag.adapters.workdir.files import AtomicWriter, read_json_kv, write_json_kv
from hexrag.domain.errors import ConfigurationError
from hexrag.ports.cache import KV_NAMESPACES, Cache

__all__ = ["kv_file_name", "load_kv", "save_kv", "stage_kv"]


def kv_file_name(namespace: str) -> str:
    """``kv_store_<namespace>.json``, the file LightRAG's ``JsonKVStorage`` writes."""
    if namespace not in KV_NAMESPACES:
        raise ConfigurationError(
            f"unknown key-value namespace {namespace!r}; expected one of {list(KV_NAMESPACES)}"
        )
    return f"kv_store_{namespace}.json"


def load_kv(
    directory: str | Path, namespaces: Iterable[str] = KV_NAMESPACES
) -> dict[str, MemoryCache]:
    """The ``namespaces`` of a working directory as memory stores (an absent or empty file
    gives an empty store). Raises :class:`~hexrag.core.errors.ConfigurationError` naming
    the file when one is not a JSON object of objects."""
    base = Path(directory)
    out: dict[str, MemoryCache] = {}
    for ns in namespaces:
        path = base / kv_file_name(ns)
        raw = read_json_kv(path) or {}
        for key, value in raw.items():
            if not isinstance(value, dict):
                raise ConfigurationError(
                    f"{path}: the record of {key!r} must be a JSON object, "
                    f"found {type(value).__name__}"
                )
        out[ns] = MemoryCache(ns, raw)
    return out


def _entries(store: Cache | MemoryCache) -> dict[str, Any]:
    if isinstance(store, MemoryCache):
        return dict(store.items())
    raise ConfigurationError(
        f"writing a working directory needs memory key-value stores, got {type(store).__name__}"
    )


def _write(fh: IO[str], *, data: dict[str, Any]) -> None:
    write_json_kv(fh, data)


def stage_kv(
    writer: AtomicWriter, directory: Path, kv: Mapping[str, Cache], *, keep_empty: bool = False
) -> list[str]:
    """Stage every namespace of ``kv`` as its ``kv_store_<namespace>.json`` in ``directory``;
    an empty store is written only when its file exists or ``keep_empty`` is set (LightRAG
    writes ``{}``). Returns the file names staged."""
    staged: list[str] = []
    for ns, store in kv.items():
        name = kv_file_name(ns)
        entries = _entries(store)
        if not entries and not keep_empty and not (directory / name).exists():
            continue
        writer.stage(directory / name, functools.partial(_write, data=entries))
        staged.append(name)
    return staged


def save_kv(directory: str | Path, kv: Mapping[str, Cache], *, keep_empty: bool = False) -> None:
    """Write ``kv`` into ``directory`` (all files or none: :class:`AtomicWriter`)."""
    base = Path(directory)
    base.mkdir(parents=True, exist_ok=True)
    writer = AtomicWriter()
    try:
        stage_kv(writer, base, kv, keep_empty=keep_empty)
        writer.commit()
    except BaseException:
        writer.abort()
        raise
