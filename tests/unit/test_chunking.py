"""hexrag's chunker equals LightRAG 1.5.7's ``chunking_by_token_size`` on generated texts."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hexrag.adapters.tiktoken_offline import default_tokenizer
from hexrag.core.errors import InvalidDocument
from hexrag.core.ingest.chunking import chunk_by_tokens
from hexrag.devtools.lightrag_data import register_offline_tiktoken, require_lightrag

require_lightrag()
register_offline_tiktoken()

from lightrag.chunker.token_size import chunking_by_token_size  # noqa: E402
from lightrag.utils import TiktokenTokenizer  # noqa: E402

LR_TOK = TiktokenTokenizer("gpt-4o-mini")
TOK = default_tokenizer()

texts = st.lists(
    st.sampled_from(
        [*"abc xyz\n\t.,", "\n\n", "。", "é", "中文", "😀", " the ", "<|endoftext|>", "\u00a0"]
    ),
    max_size=120,
).map("".join)


def _lightrag(text: str, **kw: object) -> list[tuple[str, int, int]] | str:
    try:
        out = chunking_by_token_size(LR_TOK, text, **kw)  # type: ignore[arg-type]
    except ValueError as exc:  # ChunkTokenLimitExceededError is a ValueError
        return type(exc).__name__
    return [(c["content"], c["tokens"], c["chunk_order_index"]) for c in out]


def _hexrag(text: str, **kw: object) -> list[tuple[str, int, int]] | str:
    try:
        out = chunk_by_tokens(text, TOK, **kw)  # type: ignore[arg-type]
    except InvalidDocument:
        return "refused"
    return [(c.content, c.tokens, c.order) for c in out]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts, st.integers(2, 40), st.integers(0, 39),
       st.sampled_from([None, "\n", "\n\n", "。", "x"]), st.booleans())
def test_chunks_equal_lightrags(
    text: str, size: int, overlap: int, split: str | None, only: bool
) -> None:
    kw = {"chunk_token_size": size, "chunk_overlap_token_size": overlap,
          "split_by_character": split, "split_by_character_only": only}
    want, got = _lightrag(text, **kw), _hexrag(text, **kw)
    if isinstance(want, str):
        assert got == "refused", (want, got)
    else:
        assert got == want


def test_defaults_are_lightrags() -> None:
    text = "Acme CRM syncs contacts. " * 400
    want = _lightrag(text)
    assert _hexrag(text) == want and len(want) > 1


def test_negative_overlap_is_refused() -> None:
    with pytest.raises(InvalidDocument):
        chunk_by_tokens("abc", TOK, chunk_overlap_token_size=-1)
