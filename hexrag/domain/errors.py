"""hexrag's error tree.

Every failure a caller can act on is one of these. Adapters translate driver exceptions at
their boundary (``raise BackendUnavailable(...) from exc``); the HTTP API maps the tree to
status codes (``InvalidQuery`` -> 400/422, ``NotFound`` -> 404, ``BackendUnavailable`` -> 503,
``BackendTimeout`` -> 504, anything else -> 500 with an error id).

::

    HexragError
    ├── ConfigurationError        bad settings, wrong embedding dimension, unknown adapter
    ├── InvalidQuery              a query or QueryParam the engine cannot run
    │   └── InvalidScope          unknown scope field, malformed scope value
    ├── InvalidDocument           a document ingestion cannot take as given
    ├── NotFound                  a working directory, collection or record that must exist
    └── BackendError              a store or model server failed
        ├── BackendUnavailable    cannot connect / refused / not started
        └── BackendTimeout        the backend did not answer in time
"""

from __future__ import annotations


class HexragError(Exception):
    """Root of every error hexrag raises on purpose."""


class ConfigurationError(HexragError):
    """The engine or an adapter is configured in a way that cannot work."""


class InvalidQuery(HexragError, ValueError):
    """The query text or its parameters are not acceptable."""


class InvalidScope(InvalidQuery):
    """A ``QueryScope`` names an unknown field or carries a malformed value."""


class NotFound(HexragError, LookupError):
    """Something that must exist (a working directory, a collection) does not."""


class BackendError(HexragError):
    """A storage backend or model server failed.

    ``backend`` names the adapter (``"postgres"``, ``"milvus"``, ...) so that messages
    can say what to check.
    """

    def __init__(self, message: str, *, backend: str = "unknown") -> None:
        super().__init__(message)
        self.backend = backend


class BackendUnavailable(BackendError):
    """The backend cannot be reached (refused, not running, bad address)."""


class BackendTimeout(BackendError):
    """The backend did not answer within the configured time."""


class InvalidDocument(HexragError, ValueError):
    """A document cannot be ingested as given (e.g. a segment over the chunk token limit)."""
