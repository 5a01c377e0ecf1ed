"""The fast forms of stages 2 and 3 equal the plain reference
(:mod:`hexrag.core.reference.reference`) on generated data."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hexrag.adapters.tiktoken_offline import default_tokenizer
from hexrag.core.model import Entity, Relation
from hexrag.core.query import chunks as fast_chunks
from hexrag.core.query.run import ChunkItem, EntityItem, RelationItem, RunStats
from hexrag.core.query.truncation import truncate
from hexrag.core.reference.reference import pick_chunks, sorted_chunk_lists, truncate_stage

TOK = default_tokenizer()

text = st.text(
    alphabet=st.sampled_from([*list('ab c\n"\\{}é中😀\t<>SEP'), "\u2028", "\x00", "\ud7ff"]),
    max_size=40,
)
maybe = st.one_of(st.none(), text)


@st.composite
def entity_items(draw: Any) -> list[EntityItem]:
    n = draw(st.integers(0, 30))
    return [
        EntityItem(Entity(name=draw(text) or f"e{i}", entity_type=draw(maybe),
                          description=draw(maybe)), rank=None, created_at=None)
        for i in range(n)
    ]


@st.composite
def relation_items(draw: Any) -> list[RelationItem]:
    n = draw(st.integers(0, 30))
    out = []
    for i in range(n):
        a, b = draw(text) or "a", draw(text) or "b"
        rel = Relation(id=f"r{i}", src_id=a, tgt_id=b, description=draw(maybe))
        out.append(RelationItem(rel, a, b, rank=None, created_at=None, resolved_by="local"))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entity_items(), relation_items(), st.integers(0, 300), st.integers(0, 300))
def test_stage2_fast_equals_reference(
    ents: list[EntityItem], rels: list[RelationItem], e_budget: int, r_budget: int
) -> None:
    cut = truncate(ents, rels, max_entity_tokens=e_budget, max_relation_tokens=r_budget,
                   tokenizer=TOK)
    e_lines, r_lines = truncate_stage(ents, rels, max_entity_tokens=e_budget,
                                      max_relation_tokens=r_budget, tokenizer=TOK)
    assert cut.entity_lines == e_lines and cut.relation_lines == r_lines
    assert cut.entities == ents[: len(e_lines)] and cut.relations == rels[: len(r_lines)]


ids = st.sampled_from([f"c{i}" for i in range(25)])
lists = st.lists(st.lists(ids, max_size=8), max_size=10)
score_values = st.sampled_from([0.9, 0.5, 0.5, 0.1, -0.2, 0.0])


def _fast_pass(
    id_lists: list[list[str]], method: str, related: int, scores: dict[str, float] | None,
    *, exclude: set[str], keep_empty: bool, all_ids: list[str],
) -> tuple[list[str], int]:
    """One pass of stage 3's fast form (integer codes, numpy) on plain lists."""
    cand = fast_chunks._Candidates(id_lists, [])
    # the engine codes entity and relation lists together; here codes cover ``all_ids``
    cand.ids = all_ids
    cand.code = {c: i for i, c in enumerate(all_ids)}
    codes, owner = cand._encode(id_lists)
    if scores is not None:
        cand.scores = np.array([scores.get(c, np.nan) for c in all_ids], dtype=np.float64)
    skip = np.zeros(len(all_ids), dtype=bool)
    for c in exclude:
        skip[cand.code[c]] = True
    codes, owner = fast_chunks._dedup_and_sort(codes, owner, len(all_ids), skip=skip)
    run = SimpleNamespace(query="q", stats=RunStats())
    picking = fast_chunks.Picking(method, related)
    if not keep_empty and not len(codes):
        return [], 0
    picked = fast_chunks._pick(run, cand, codes, owner, len(id_lists), keep_empty, picking)  # type: ignore[arg-type]
    return picked, run.stats.chunk_pick_fallbacks


@settings(max_examples=300, deadline=None)
@given(lists, lists, st.sampled_from(["WEIGHT", "VECTOR"]), st.integers(0, 7),
       st.dictionaries(ids, score_values), st.booleans(), st.sets(ids, max_size=6))
def test_stage3_fast_equals_reference(
    ent_lists: list[list[str]], rel_lists: list[list[str]], method: str, related: int,
    scores: dict[str, float], have_scores: bool, found: set[str],
) -> None:
    ent_lists = [x for x in ent_lists if x]  # LightRAG keeps only records that name chunks
    rel_lists = [x for x in rel_lists if x]
    all_ids = list(dict.fromkeys(c for x in ent_lists + rel_lists for c in x))
    sc = scores if have_scores else None
    # entity pass
    want = pick_chunks(sorted_chunk_lists(ent_lists), method=method,
                       related_chunk_number=related, scores=sc)
    got, fb = _fast_pass(ent_lists, method, related, sc, exclude=set(), keep_empty=True,
                         all_ids=all_ids)
    assert got == want.ids and bool(fb) == want.fell_back
    # relation pass: the entity chunks the store returned are excluded first
    recovered = {c for c in want.ids if c in found}
    ref_lists = [x for x in sorted_chunk_lists(rel_lists, recovered) if x]
    want_r = pick_chunks(ref_lists, method=method, related_chunk_number=related, scores=sc)
    got_r, fb_r = _fast_pass(rel_lists, method, related, sc, exclude=recovered,
                             keep_empty=False, all_ids=all_ids)
    if ref_lists:
        assert got_r == want_r.ids and bool(fb_r) == want_r.fell_back
    else:
        assert got_r == []


chunk_items = st.lists(
    st.builds(
        lambda cid, content, fp, head: ChunkItem(cid, content, fp, head),
        st.sampled_from([f"c{i}" for i in range(12)]),
        text,
        st.sampled_from(["a.md", "b.md", "unknown_source", ""]),
        st.sampled_from(["", "Guide > Setup", "章 > 节"]),
    ),
    max_size=25,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chunk_items, st.integers(-5, 400))
def test_stage4_token_cut_equals_reference(chunks: list[ChunkItem], budget: int) -> None:
    import json

    from hexrag.core.query import context
    from hexrag.core.reference.reference import chunk_row, kept_chunks

    kept, references, rendered = context._truncate_chunks(chunks, budget, TOK)
    assert len(kept) == kept_chunks(chunks, budget, TOK)
    # the kept chunks come with their references: assign_references of the kept prefix
    plain_refs, plain_kept = context.assign_references(chunks[: len(kept)])
    assert (references, kept) == (plain_refs, plain_kept)
    # the text the budget was checked on is the context's chunk text (not rendered again)
    assert rendered == context.render_chunks(plain_kept)
    for c in chunks:
        for with_ref in (False, True):
            want = json.dumps(chunk_row(c, with_ref), ensure_ascii=False)
            assert context._chunk_line(c, with_ref) == want
