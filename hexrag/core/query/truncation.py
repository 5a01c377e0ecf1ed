"""Stage 2: render entities and relations as JSON lines and cut them to their token budgets."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from json.encoder import encode_basestring
from typing import Any

from hexrag.core.query.run import EntityItem, RelationItem
from hexrag.core.tokenizer import (
    Tokenizer,
    count_tokens,
    lines_tokens,
    truncate_list_by_token_size,
)

__all__ = [
    "Truncated",
    "entity_line",
    "entity_row",
    "relation_line",
    "relation_row",
    "truncate",
]


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


def _dumps_str3(keys: tuple[str, str, str]) -> Callable[[str, str, str], str]:
    """``json.dumps({k0: a, k1: b, k2: c}, ensure_ascii=False)`` for three ``str`` values.

    The same text (``json.dumps`` escapes each string with this very function and joins with
    the default ``", "`` and ``": "`` separators), without building a dict and an encoder per
    line: the lines of every candidate are rendered on the query path.
    """
    head, mid1, mid2 = (f'{{"{keys[0]}": ', f', "{keys[1]}": ', f', "{keys[2]}": ')
    enc = encode_basestring

    def render(a: str, b: str, c: str) -> str:
        return f"{head}{enc(a)}{mid1}{enc(b)}{mid2}{enc(c)}}}"

    return render


_entity_line = _dumps_str3(("entity", "type", "description"))
_relation_line = _dumps_str3(("entity1", "entity2", "description"))


def entity_line(item: EntityItem) -> str:
    """``dumps(entity_row(item))``."""
    e = item.entity
    t = "UNKNOWN" if e.entity_type is None else e.entity_type
    d = "UNKNOWN" if e.description is None else e.description
    if type(e.name) is str and type(t) is str and type(d) is str:
        return _entity_line(e.name, t, d)
    return dumps(entity_row(item))


def relation_line(item: RelationItem) -> str:
    """``dumps(relation_row(item))``."""
    d = item.relation.description
    d = "UNKNOWN" if d is None else d
    if type(item.entity1) is str and type(item.entity2) is str and type(d) is str:
        return _relation_line(item.entity1, item.entity2, d)
    return dumps(relation_row(item))


@dataclass
class Truncated:
    """The kept prefixes and their rendered lines."""

    entities: list[EntityItem]
    relations: list[RelationItem]
    entity_lines: list[str]
    relation_lines: list[str]


def _tokens_before_last(lines: list[str], tokenizer: Tokenizer, stop_above: int) -> int:
    """Tokens of ``"\n".join(lines[:-1])`` (line by line when possible; see ``lines_tokens``),
    or a number above ``stop_above`` when they certainly are (a huge line is not counted)."""
    total = lines_tokens(lines[:-1], tokenizer, stop_above=stop_above)
    if total is not None:
        return total
    return count_tokens("\n".join(lines[:-1]), tokenizer)


def _keep(
    items: list[Any], render: Callable[[Any], str], budget: int, tokenizer: Tokenizer
) -> tuple[int, list[str]]:
    """LightRAG's kept prefix, rendering only as many lines as the budget can reach.

    Lines are rendered in doubling batches until the lines before the last rendered one
    already exceed the budget. Each line starts with ``{``, a restart point of ``o200k_base``
    (tokenizer module docstring), so the tokens of everything before the last rendered line
    are those of the full list, and LightRAG's truncation, which never looks past the budget,
    returns the same count as on the full list.
    """
    n = len(items)
    if n == 0 or budget <= 0:
        return 0, []
    lines: list[str] = []
    # the restart argument holds for tiktoken's o200k_base; any other tokenizer renders all
    batch = 64 if getattr(tokenizer, "_restartable", False) else n
    while len(lines) < n:
        stop = min(n, len(lines) + batch)
        lines.extend(render(it) for it in items[len(lines) : stop])
        if len(lines) < n and _tokens_before_last(lines, tokenizer, budget + 1) > budget + 1:
            break
        batch *= 2
    k = truncate_list_by_token_size(lines, "\n", budget, tokenizer)
    return k, lines[:k]


def truncate(
    entities: list[EntityItem],
    relations: list[RelationItem],
    *,
    max_entity_tokens: int,
    max_relation_tokens: int,
    tokenizer: Tokenizer,
) -> Truncated:
    """Keep the longest whole-item prefixes whose ``"\\n"``-joined lines fit each budget."""
    ke, e_lines = _keep(entities, entity_line, max_entity_tokens, tokenizer)
    kr, r_lines = _keep(relations, relation_line, max_relation_tokens, tokenizer)
    return Truncated(
        entities=entities[:ke],
        relations=relations[:kr],
        entity_lines=e_lines,
        relation_lines=r_lines,
    )
