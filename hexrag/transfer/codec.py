"""The JSON form of each record type (one JSON object per line in an archive).

Field names are the dataclass field names; ``None`` fields are written as ``null`` and read
back as ``None`` (absent is not empty, see :mod:`hexrag.core.model`). Vectors never go into
JSON: an archive keeps them in ``.npy`` files, row ``i`` belonging to line ``i``.
``source_id`` keeps its stored form (a ``<SEP>`` string, ``{a,b}`` array text or a list).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import Any, TypeVar

from hexrag.core.model import Chunk, Entity, Relation, VectorRecord

__all__ = ["KINDS", "decode", "dumps", "encode"]

R = TypeVar("R", Entity, Relation, Chunk, VectorRecord)

KINDS: dict[str, type] = {
    "entity": Entity,
    "relation": Relation,
    "chunk": Chunk,
    "vector": VectorRecord,
}

_MAPPINGS = ("properties", "metadata")


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return value.item()
    return value


def encode(record: Entity | Relation | Chunk | VectorRecord) -> dict[str, Any]:
    """A JSON-ready dict of ``record`` (without ``vector``)."""
    out: dict[str, Any] = {}
    for f in fields(record):
        if f.name == "vector":
            continue
        out[f.name] = _plain(getattr(record, f.name))
    return out


def decode(kind: type[R], data: Mapping[str, Any]) -> R:
    """The record of type ``kind`` from its JSON dict (unknown keys are an error)."""
    names = {f.name for f in fields(kind)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ValueError(f"unknown {kind.__name__} field(s) {unknown}")
    values = dict(data)
    for name in _MAPPINGS:
        if name in values and values[name] is None:
            values[name] = {}
    return kind(**values)


def dumps(obj: Any) -> str:
    """One JSON line (UTF-8 text, no ASCII escaping, lone surrogates refused)."""
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


Encoder = Callable[[Any], dict[str, Any]]
