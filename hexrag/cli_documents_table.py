"""The table ``hexrag documents`` prints: one line per document at any terminal width.

Document ids (``doc-`` + 32 hex digits) are shortened to their first :data:`ID_CHARS`
characters and ``…`` (still unique in practice: 8 hex digits; ``--wide`` or ``--json`` give
them whole); the status, chunk count and time never wrap; the file path and the error take
what width is left and end in ``…`` when cut. ``--wide`` shows every value whole, folding
long ones over several lines.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.table import Table

__all__ = ["ID_CHARS", "documents_table", "short_id"]

#: Characters of a document id shown in the narrow table (``doc-`` and 8 hex digits).
ID_CHARS = 12
ERROR_CHARS = 200


def short_id(doc_id: str) -> str:
    """``doc_id`` cut to :data:`ID_CHARS` characters and ``…`` (unchanged when short)."""
    return doc_id if len(doc_id) <= ID_CHARS + 1 else doc_id[:ID_CHARS] + "…"


def documents_table(docs: Iterable[Any], *, wide: bool = False) -> Table:
    """The rich table of ``docs`` (document status rows with ``id``, ``status``,
    ``chunks_count``, ``updated_at``, ``file_path``, ``error_msg``): one line per document,
    or every value whole when ``wide``."""
    rows = list(docs)
    errors = any(getattr(d, "error_msg", None) for d in rows)
    table = Table()
    if wide:
        table.add_column("id", overflow="fold", min_width=12)
    else:
        table.add_column("id", no_wrap=True, min_width=ID_CHARS + 1)
    table.add_column("status", no_wrap=True)
    table.add_column("chunks", justify="right", no_wrap=True)
    table.add_column("updated (UTC)", no_wrap=True)
    cut: dict[str, Any] = ({"overflow": "fold"} if wide
                           else {"no_wrap": True, "overflow": "ellipsis"})
    table.add_column("file_path", min_width=12, ratio=2, **cut)
    if errors:
        table.add_column("error", min_width=10, ratio=1, **cut)
    for d in rows:
        cells = [d.id if wide else short_id(d.id), d.status, str(d.chunks_count),
                 str(d.updated_at or "")[:19].replace("T", " "), d.file_path or ""]
        if errors:
            cells.append((d.error_msg or "")[:ERROR_CHARS])
        table.add_row(*cells)
    return table
