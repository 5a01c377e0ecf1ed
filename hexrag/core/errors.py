"""hexrag's error tree: re-exported from :mod:`hexrag.domain.errors`, where it lives.

The same classes, handed on so that code written before keeps importing them from here.
"""

from __future__ import annotations

from hexrag.domain.errors import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    ConfigurationError,
    HexragError,
    InvalidDocument,
    InvalidQuery,
    InvalidScope,
    NotFound,
)

__all__ = [
    "BackendError",
    "BackendTimeout",
    "BackendUnavailable",
    "ConfigurationError",
    "HexragError",
    "InvalidDocument",
    "InvalidQuery",
    "InvalidScope",
    "NotFound",
]
