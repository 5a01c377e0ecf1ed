"""Replacing the record inside stage 1's items (entity and relation items alike)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

from hexrag.core.query.run import EntityItem, RelationItem

__all__ = ["replace_records"]

_Item = TypeVar("_Item", EntityItem, RelationItem)


def replace_records(
    items: list[_Item], field: str, changes: Callable[[_Item], dict[str, Any] | None]
) -> tuple[list[_Item], int]:
    """``items`` in order, each whose ``changes`` are not ``None`` with its record (attribute
    ``field``: ``"entity"`` or ``"relation"``) updated by them; and how many changed."""
    changed = 0
    out: list[_Item] = []
    for item in items:
        update = changes(item)
        if update is None:
            out.append(item)
            continue
        changed += 1
        record = dataclasses.replace(getattr(item, field), **update)
        out.append(dataclasses.replace(item, **{field: record}))
    return out, changed
