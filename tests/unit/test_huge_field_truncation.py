"""A huge entity/relation field must not be tokenized whole by stage 2's truncation.

The truncation of lines whose budget is exceeded inside (or before) a huge line stops
tokenizing early: a length lower bound (``max_token_bytes``) replaces the count of a line that
certainly exceeds the budget, and the token offsets LightRAG's search needs inside a long line
come from encoding the line only up to a cut point (``_CUT``). The results stay LightRAG's:
checked against the plain port of LightRAG in ``tests/unit/test_tokenizer.py``.
"""

from __future__ import annotations

import json
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hexrag.adapters import tiktoken_offline as tk
from hexrag.adapters.tiktoken_offline import TiktokenTokenizer, load_encoding
from hexrag.core.model import Entity
from hexrag.core.query.run import EntityItem
from hexrag.core.query.truncation import _keep, entity_line, truncate
from hexrag.core.tokenizer import TokenBudgetError, truncate_list_by_token_size
from tests.unit.test_tokenizer import _PIECES, ref_encode, ref_truncate, ref_truncate_list

ENC = load_encoding()
TOK = TiktokenTokenizer()
_LONG = tk._LONG

fragments = st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=4)), max_size=12).map(
    "".join
)


def _huge(fragment: str, filler: str, size: int) -> str:
    """``fragment`` repeated (with ``filler`` between) to about ``size`` characters."""
    unit = (fragment or "x") + filler
    return (unit * (size // len(unit) + 1))[:size]


huge_text = st.builds(
    _huge,
    fragments,
    st.sampled_from(["", " ", "x", " word ", ", ", "中"]),
    st.integers(min_value=_LONG + 1, max_value=3 * _LONG),
)
small_text = fragments


def _line(name: str, description: str) -> str:
    return json.dumps({"entity": name, "type": "T", "description": description}, ensure_ascii=False)


lines = st.lists(
    st.builds(_line, fragments, st.one_of(small_text, small_text, huge_text)),
    min_size=1,
    max_size=6,
)


def _budgets(rendered: list[str]) -> st.SearchStrategy[int]:
    """Budgets around every prefix count (where a huge line straddles the budget), and some."""
    cums = [len(ref_encode("\n".join(rendered[:k]))) for k in range(len(rendered) + 1)]
    near = [c + d for c in cums for d in (-2, 0, 1, 3, 40) if c + d > 0]
    return st.one_of(
        st.sampled_from(near),
        st.integers(min_value=1, max_value=max(1, cums[-1] + 2)),
        st.integers(min_value=-1, max_value=3),
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=6)), max_size=40))
def test_cut_point_lemma(text: list[str]) -> None:
    """At every cut point, the encoding splits: ``encode(t) == encode(t[:p]) + encode(t[p:])``."""
    joined = "".join(text)
    try:
        whole = ENC.encode_ordinary(joined)
    except UnicodeEncodeError:  # pragma: no cover - encode_ordinary repairs surrogates
        return
    for m in tk._CUT.finditer(joined):
        p = m.start() + 1
        assert whole == ENC.encode_ordinary(joined[:p]) + ENC.encode_ordinary(joined[p:]), p


def test_cut_point_lemma_on_json_lines() -> None:
    text = "\n".join(
        _line(f"Name{i}", _words(400, i) + " it's A-B, (c) d.e/f\\g x\ty") for i in range(20)
    )
    cuts = [m.start() + 1 for m in tk._CUT.finditer(text)]
    assert len(cuts) > 500
    whole = ENC.encode_ordinary(text)
    for p in cuts:
        assert whole == ENC.encode_ordinary(text[:p]) + ENC.encode_ordinary(text[p:]), p


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rendered=lines, data=st.data())
def test_huge_lines_truncate_list_equals_lightrag(rendered: list[str], data: st.DataObject) -> None:
    budget = data.draw(_budgets(rendered), label="budget")
    TOK.clear_caches()
    assert truncate_list_by_token_size(rendered, "\n", budget, TOK) == ref_truncate_list(
        rendered, "\n", budget
    )
    if budget > 0:
        text = "\n".join(rendered)
        try:
            expected: int | None = ref_truncate(text, budget)
        except TokenBudgetError:
            expected = None
        try:
            got: int | None = TOK.truncate_by_token_limit(text, budget)
        except TokenBudgetError:
            got = None
        assert got == expected


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(descriptions=st.lists(st.one_of(small_text, huge_text), max_size=8), data=st.data())
def test_huge_lines_lazy_keep_equals_lightrag(descriptions: list[str], data: st.DataObject) -> None:
    def render(d: str) -> str:
        return _line("E", d)

    full = [render(d) for d in descriptions]
    budget = data.draw(_budgets(full) if full else st.just(5), label="budget")
    k, kept = _keep(descriptions, render, budget, TOK)
    assert k == (ref_truncate_list(full, "\n", budget) if full and budget > 0 else 0)
    assert kept == full[:k]


