"""Stage 3's array form of LightRAG's chunk counting, sorting and picking equals the
straightforward list form (a port of ``_merge_all_chunks``' helpers)."""

from __future__ import annotations

from collections import Counter
from itertools import chain

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hexrag.core.query.chunks import _Candidates, _dedup_and_sort, _lists_of
from hexrag.core.query.pick import vector_similarity_pick, weighted_polling


def _reference(
    lists: list[list[str]], skip: set[str] | None = None
) -> tuple[list[list[str]], dict[str, int]]:
    if skip:
        lists = [[c for c in ids if c not in skip] for ids in lists]
    counts = Counter(chain.from_iterable(lists))
    seen: set[str] = set()
    kept = []
    for ids in lists:
        mine = []
        for c in ids:
            if c not in seen:
                seen.add(c)
                mine.append(c)
        kept.append(mine)
    return [sorted(ids, key=counts.__getitem__, reverse=True) for ids in kept], counts


ids = st.sampled_from([f"chunk-{i}" for i in range(12)])
lists_st = st.lists(st.lists(ids, min_size=1, max_size=8), min_size=1, max_size=7)


@settings(max_examples=300, deadline=None)
@given(ent=lists_st, rel=lists_st, data=st.data())
def test_array_passes_equal_the_list_passes(
    ent: list[list[str]], rel: list[list[str]], data: st.DataObject
) -> None:
    cand = _Candidates(ent, rel)
    n = len(cand.ids)
    # entity pass: every list kept (empty ones too)
    codes, owner = _dedup_and_sort(*cand.ent, n)
    expected, _ = _reference(ent)
    got = [[cand.ids[c] for c in lst] for lst in _lists_of(codes, owner, len(ent), True)]
    assert got == expected
    # relation pass: ids taken by the entity pass skipped, empty lists dropped
    taken_ids = set(data.draw(st.lists(ids, max_size=6)))
    taken = np.zeros(n, dtype=bool)
    taken[[cand.code[c] for c in taken_ids if c in cand.code]] = True
    codes_r, owner_r = _dedup_and_sort(*cand.rel, n, skip=taken)
    expected_r, _ = _reference(rel, skip=taken_ids)
    expected_r = [lst for lst in expected_r if lst]
    got_r = [[cand.ids[c] for c in lst] for lst in _lists_of(codes_r, owner_r, len(rel), False)]
    assert got_r == expected_r
    # VECTOR: ranking the pass's (unique) codes by score, stable, equals the list form
    scores = data.draw(
        st.lists(st.sampled_from([0.1, 0.5, 0.5, 0.9, -0.2]), min_size=n, max_size=n)
    )
    cand.scores = np.array(scores, dtype=np.float64)
    num = data.draw(st.integers(min_value=1, max_value=20))
    best = codes[np.argsort(-cand.scores[codes], kind="stable")[:num]]
    by_id = dict(zip(cand.ids, scores, strict=True))
    assert [cand.ids[c] for c in best.tolist()] == vector_similarity_pick(expected, by_id, num)
    # WEIGHT on codes equals WEIGHT on ids
    polled = weighted_polling(_lists_of(codes, owner, len(ent), True), 3, 1)
    assert [cand.ids[c] for c in polled] == weighted_polling(expected, 3, 1)
