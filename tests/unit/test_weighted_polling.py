"""The engine's weighted polling (one pass over the unused quota) equals LightRAG's, stated
plainly in :mod:`hexrag.core.reference.polling` (one chunk at a time to the first item that
still has chunks)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hexrag.core.query.pick import weighted_polling
from hexrag.core.reference.polling import weighted_polling as plain

lists = st.lists(st.lists(st.integers(0, 500), max_size=12), max_size=40)


@settings(max_examples=1500, deadline=None)
@given(lists, st.integers(0, 12), st.integers(0, 6))  # non-negative, as LightRAG uses it
def test_fast_equals_plain(chunk_lists: list[list[int]], max_related: int,
                           min_related: int) -> None:
    assert weighted_polling(chunk_lists, max_related, min_related) == plain(
        chunk_lists, max_related, min_related)


def test_unused_quota_goes_to_the_first_items_with_chunks() -> None:
    # quotas 5, 3, 1: item 0 has 1 chunk (4 unused), item 2 has 4 chunks (takes 1)
    got = weighted_polling([["a"], ["b1", "b2", "b3", "b4"], ["c1", "c2", "c3", "c4"]], 5, 1)
    assert got == ["a", "b1", "b2", "b3", "c1", "b4", "c2", "c3", "c4"]
    assert got == plain([["a"], ["b1", "b2", "b3", "b4"], ["c1", "c2", "c3", "c4"]], 5, 1)
