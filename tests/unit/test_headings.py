"""Heading paths (spec 7.5): LightRAG's cleaning rules, and the fast paths agree with them."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from hexrag.adapters.tiktoken_offline import default_tokenizer
from hexrag.core.query.headings import _clean, format_parent_headings, truncate_section_context


def reference_clean(text: str) -> str:
    """LightRAG's ``chunk_schema._clean_heading_text``."""
    text = text.replace("→", " ")
    keep = frozenset("\t\n\r\f\v")
    text = "".join(ch for ch in text if ch in keep or unicodedata.category(ch) not in ("Cc", "Cf"))
    return re.sub(r"\s+", " ", text).strip()


@given(st.text(max_size=60))
def test_clean_equals_lightrag(text: str) -> None:
    assert _clean(text) == reference_clean(text)


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=60))
def test_ascii_fast_path_equals_lightrag(text: str) -> None:
    assert _clean(text) == reference_clean(text)


def test_nested_and_flat_records() -> None:
    nested = {"heading": {"heading": "Own", "parent_headings": ["A\tx", " B → C "], "level": 2}}
    assert format_parent_headings(nested) == "A x → B C"
    flat = {"heading": "Own", "parent_headings": ["Top", "", "x" * 100], "level": 3}
    assert format_parent_headings(flat) == "Top → " + "x" * 79 + "…"
    assert format_parent_headings({"content": "no headings"}) == ""


def test_section_context_cap() -> None:
    tok = default_tokenizer()
    short = "Intro → Setup"
    assert truncate_section_context(short, tok, 256) == short
    long_path = " → ".join(f"Level {i} " + "word " * 30 for i in range(12))
    capped = truncate_section_context(long_path, tok, 64)
    assert len(tok.encode(capped)) <= 64
    assert capped.startswith("Level 0") and "…" in capped
