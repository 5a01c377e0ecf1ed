"""Chunk <-> JSON, in one place (LightRAG's flat ``text_chunks`` record shape).

A chunk is stored as one flat JSON object: ``content``, ``tokens``, ``full_doc_id``,
``chunk_order_index``, ``file_path`` and then every ``metadata`` key, which is the shape
LightRAG writes to its Redis/JSON KV stores (the id is in the key, not the value).
``None`` is stored as JSON ``null`` and read back as ``None``, so an explicit ``None``
metadata value survives; a core field that is absent from a stored record reads as ``None``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hexrag.domain.errors import BackendError, ConfigurationError
from hexrag.domain.records import Chunk

__all__ = [
    "CHUNK_FIELDS",
    "chunk_from_json",
    "chunk_to_json",
    "chunk_to_record",
    "decode_object",
    "encode_object",
]

#: Core fields of a stored chunk record; every other key is metadata.
CHUNK_FIELDS: tuple[str, ...] = (
    "content",
    "tokens",
    "full_doc_id",
    "chunk_order_index",
    "file_path",
)


def encode_object(value: Mapping[str, Any]) -> str:
    """JSON text of a mapping (non-ASCII kept as is; Redis stores UTF-8 bytes)."""
    return json.dumps(dict(value), ensure_ascii=False, separators=(",", ":"))


def decode_object(raw: bytes | str, *, key: str) -> dict[str, Any]:
    """Parse a stored JSON object; anything else is a corrupt entry (:class:`BackendError`)."""
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BackendError(
            f"redis: value of key {key!r} is not JSON ({exc}); was it written by hexrag?",
            backend="redis",
        ) from exc
    if not isinstance(value, dict):
        raise BackendError(
            f"redis: value of key {key!r} is a JSON {type(value).__name__}, expected an object",
            backend="redis",
        )
    return value


def chunk_to_record(chunk: Chunk) -> dict[str, Any]:
    """The stored record of ``chunk`` (its fields, then its metadata).

    Raises :class:`~hexrag.core.errors.ConfigurationError` when a metadata key would
    shadow a core field (the flat record could not tell them apart on the way back).
    """
    clash = sorted(set(chunk.metadata) & set(CHUNK_FIELDS))
    if clash:
        raise ConfigurationError(
            f"chunk {chunk.id!r}: metadata keys {clash} clash with core chunk fields"
        )
    record: dict[str, Any] = {
        "content": chunk.content,
        "tokens": chunk.tokens,
        "full_doc_id": chunk.full_doc_id,
        "chunk_order_index": chunk.chunk_order_index,
        "file_path": chunk.file_path,
    }
    record.update(chunk.metadata)
    return record


def chunk_to_json(chunk: Chunk) -> str:
    """The stored JSON text of ``chunk`` (:func:`chunk_to_record`, encoded)."""
    return encode_object(chunk_to_record(chunk))


def chunk_from_json(chunk_id: str, raw: bytes | str | Mapping[str, Any]) -> Chunk:
    """The :class:`Chunk` stored under ``chunk_id`` (``raw`` is JSON text or a parsed object)."""
    record = dict(raw) if isinstance(raw, Mapping) else decode_object(raw, key=chunk_id)
    content = record.pop("content", None)
    tokens = record.pop("tokens", None)
    full_doc_id = record.pop("full_doc_id", None)
    order = record.pop("chunk_order_index", None)
    file_path = record.pop("file_path", None)
    return Chunk(
        id=chunk_id,
        # A record without content is not a chunk hexrag wrote; LightRAG treats it as empty text.
        content="" if content is None else str(content),
        tokens=_opt_int(tokens),
        full_doc_id=None if full_doc_id is None else str(full_doc_id),
        chunk_order_index=_opt_int(order),
        file_path=None if file_path is None else str(file_path),
        metadata=record,
    )


def _opt_int(value: Any) -> int | None:
    # Tolerant of other writers (LightRAG stores ints; a float or numeric string is accepted).
    if value is None:
        return None
    if isinstance(value, int):  # bool included
        return int(value)
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    try:
        return int(str(value))
    except ValueError:
        return None
