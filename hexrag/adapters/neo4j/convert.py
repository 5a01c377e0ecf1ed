"""Neo4j records <-> domain types, in one place (no server needed to test it).

Writes: :func:`node_item` and :func:`edge_items` build the ``$items`` parameter values.
Reads: :func:`entity_from_props` and :func:`relation_from_row` build domain records from
``properties(n)`` / ``properties(r)`` maps, and the ``order_*`` functions put rows into the
port's documented edge order (Cypher returns them unordered).

Neo4j stores no ``null`` property, so a ``None`` field is simply absent and reads back as
``None``; tuples are stored as lists.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hexrag.core.ingest.ids import relation_id as pair_relation_id
from hexrag.core.query.source_ids import parse_source_ids
from hexrag.domain.errors import ConfigurationError
from hexrag.domain.records import Entity, Relation

__all__ = [
    "ENTITY_FIELDS",
    "RELATION_FIELDS",
    "RESERVED_RELATION_PROPERTIES",
    "EdgeRow",
    "edge_items",
    "edge_row",
    "entity_from_props",
    "node_item",
    "order_by_insertion",
    "order_node_edges",
    "order_pair",
    "relation_from_row",
]

#: Node properties that are Entity fields (``entity_id`` is the name).
ENTITY_FIELDS: tuple[str, ...] = (
    "entity_id",
    "entity_type",
    "description",
    "source_id",
    "file_path",
    "created_at",
)
#: Relationship properties that are Relation fields.
RELATION_FIELDS: tuple[str, ...] = (
    "relation_id",
    "description",
    "keywords",
    "weight",
    "source_id",
    "file_path",
    "created_at",
)
#: Bookkeeping properties the adapter maintains on every relationship.
RESERVED_RELATION_PROPERTIES: tuple[str, ...] = (
    "relation_id",
    "chunk_ids",
    "hexrag_seq",
    "hexrag_link_seq",
    "hexrag_pair_seq",
)


def _storable(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    return value


#: The record attributes stored under their own names (after the node key / relation id).
_ENTITY_DATA = ENTITY_FIELDS[1:]
_RELATION_DATA = RELATION_FIELDS[1:]


def _fields_of(record: Entity | Relation, names: Sequence[str]) -> dict[str, Any]:
    """The record's attributes ``names``, in that order."""
    return {name: getattr(record, name) for name in names}


