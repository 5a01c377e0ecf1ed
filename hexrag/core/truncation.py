"""Stage 2: render entities and relations as JSON lines and cut them to their token budgets."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hexrag.core.run import EntityItem, RelationItem
from hexrag.core.tokenizer import Tokenizer, truncate_list_by_token_size

__all__ = ["Truncated", "entity_row", "relation_row", "truncate"]


def entity_row(item: EntityItem) -> dict[str, Any]:
    """The entity line sent to the LLM: ``{"entity", "type", "description"}``."""
    e = item.entity
    return {
        "entity": e.name,
        "type": "UNKNOWN" if e.entity_type is None else e.entity_type,
        "description": "UNKNOWN" if e.description is None else e.description,
    }


def relation_row(item: RelationItem) -> dict[str, Any]:
    """The relation line sent to the LLM: ``{"entity1", "entity2", "description"}``."""
    d = item.relation.description
    return {
        "entity1": item.entity1,
        "entity2": item.entity2,
        "description": "UNKNOWN" if d is None else d,
    }


def dumps(row: dict[str, Any]) -> str:
    """A JSON line exactly as LightRAG writes it (``ensure_ascii=False``, default separators)."""
    return json.dumps(row, ensure_ascii=False)


@dataclass
class Truncated:
    """The kept prefixes and their rendered lines."""

    entities: list[EntityItem]
    relations: list[RelationItem]
    entity_lines: list[str]
    relation_lines: list[str]


def truncate(
    entities: list[EntityItem],
    relations: list[RelationItem],
    *,
    max_entity_tokens: int,
    max_relation_tokens: int,
    tokenizer: Tokenizer,
) -> Truncated:
    """Keep the longest whole-item prefixes whose ``"\\n"``-joined lines fit each budget."""
    e_lines = [dumps(entity_row(e)) for e in entities]
    r_lines = [dumps(relation_row(r)) for r in relations]
    ke = truncate_list_by_token_size(e_lines, "\n", max_entity_tokens, tokenizer) if e_lines else 0
    kr = (
        truncate_list_by_token_size(r_lines, "\n", max_relation_tokens, tokenizer) if r_lines else 0
    )
    return Truncated(
        entities=entities[:ke],
        relations=relations[:kr],
        entity_lines=e_lines[:ke],
        relation_lines=r_lines[:kr],
    )
