"""Checking a record's or a query's vector before it goes to a vector backend.

Shared by the vector-index adapters (it imports only :mod:`hexrag.domain`, so any adapter
package may use it without importing another adapter's package).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hexrag.domain.errors import ConfigurationError


def checked_vector(
    value: Any, dim: int, *, what: str, backend: str, finite: bool = False
) -> np.ndarray:
    """``value`` as a 1-D float32 array of length ``dim``, else :class:`ConfigurationError`
    naming ``what`` (and ``backend`` on a wrong length); with ``finite``, a NaN or infinite
    component is refused too."""
    if value is None:
        raise ConfigurationError(f"{what} has no vector; every record needs one of length {dim}")
    try:
        arr = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"{what}: vector is not numeric ({exc})") from exc
    if arr.ndim != 1 or arr.shape[0] != dim:
        raise ConfigurationError(
            f"{what}: vector has shape {arr.shape}, this {backend} index stores dim={dim}; "
            "check that the embedder matches the collection"
        )
    if finite and not np.all(np.isfinite(arr)):
        raise ConfigurationError(f"{what}: vector has a NaN or infinite component")
    return arr
