"""What the offline tiktoken package offers: LightRAG's default tokenizer (``tiktoken``,
``o200k_base``, no download)."""

from __future__ import annotations

from typing import Any

from hexrag.model_openings import ModelContext, ModelOpening

__all__ = ["MODELS"]


def open_tokenizer(ctx: ModelContext, spec: str) -> Any:
    """A new tokenizer with its own memo of counts (:func:`default_tokenizer`)."""
    from hexrag.adapters.tiktoken_offline import default_tokenizer

    return default_tokenizer()


MODELS = (ModelOpening(kind="tokenizer", name="tiktoken", open=open_tokenizer,
                       syntax="tiktoken"),)
