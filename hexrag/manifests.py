"""The stack's recorded embedding model: choosing the embedder from it, and recording it.

Every stack keeps a :class:`~hexrag.ports.stack.StackManifest` inside itself (see
:mod:`hexrag.ports.stack`). The rule every command follows (:func:`choose_embedder`):

* the stack records a model and none is named: the recorded model is used;
* a model is named (``--embedder``, the TOML's ``embedder``, ``EMBEDDING_BINDING``, an
  embedder object): it must be the recorded one (same model name and dimension), otherwise
  :class:`~hexrag.core.errors.ConfigurationError`; ``hexrag migrate --re-embed`` is the only
  way to change a stack's model;
* the stack records nothing (LightRAG's data, older hexrag stacks): the named model, or the
  default, is used, and :meth:`StackModel.record` writes the manifest at the first write
  (ingest, delete, import, a migration target), never on a read. A write into such a stack
  that already holds vectors needs the model named: a default guess would be recorded as the
  truth.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from hexrag import model_openings
from hexrag.core.errors import ConfigurationError
from hexrag.ports import Embedder
from hexrag.ports.stack import ManifestStore, StackManifest

__all__ = [
    "RecordedModel",
    "StackModel",
    "check_model",
    "choose_embedder",
    "normal_spec",
    "recorded_spec",
    "resolve_spec",
]

Named = Embedder | str | None


def normal_spec(spec: str | None, embedder: Embedder) -> str | None:
    """The spec that builds ``embedder`` again, as its declaration writes it
    (:attr:`~hexrag.model_openings.ModelOpening.spec_of`: ``hashing`` -> ``hashing:<dim>``,
    ``openai`` -> ``openai:<model>``); ``None`` (an embedder given as an object) stays."""
    if spec is None:
        return None
    return model_openings.spec_of(spec, embedder)


def _sized_model_spec(model_name: str, dim: int) -> str | None:
    """The spec of ``model_name`` at ``dim`` when its declaration builds any size."""
    declared = model_openings.model_named(model_name)
    if declared is None or declared.sized is None:
        return None
    return declared.sized(dim)


def recorded_spec(manifest: StackManifest) -> str | None:
    """The spec of the recorded model (a model of any size, the hashing one, needs none
    recorded: its declaration names it by its dimension)."""
    if manifest.embedder:
        return manifest.embedder
    return _sized_model_spec(manifest.embedding_model, manifest.embedding_dim)


def check_model(recorded: StackManifest | None, embedder: Embedder, where: str) -> None:
    """Refuse ``embedder`` when ``where`` records another model."""
    if recorded is None:
        return
    if (embedder.model_name, embedder.dim) != (recorded.embedding_model,
                                              recorded.embedding_dim):
        raise ConfigurationError(
            f"{where} was built with the embedding model {recorded.embedding_model!r} "
            f"({recorded.embedding_dim}-dimensional vectors); the named embedder is "
            f"{embedder.model_name!r} ({embedder.dim}-dimensional): name no embedder to use "
            "the recorded one, or move the stack to another model with `hexrag migrate "
            "--re-embed MODEL`"
        )


async def resolve_spec(spec: str) -> Embedder:
    """The embedder ``spec`` names, its declaration reading ``os.environ`` (``openai:MODEL``
    from ``OPENAI_*`` / LightRAG's ``EMBEDDING_*`` variables; ``await model.aclose()`` a
    client model when done)."""
    from hexrag.embedders import aresolve_embedder

    return await aresolve_embedder(spec)


async def choose_embedder(
    recorded: StackManifest | None,
    named: Named,
    *,
    where: str,
    default: Callable[[], Awaitable[Embedder]],
    default_spec: str | None = model_openings.DEFAULT_MODELS["embedder"],
    resolve: Callable[[str], Awaitable[Embedder]] = resolve_spec,
) -> tuple[Embedder, str | None, bool]:
    """``(embedder, its spec, named or recorded?)`` for a stack recording ``recorded`` (see
    the module docstring); ``default()`` builds the default model when nothing is recorded or
    named, ``resolve(spec)`` a named or recorded one."""
    if isinstance(named, str) and recorded is not None:
        # a model without a fixed size, named bare, takes the recorded one
        named = model_openings.sized_spec(named, recorded.embedding_dim) or named
    if named is not None:
        if isinstance(named, str):
            model = await resolve(named)
            spec: str | None = normal_spec(named, model)
        else:
            model, spec = named, None
        check_model(recorded, model, where)
        if spec is None and recorded is not None:
            spec = recorded.embedder
        return model, spec, True
    if recorded is not None:
        spec = recorded_spec(recorded)
        if spec is None:
            raise ConfigurationError(
                f"{where} was built with the embedding model {recorded.embedding_model!r}, "
                "which hexrag cannot build from its name: name it (--embedder "
                "package.module:callable, or the stack's embedder setting)"
            )
        model = await resolve(spec)
        check_model(recorded, model, where)
        return model, spec, True
    model = await default()
    return model, normal_spec(default_spec, model), False


class RecordedModel:
    """The recorded model's name and dimension, standing in for the embedder where nothing
    is embedded (a read-only command: no model is loaded, no API key is needed)."""

    def __init__(self, manifest: StackManifest) -> None:
        self._manifest = manifest
        #: The recorded model name.
        self.model_name: str = manifest.embedding_model
        #: The recorded dimension.
        self.dim: int = manifest.embedding_dim

    async def embed(self, texts: object) -> Any:
        """Refuse: this stack was opened without its model (read-only)."""
        raise ConfigurationError(
            f"the stack was opened read-only, without its model {self.model_name!r}"
        )


@dataclass
class StackModel:
    """The model side of an opened stack: where its manifest lives, what it records, and
    the model in use (``current``: what the first write records)."""

    store: ManifestStore | None
    recorded: StackManifest | None
    current: StackManifest
    #: Whether ``current`` was named or recorded (``False``: a default guess).
    known: bool = True
    where: str = "the stack"

    @property
    def embedding_model(self) -> str | None:
        """The model that made the stored vectors (``None``: unknown)."""
        if self.recorded is not None:
            return self.recorded.embedding_model
        return self.current.embedding_model if self.known else None

    async def record(self, *, holds_data: bool = False) -> None:
        """Record ``current`` unless a manifest is recorded (before a stack's first write).

        Refused when the stack already holds vectors of an unrecorded model and none was
        named (the default would be recorded as the model that made them)."""
        if self.recorded is not None or self.store is None:
            return
        if holds_data and not self.known:
            raise ConfigurationError(
                f"{self.where} holds vectors but records no embedding model: name the model "
                "that made them (--embedder, or embedder in the stack TOML); hexrag records "
                "it in the stack"
            )
        await self.store.write(self.current)
        self.recorded = self.current

    def adopt(self, model: str | None, dim: int) -> None:
        """Take ``model`` (``dim``-dimensional; the model of vectors about to be copied in)
        as the model in use of a stack that records none; ``None`` (unknown) changes
        nothing."""
        if self.recorded is not None or model is None:
            return
        if model == self.current.embedding_model and dim == self.current.embedding_dim:
            self.known = True
            return
        spec = _sized_model_spec(model, dim)
        self.current = StackManifest(
            embedding_model=model, embedding_dim=dim, embedder=spec,
            layout=self.current.layout, workspace=self.current.workspace,
        )
        self.known = True

    async def replace(self, manifest: StackManifest) -> None:
        """Record ``manifest`` over any recorded one (a migration's target, re-embedded)."""
        if self.store is not None:
            await self.store.write(manifest)
        self.recorded = self.current = manifest
        self.known = True
