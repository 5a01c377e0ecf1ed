"""Stage 4's chunk lines are byte-identical to LightRAG's ``json.dumps`` of each entry."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from hexrag.core.query.context import _chunk_line, render_chunks
from hexrag.core.query.run import ChunkItem

texts = st.one_of(st.text(max_size=30), st.sampled_from(["", '"', "\\", "\u2028", "\x00", "é"]))


def _lightrag(c: ChunkItem, with_reference: bool) -> str:
    entry: dict[str, Any] = {"reference_id": c.reference_id} if with_reference else {}
    entry["content"] = c.content
    if c.content_headings:
        entry["content_headings"] = c.content_headings
    return json.dumps(entry, ensure_ascii=False)


@given(texts, texts, st.sampled_from(["", "1", "12"]), st.booleans())
def test_chunk_line_equals_json_dumps(
    content: str, headings: str, ref: str, with_ref: bool
) -> None:
    c = ChunkItem(chunk_id="c", content=content, file_path="f", content_headings=headings)
    c.reference_id = ref
    assert _chunk_line(c, with_ref) == _lightrag(c, with_ref)


def test_non_string_values_use_json_dumps() -> None:
    odd: Any = 5
    c = ChunkItem(chunk_id="c", content=odd, file_path="f", content_headings="h → i")
    assert _chunk_line(c, True) == _lightrag(c, True)
    assert render_chunks([c, c]) == "\n".join([_lightrag(c, True)] * 2)