class _Metered:
    """Counts the characters a :class:`TiktokenTokenizer` encodes or counts."""

    def __init__(self, tok: TiktokenTokenizer) -> None:
        self.chars = 0
        self.calls = 0
        count, encode = tok._count, tok.encode

        def metered_count(text: str) -> int:
            self.chars += len(text)
            self.calls += 1
            return count(text)

        def metered_encode(text: str) -> list[int]:
            self.chars += len(text)
            self.calls += 1
            return encode(text)

        tok._count = metered_count
        tok.encode = metered_encode  # type: ignore[method-assign]


def _words(size: int, seed: int) -> str:
    rnd = random.Random(seed)
    vocab = ["graph", "entity", "river", "Ω", "data", "中文", "x9", "the", "of", "model"]
    out: list[str] = []
    n = 0
    while n < size:
        w = rnd.choice(vocab)
        out.append(w)
        n += len(w) + 1
    return " ".join(out)[:size]


def _item(name: str, etype: str, description: str) -> EntityItem:
    return EntityItem(
        entity=Entity(name=name, entity_type=etype, description=description),
        rank=1,
        created_at=None,
    )


def test_a_2mb_field_is_not_tokenized_whole() -> None:
    """A 2 MB entity_type, first, after some lines, or past the budget: a few thousand
    characters are tokenized instead of two million, and LightRAG's items are kept."""
    big = _words(2_000_000, 1)
    small = [_item(f"E{i}", "person", _words(300, i)) for i in range(30)]
    for position in (0, 3, 25):
        entities = list(small)
        entities.insert(position, _item("BIG", big, "d"))
        tok = TiktokenTokenizer()
        meter = _Metered(tok)
        got = truncate(
            entities, [], max_entity_tokens=6000, max_relation_tokens=8000, tokenizer=tok
        )
        rendered = [entity_line(e) for e in entities]
        assert len(got.entities) == ref_truncate_list(rendered, "\n", 6000), position
        assert got.entity_lines == rendered[: len(got.entities)]
        # a 6 000-token budget needs some 25 000 characters of text at most twice or thrice
        # (encode to the cut point, LightRAG's prefix re-count), never the 2 000 000
        assert meter.chars < len(big) // 15, (position, meter.chars, meter.calls)


def test_a_huge_field_without_cut_points_is_still_exact() -> None:
    """One giant pre-tokenizer piece (no ASCII letter before an ASCII non-letter) is encoded
    whole: exactness first."""
    entities = [_item("A", "t", "short"), _item("BIG", "x" * 50_000, "d"), _item("B", "t", "s")]
    rendered = [entity_line(e) for e in entities]
    for budget in (1, 5, 20, 3000, 12_000):
        got = truncate(
            entities, [], max_entity_tokens=budget, max_relation_tokens=1, tokenizer=TOK
        )
        assert len(got.entities) == ref_truncate_list(rendered, "\n", budget), budget


def test_length_lower_bound_is_sound() -> None:
    assert TOK.max_token_bytes == max(len(b) for b in ENC._mergeable_ranks)
    texts = [" " * 5000, "-" * 4000, "x" * 9000, "😀" * 3000, _words(10_000, 2), "a" * 128 * 3]
    for text in texts:
        assert tk._tokens_at_least(TOK, text) <= len(ENC.encode_ordinary(text))


def test_a_giant_piece_is_encoded_once_per_tokenizer() -> None:
    """A 300 000-``x`` entity_type (one pre-tokenizer piece, no cut point) is encoded whole by
    the first truncation only; the next ones find its tokens in the tokenizer's memo."""
    entities = [_item("A", "t", "short"), _item("BIG", "x" * 300_000, "d")]
    rendered = [entity_line(e) for e in entities]
    tok = TiktokenTokenizer()
    meter = _Metered(tok)
    for round_ in range(3):
        before = meter.chars
        got = truncate(entities, [], max_entity_tokens=6000, max_relation_tokens=1, tokenizer=tok)
        assert len(got.entities) == ref_truncate_list(rendered, "\n", 6000) == 1
        if round_:
            assert meter.chars - before < 60_000, meter.chars - before
    tok.clear_caches()
    before = meter.chars
    truncate(entities, [], max_entity_tokens=6000, max_relation_tokens=1, tokenizer=tok)
    assert meter.chars - before > 300_000  # cleared: encoded again


def test_long_encodings_memo_is_bounded() -> None:
    memo = tk._LongEncodings(max_chars=250)
    texts = [c * 100 for c in "abcd"]
    for text in texts:
        assert list(memo.encode(TOK, text)) == ENC.encode_ordinary(text)
    assert memo._chars <= 250
    assert texts[-1] in memo._tokens and texts[0] not in memo._tokens
    assert list(memo.encode(TOK, "z" * 300)) == ENC.encode_ordinary("z" * 300)  # too long to keep
    assert "z" * 300 not in memo._tokens
