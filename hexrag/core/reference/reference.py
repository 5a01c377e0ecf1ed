"""LightRAG 1.5.7's rules for stages 2 and 3, stated plainly: the readable reference.

The engine runs faster forms of these rules (:mod:`hexrag.core.query.truncation` renders lines
without building dicts and stops rendering past the budget; :mod:`hexrag.core.query.chunks` counts,
de-duplicates and ranks chunk ids as integer codes with numpy). This module says what they
compute, in the words of LightRAG's ``operate.py``, and ``tests/unit/test_reference_stages.py``
proves the fast forms equal to it on generated data (hypothesis).

Stage 2 (``_build_query_context`` / ``truncate_list_by_token_size``): every entity becomes
``{"entity", "type", "description"}`` and every relation ``{"entity1", "entity2",
"description"}`` (``"UNKNOWN"`` for a missing value), each ``json.dumps(..., ensure_ascii=False)``;
the kept prefix is the one LightRAG's ``truncate_list_by_token_size`` keeps for the
``"\\n"``-joined lines within ``max_entity_tokens`` / ``max_relation_tokens``.

Stage 3 (``_find_related_text_unit_from_entities`` / ``..._from_relations``): each kept entity
(then relation) names its chunk ids (``source_id`` split on ``<SEP>``). For relations, ids already
recovered for entities are dropped first. Occurrences of each id are counted over all lists;
an id then stays only in the first list naming it; each list is sorted by occurrence count,
descending, ties in list order. Then the picking method:

* ``WEIGHT`` - ``pick_by_weighted_polling(lists, related_chunk_number, 1)``;
* ``VECTOR`` - ``pick_by_vector_similarity``: all candidates ranked by cosine with the query,
  the best ``int(related_chunk_number * n_lists / 2)``; when a candidate has no stored vector
  (or the number is 0) LightRAG falls back to weighted polling.

Entity lists left empty by the de-duplication still count in ``n_lists``; relation lists
left empty are dropped first (LightRAG keeps only relations with chunks).

Stage 4's token cut (``_truncate_chunks_for_unified_context``) has two steps: keep LightRAG's
``truncate_list_by_token_size`` prefix of the chunks rendered *without* reference ids
(``{"content"[, "content_headings"]}``), then, while the kept chunks rendered *with* their
reference ids (``{"reference_id", "content"[, "content_headings"]}``, the ids assigned to those
chunks alone) exceed the budget, drop the last one.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hexrag.core.query.context import assign_references
from hexrag.core.query.run import ChunkItem, EntityItem, RelationItem
from hexrag.core.query.truncation import entity_row, relation_row
from hexrag.core.reference.polling import weighted_polling
from hexrag.core.tokenizer import Tokenizer, count_tokens, truncate_list_by_token_size

__all__ = [
    "Picked",
    "chunk_row",
    "entity_row",
    "kept_chunks",
    "pick_chunks",
    "relation_row",
    "sorted_chunk_lists",
    "truncate_stage",
]


# --------------------------------------------------------------------------------------
# Stage 2
# --------------------------------------------------------------------------------------

# The rows are the engine's own plain ones (``entity_row`` / ``relation_row`` of
# :mod:`hexrag.core.query.truncation`, re-exported here); what the engine runs fast is the
# rendering and the cut (``entity_line``, proved equal to ``dumps(entity_row)`` in
# ``tests/unit/test_truncation.py``, and ``truncate``), which this stage states plainly.


def truncate_stage(
    entities: Sequence[EntityItem],
    relations: Sequence[RelationItem],
    *,
    max_entity_tokens: int,
    max_relation_tokens: int,
    tokenizer: Tokenizer,
) -> tuple[list[str], list[str]]:
    """The kept entity lines and relation lines (each list's kept prefix, rendered)."""
    entity_lines = [json.dumps(entity_row(e), ensure_ascii=False) for e in entities]
    relation_lines = [json.dumps(relation_row(r), ensure_ascii=False) for r in relations]
    ke = truncate_list_by_token_size(entity_lines, "\n", max_entity_tokens, tokenizer)
    kr = truncate_list_by_token_size(relation_lines, "\n", max_relation_tokens, tokenizer)
    return entity_lines[:ke], relation_lines[:kr]


# --------------------------------------------------------------------------------------
# Stage 3
# --------------------------------------------------------------------------------------


def sorted_chunk_lists(
    lists: Sequence[Sequence[str]], exclude: set[str] | frozenset[str] = frozenset()
) -> list[list[str]]:
    """LightRAG's occurrence counting, de-duplication and per-list ordering."""
    lists = [[c for c in ids if c not in exclude] for ids in lists]
    counts = Counter(c for ids in lists for c in ids)
    seen: set[str] = set()
    out = []
    for ids in lists:
        unique = []
        for c in ids:
            if c not in seen:
                seen.add(c)
                unique.append(c)
        out.append(sorted(unique, key=lambda c: counts[c], reverse=True))
    return out


@dataclass(frozen=True)
class Picked:
    """The chunk ids one pass picked, and whether VECTOR fell back to WEIGHT."""

    ids: list[str]
    fell_back: bool = False


def pick_chunks(
    sorted_lists: Sequence[Sequence[str]],
    *,
    method: str,
    related_chunk_number: int,
    scores: Mapping[str, float] | None,
) -> Picked:
    """LightRAG's picking over one pass's sorted lists (``scores``: cosine per chunk id for
    VECTOR; an id without a score has no stored vector)."""
    if method == "VECTOR" and scores is not None:
        num = int(related_chunk_number * len(sorted_lists) / 2)
        candidates = [c for ids in sorted_lists for c in ids]
        if num > 0 and candidates and all(c in scores for c in candidates):
            ranked = sorted(candidates, key=lambda c: scores[c], reverse=True)
            return Picked(ranked[:num])
        return Picked(weighted_polling(sorted_lists, related_chunk_number, 1), fell_back=True)
    return Picked(weighted_polling(sorted_lists, related_chunk_number, 1))


# --------------------------------------------------------------------------------------
# Stage 4 (the token cut)
# --------------------------------------------------------------------------------------


def chunk_row(item: ChunkItem, with_reference: bool) -> dict[str, object]:
    """LightRAG's chunk context row (``content_headings`` only when there is one)."""
    row: dict[str, object] = {"reference_id": item.reference_id} if with_reference else {}
    row["content"] = item.content
    if item.content_headings:
        row["content_headings"] = item.content_headings
    return row


def kept_chunks(chunks: Sequence[ChunkItem], budget: int, tokenizer: Tokenizer) -> int:
    """How many leading chunks stage 4 keeps within ``budget`` tokens."""
    if budget <= 0 or not chunks:
        return 0
    lines = [json.dumps(chunk_row(c, False), ensure_ascii=False) for c in chunks]
    k = truncate_list_by_token_size(lines, "\n", budget, tokenizer)
    while k > 0:
        _, with_refs = assign_references(chunks[:k])
        text = "\n".join(json.dumps(chunk_row(c, True), ensure_ascii=False) for c in with_refs)
        if count_tokens(text, tokenizer) <= budget:
            break
        k -= 1
    return k
