"""Stage 2 renders lazily; the kept prefix must equal rendering and truncating everything."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hexrag.adapters.tiktoken_offline import default_tokenizer
from hexrag.core.model import Entity, Relation
from hexrag.core.query.run import EntityItem, RelationItem
from hexrag.core.query.truncation import _keep, entity_line, entity_row, relation_line, relation_row
from hexrag.core.tokenizer import truncate_list_by_token_size

TOK = default_tokenizer()
words = st.text(alphabet=st.sampled_from(list('ab xyz09中文é😀\n"\\{}<>|/')), max_size=40)


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


any_text = st.one_of(st.text(max_size=30), st.sampled_from(["", '"', "\\", "\u2028", "\x00", "é"]))


@given(any_text, st.one_of(st.none(), any_text), st.one_of(st.none(), any_text), any_text)
def test_fast_lines_equal_json_dumps(
    name: str, etype: str | None, desc: str | None, other: str
) -> None:
    """The hand-joined lines are byte-identical to LightRAG's ``json.dumps`` of the rows."""
    entity = EntityItem(
        entity=Entity(name=name, entity_type=etype, description=desc), rank=1, created_at=None
    )
    assert entity_line(entity) == json.dumps(entity_row(entity), ensure_ascii=False)
    relation = RelationItem(
        relation=Relation(id="r", src_id=name, tgt_id=other, description=desc),
        entity1=name,
        entity2=other,
        rank=None,
        created_at=None,
        resolved_by="pair",
    )
    assert relation_line(relation) == json.dumps(relation_row(relation), ensure_ascii=False)
    odd_type: Any = 7  # a non-string value read from a foreign store: the json.dumps path
    odd = EntityItem(
        entity=Entity(name=name, entity_type=odd_type, description=desc), rank=1, created_at=None
    )
    assert entity_line(odd) == json.dumps(entity_row(odd), ensure_ascii=False)
