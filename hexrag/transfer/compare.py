"""Golden queries on two stacks, compared tie-aware.

Two stacks holding the same records answer a vector search with the same hits, except that
records with **equal scores** may come in another order (every backend breaks ties its own
way: NanoVectorDB by row order, PostgreSQL and Milvus by id or by storage order), and a tie
cut by ``top_k`` may keep other members. :func:`compare_hits` accepts exactly that and
nothing else:

* the two hit lists have the same length and, position by position, the same score (within
  ``score_tolerance``: backends compute cosines in float32 or float64);
* a hit scored NaN (NanoVectorDB's score of a zero vector, which other backends leave out
  or score 0) is not compared; a search that had one gives at best ``"ties"``;
* they are split into groups of tied scores (consecutive scores within
  ``tie_tolerance`` of each other); each group holds the same ids on both sides, except a
  group reaching the end of a full list (``top_k`` hits), whose other members were cut.

:func:`golden_searches` runs the three searches a query makes (entities with the low-level
keywords, relationships with the high-level ones, chunks with the query text) on both
stacks and says, per query, whether the hits are identical, equal up to ties, or different.
A query whose hits differ only by ties may legitimately assemble another context, so its
``query_data`` is not compared; one with identical hits must give identical ``query_data``,
up to the graph's own ties (:func:`compare_answers`): LightRAG orders a node's edges by
``(rank, weight)``, and among equal ones keeps the order its graph backend lists them in
(NetworkX by insertion, PostgreSQL by its rows), so two exact copies on different backends
may list the same relationships, and their chunks, in another order.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

from hexrag.core.model import QUERY_DEFAULTS, VectorHit

__all__ = ["SCORE_TOLERANCE", "Verdict", "compare_answers", "compare_hits", "golden_searches"]

Verdict = Literal["same", "ties", "differ"]

#: Largest difference between the scores two backends compute for the same stored vector
#: and query (float32 against float64 arithmetic differ by about 1e-7).
SCORE_TOLERANCE = 1e-6


def _groups(scores: Sequence[float], tolerance: float) -> list[tuple[int, int]]:
    """``(start, end)`` of each run of tied scores."""
    out: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(scores) + 1):
        if i == len(scores) or abs(scores[i] - scores[i - 1]) > tolerance:
            out.append((start, i))
            start = i
    return out


def compare_hits(
    a: Sequence[VectorHit],
    b: Sequence[VectorHit],
    top_k: int,
    *,
    score_tolerance: float = SCORE_TOLERANCE,
    tie_tolerance: float = SCORE_TOLERANCE,
) -> tuple[Verdict, str]:
    """``("same" | "ties" | "differ", why)`` for two searches' hits (see the module doc)."""
    if [h.id for h in a] == [h.id for h in b] and all(
        x.score == y.score or (math.isnan(x.score) and math.isnan(y.score))
        or abs(x.score - y.score) <= score_tolerance
        for x, y in zip(a, b, strict=True)
    ):
        return "same", ""
    undefined = any(math.isnan(h.score) for h in (*a, *b))
    if undefined:
        # a zero vector has no cosine: NanoVectorDB ranks it first with NaN (pushing other
        # hits out of the top_k), other backends leave it out; such hits are not compared
        # (the digests compare the vector), and the rest only as far as both lists go
        a = [h for h in a if not math.isnan(h.score)]
        b = [h for h in b if not math.isnan(h.score)]
        top_k = min(len(a), len(b))
        a, b = a[:top_k], b[:top_k]
    elif len(a) != len(b):
        return "differ", f"{len(a)} hits vs {len(b)}"
    ids_a, ids_b = [h.id for h in a], [h.id for h in b]
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if not abs(x.score - y.score) <= score_tolerance:
            return "differ", f"hit {i + 1}: score {x.score!r} ({x.id!r}) vs {y.score!r} ({y.id!r})"
    if ids_a == ids_b:
        return ("ties" if undefined else "same"), ""
    scores = [h.score for h in a]
    for start, end in _groups(scores, tie_tolerance):
        if set(ids_a[start:end]) == set(ids_b[start:end]):
            continue
        if end == len(a) == top_k:
            continue  # a tie cut by top_k: the members kept may differ
        return "differ", (
            f"hits {start + 1}-{end} (score {scores[start]!r}): {sorted(ids_a[start:end])[:5]} "
            f"vs {sorted(ids_b[start:end])[:5]}"
        )
    return "ties", ""


def _canonical(item: Any) -> str:
    return json.dumps(item, sort_keys=True, ensure_ascii=False, default=str)


def compare_answers(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[Verdict, str]:
    """``("same" | "ties" | "differ", why)`` for the ``data`` of two ``query_data`` answers
    whose vector hits were identical.

    ``"ties"``: every list (``entities``, ``relationships``, ``chunks``, ``references``)
    holds exactly the same items on both sides, in another order, and the relationships'
    weights come in the same sequence (only relationships of equal weight changed places:
    the graph backend's order among LightRAG's equally ranked edges, which also orders the
    chunks drawn from them). Anything else that is not identical differs."""
    if a == b:
        return "same", ""
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key), b.get(key)
        if x == y:
            continue
        if not (isinstance(x, list) and isinstance(y, list)):
            return "differ", f"{key} differs"
        if sorted(map(_canonical, x)) != sorted(map(_canonical, y)):
            return "differ", f"{key}: other items ({len(x)} vs {len(y)})"
        if key == "relationships" and [_canonical(r.get("weight")) for r in x] != [
                _canonical(r.get("weight")) for r in y]:
            return "differ", "relationships: reordered across weights"
    return "ties", ""


async def golden_searches(
    source: Any,
    target: Any,
    embedder: Any,
    queries: Sequence[dict[str, Any]],
    *,
    top_k: int = int(QUERY_DEFAULTS["top_k"]),
    chunk_top_k: int = int(QUERY_DEFAULTS["chunk_top_k"]),
) -> tuple[list[Verdict], list[str]]:
    """Per query, the worst verdict of its three searches on ``source`` and ``target``
    (objects with ``entities``, ``relationships`` and ``chunks`` indexes), and one line per
    search that differs."""
    texts = []
    for q in queries:
        texts += [", ".join(q["ll_keywords"]), ", ".join(q["hl_keywords"]), q["query"]]
    vectors = np.asarray(await embedder.embed(texts), dtype=np.float32) if texts else None
    verdicts: list[Verdict] = []
    problems: list[str] = []
    for n, q in enumerate(queries):
        worst: Verdict = "same"
        for k, (section, limit) in enumerate(
            (("entities", top_k), ("relationships", top_k), ("chunks", chunk_top_k))
        ):
            if not texts[3 * n + k] or vectors is None:
                continue
            vector = vectors[3 * n + k]
            hits_a = await getattr(source, section).query(vector, limit)
            hits_b = await getattr(target, section).query(vector, limit)
            verdict, why = compare_hits(hits_a, hits_b, limit)
            if verdict == "differ":
                problems.append(f"query {q['query']!r}: {section} search differs ({why})")
                worst = "differ"
            elif verdict == "ties" and worst == "same":
                worst = "ties"
        verdicts.append(worst)
    return verdicts, problems
