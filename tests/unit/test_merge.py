"""Round-robin merge: LightRAG's interleave order, first occurrence wins, no duplicates."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from hexrag.core.query.merge import round_robin


def test_interleaves_local_then_global() -> None:
    assert round_robin([["a", "b", "c"], ["x", "b"]], key=lambda s: s) == ["a", "x", "b", "c"]


def test_drops_falsy_keys() -> None:
    assert round_robin([["", "a"], [None, "b"]], key=lambda s: s) == ["a", "b"]  # type: ignore[list-item]


def test_first_occurrence_object_wins() -> None:
    first = ("k", 1)
    second = ("k", 2)
    assert round_robin([[first], [second]], key=lambda t: t[0]) == [first]


lists = st.lists(st.lists(st.sampled_from("abcdefgh"), max_size=8), min_size=1, max_size=4)


@given(lists)
def test_merge_invariants(sources: list[list[str]]) -> None:
    merged = round_robin(sources, key=lambda s: s)
    assert len(merged) == len(set(merged))
    assert set(merged) == {x for s in sources for x in s}
    # first-appearance order of the interleaving is kept
    interleaved = [s[i] for i in range(max(map(len, sources))) for s in sources if i < len(s)]
    assert merged == list(dict.fromkeys(interleaved))


_ids = st.lists(
    st.lists(st.sampled_from(["", "a", "b", "c", "d", "e", "f", "g"]), max_size=10),
    min_size=1,
    max_size=4,
)


@given(_ids, st.integers(min_value=-2, max_value=30))
def test_limit_is_the_head_of_the_whole_merge(sources: list[list[str]], limit: int) -> None:
    whole = round_robin(sources, key=lambda s: s)
    assert round_robin(sources, key=None) == whole
    assert round_robin(sources, key=None, limit=limit) == whole[: max(limit, 0)]
    assert round_robin(sources, key=lambda s: s, limit=limit) == whole[: max(limit, 0)]
