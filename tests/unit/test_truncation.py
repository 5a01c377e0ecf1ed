"""Stage 2 renders lazily; the kept prefix must equal rendering and truncating everything."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from hexrag.core.tokenizer import default_tokenizer, truncate_list_by_token_size
from hexrag.core.truncation import _keep

TOK = default_tokenizer()
words = st.text(alphabet=st.sampled_from(list("ab xyz09中文é😀\n\"\\{}<>|/")), max_size=40)


@settings(max_examples=150, deadline=None)
@given(st.lists(words, min_size=0, max_size=400), st.integers(min_value=0, max_value=2000))
def test_lazy_keep_equals_full_render(descriptions: list[str], budget: int) -> None:
    def render(d: str) -> str:
        return json.dumps({"entity": "E", "type": "T", "description": d}, ensure_ascii=False)

    k, lines = _keep(descriptions, render, budget, TOK)
    full = [render(d) for d in descriptions]
    expected = truncate_list_by_token_size(full, "\n", budget, TOK) if full and budget > 0 else 0
    assert k == expected
    assert lines == full[:k]