def _props(fields: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in extra.items():
        if value is not None:
            out[key] = _storable(value)
    for key, value in fields.items():
        if value is not None:
            out[key] = _storable(value)
    return out


# --------------------------------------------------------------------------------------
# Writes
# --------------------------------------------------------------------------------------


def node_item(entity: Entity) -> dict[str, Any]:
    """The ``$items`` element of one entity for ``UPSERT_NODES``."""
    if "entity_id" in entity.properties:
        raise ConfigurationError(
            f"entity {entity.name!r}: 'entity_id' is the node key and cannot be a property"
        )
    fields = {"entity_id": entity.name} | _fields_of(entity, _ENTITY_DATA)
    return {"name": entity.name, "props": _props(fields, entity.properties)}


def edge_items(relations: Sequence[Relation]) -> list[dict[str, Any]]:
    """The ``$items`` of ``UPSERT_EDGES``: one per relation, in call order (``pos`` = index).

    Duplicates stay: the statement applies items one after the other, so a repeated id is
    inserted at its first position and ends with its last value, as in sequential upserts.
    """
    items: list[dict[str, Any]] = []
    for pos, relation in enumerate(relations):
        clash = sorted(set(relation.properties) & set(RESERVED_RELATION_PROPERTIES))
        if clash:
            raise ConfigurationError(
                f"relation {relation.id!r}: properties {clash} are reserved by the neo4j adapter"
            )
        props = _props(_fields_of(relation, _RELATION_DATA), relation.properties)
        chunk_ids = parse_source_ids(relation.source_id)
        if chunk_ids:  # no property rather than an empty list
            props["chunk_ids"] = chunk_ids
        items.append(
            {
                "id": relation.id,
                "src": relation.src_id,
                "tgt": relation.tgt_id,
                "props": props,
                "pos": pos,
            }
        )
    return items


# --------------------------------------------------------------------------------------
# Reads
# --------------------------------------------------------------------------------------


def _opt_int(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, int):
        return value
    try:
        return int(str(value))
    except ValueError:
        return None


def _opt_float(value: Any) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


#: How a stored property reads back as a record field (``source_id`` as stored).
_READ_BACK: dict[str, Callable[[Any], Any]] = {
    "entity_type": _opt_str,
    "description": _opt_str,
    "keywords": _opt_str,
    "weight": _opt_float,
    "source_id": lambda value: value,
    "file_path": _opt_str,
    "created_at": _opt_int,
}


def _pop_fields(rest: dict[str, Any], names: Sequence[str]) -> dict[str, Any]:
    """The record fields ``names`` taken out of a properties map, each read back by its rule
    (an absent one is ``None``); what is left are the record's properties."""
    return {name: _READ_BACK[name](rest.pop(name, None)) for name in names}


def entity_from_props(name: str, props: Mapping[str, Any]) -> Entity:
    """An :class:`Entity` from a node's ``properties(n)`` map."""
    rest = dict(props)
    rest.pop("entity_id", None)
    fields = _pop_fields(rest, _ENTITY_DATA)
    return Entity(name=name, properties=rest, **fields)


@dataclass(frozen=True, slots=True)
class EdgeRow:
    """One relationship row: the relation and its ordering keys (``None``: not written by
    hexrag)."""

    element_id: str
    relation: Relation
    seq: int | None
    link_seq: int | None
    pair_seq: int | None


def relation_from_row(src: str, tgt: str, props: Mapping[str, Any]) -> Relation:
    """A :class:`Relation` from a relationship's endpoints and ``properties(r)`` map.

    A relationship without ``relation_id`` (written by LightRAG itself) gets the pair id
    :func:`hexrag.core.ingest.ids.relation_id`, as the port prescribes for id-less stores.
    """
    rest = dict(props)
    for key in RESERVED_RELATION_PROPERTIES:
        if key != "relation_id":
            rest.pop(key, None)
    rid = rest.pop("relation_id", None)
    fields = _pop_fields(rest, _RELATION_DATA)
    return Relation(
        id=str(rid) if rid is not None else pair_relation_id(src, tgt),
        src_id=src,
        tgt_id=tgt,
        properties=rest,
        **fields,
    )


def edge_row(record: Mapping[str, Any]) -> EdgeRow:
    """An :class:`EdgeRow` from a record with ``element_id``, ``src``, ``tgt``, ``props``."""
    props = record["props"] or {}
    return EdgeRow(
        element_id=str(record["element_id"]),
        relation=relation_from_row(str(record["src"]), str(record["tgt"]), props),
        seq=_opt_int(props.get("hexrag_seq")),
        link_seq=_opt_int(props.get("hexrag_link_seq")),
        pair_seq=_opt_int(props.get("hexrag_pair_seq")),
    )


def _sort_key(mark: int | None, row: EdgeRow) -> tuple[bool, int, str]:
    # Rows without a sequence number (not written by hexrag) come last, by id.
    return (mark is None, mark if mark is not None else 0, row.relation.id)


def _unique(rows: Iterable[EdgeRow]) -> list[EdgeRow]:
    seen: dict[str, EdgeRow] = {}
    for row in rows:
        seen.setdefault(row.element_id, row)
    return list(seen.values())


def _link_mark(row: EdgeRow) -> int | None:
    return row.link_seq if row.link_seq is not None else row.seq


def order_by_insertion(rows: Iterable[EdgeRow]) -> list[Relation]:
    """Relations in insertion order of their ids (``hexrag_seq``); used for chunk-id lists."""
    return [row.relation for row in sorted(_unique(rows), key=lambda r: _sort_key(r.seq, r))]


def order_pair(rows: Iterable[EdgeRow]) -> list[Relation]:
    """The relations of one pair in the order they joined it (``hexrag_link_seq``)."""
    return [
        row.relation for row in sorted(_unique(rows), key=lambda r: _sort_key(_link_mark(r), r))
    ]


def order_node_edges(name: str, rows: Iterable[EdgeRow]) -> list[Relation]:
    """A node's relations in the port's edge order.

    Grouped by neighbour; groups ordered by when the pair's group was opened
    (``hexrag_pair_seq``, else the group's smallest link seq); within a group by
    :func:`order_pair`. Each relationship appears once (an undirected match returns a
    self-loop twice).
    """
    groups: dict[str, list[EdgeRow]] = {}
    for row in _unique(rows):
        rel = row.relation
        neighbour = rel.tgt_id if rel.src_id == name else rel.src_id
        groups.setdefault(neighbour, []).append(row)

    def group_key(item: tuple[str, list[EdgeRow]]) -> tuple[bool, int, str]:
        neighbour, members = item
        marks = [m.pair_seq if m.pair_seq is not None else _link_mark(m) for m in members]
        known = [m for m in marks if m is not None]
        return (not known, min(known) if known else 0, neighbour)

    ordered: list[Relation] = []
    for _, members in sorted(groups.items(), key=group_key):
        ordered.extend(order_pair(members))
    return ordered
