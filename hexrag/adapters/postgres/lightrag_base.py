"""The shared plumbing of the LightRAG-layout PostgreSQL adapters: LightRAG's tables already
exist (they are never created here) and every row belongs to one ``workspace``.

See :mod:`hexrag.adapters.postgres.lightrag_layout` for the layout itself.
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING, Any, ClassVar

from hexrag.adapters.postgres._base import PgAdapter
from hexrag.domain.errors import ConfigurationError

if TYPE_CHECKING:
    import asyncpg

__all__ = ["_LightRAGPg"]


def _timestamp(epoch: Any) -> _dt.datetime | None:
    """LightRAG's ``TIMESTAMP(0)`` columns (UTC, no zone) from epoch seconds; ``None`` stays
    NULL (read back as ``None``, as it was given)."""
    if isinstance(epoch, (int, float)) and not isinstance(epoch, bool):
        return _dt.datetime.fromtimestamp(int(epoch), _dt.UTC).replace(tzinfo=None)
    return None



class _LightRAGPg(PgAdapter):
    """Common plumbing: LightRAG's tables already exist (never created here). A class whose
    layout strategy depends on the workspace alone names it in ``_layout_of`` (the layout is
    ``_layout_of(workspace)``) and needs no constructor of its own."""

    _kind: ClassVar[str] = "LightRAG layout"
    _layout_of: ClassVar[type | None] = None

    def __init__(
        self, pool: asyncpg.Pool, *, workspace: str, timeout: float | None = None
    ) -> None:
        super().__init__(pool, table_prefix="lightrag", timeout=timeout, create_tables=False)
        if not isinstance(workspace, str) or not workspace:
            raise ConfigurationError("a LightRAG workspace must be a non-empty string")
        self._workspace = workspace
        if self._layout_of is not None:
            self._layout = self._layout_of(workspace)

    def _ddl(self) -> str:
        return ""

    @property
    def workspace(self) -> str:
        """LightRAG's workspace (the ``workspace`` column)."""
        return self._workspace
