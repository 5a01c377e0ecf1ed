"""The table ``hexrag documents`` prints: one line per document at any terminal width.

Document ids (``doc-`` + 32 hex digits) are shortened to their first :data:`ID_CHARS`
characters and ``…`` (``--wide`` or ``--json`` give them whole); the status, chunk count and
time (to the minute) never wrap; hexrag's encoded ``file_path`` is shown as ``product /
category / source``, and it and the error take the width that is left, ending in ``…`` when
cut. ``--wide`` shows every value whole (the stored ``file_path``), folding long ones.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich import box
from rich.table import Table

from hexrag.core.model import GRAPH_FIELD_SEP

__all__ = ["ID_CHARS", "documents_table", "readable_file_path", "short_id"]

#: Characters of a document id shown in the narrow table (``doc-`` and 8 hex digits).
ID_CHARS = 12
ERROR_CHARS = 200
_PATH_KEYS = ("product_id", "category", "source")


def short_id(doc_id: str) -> str:
    """``doc_id`` cut to :data:`ID_CHARS` characters and ``…`` (unchanged when short)."""
    return doc_id if len(doc_id) <= ID_CHARS + 1 else doc_id[:ID_CHARS] + "…"


def readable_file_path(file_path: str | None) -> str:
    """hexrag's encoded ``file_path`` (``product_id:<p>:category:<c>:source:<s>``, see
    :func:`hexrag.core.documents.encode_file_path`) as ``<p> / <c> / <s>``; any other value
    unchanged; ``<SEP>``-joined paths joined by ``; ``."""
    out = []
    for segment in str(file_path or "").split(GRAPH_FIELD_SEP):
        tokens = segment.split(":")
        if len(tokens) < 2 or tokens[0] not in _PATH_KEYS:
            out.append(segment)
            continue
        found: dict[str, str] = {}
        key: str | None = None
        value: list[str] = []
        for token in tokens:
            if token in _PATH_KEYS and (key is None or value):
                if key is not None:
                    found[key] = ":".join(value)
                key, value = token, []
            else:
                value.append(token)
        if key is not None:
            found[key] = ":".join(value)
        out.append(" / ".join(found[k] for k in _PATH_KEYS if found.get(k)))
    return "; ".join(out)


def documents_table(docs: Iterable[Any], *, wide: bool = False) -> Table:
    """The rich table of ``docs`` (document status rows with ``id``, ``status``,
    ``chunks_count``, ``updated_at``, ``file_path``, ``error_msg``): one line per document
    (short ids, the file path read as ``product / category / source``), or every value whole
    and the stored ``file_path`` when ``wide``."""
    rows = list(docs)
    errors = any(getattr(d, "error_msg", None) for d in rows)
    if wide:
        table = Table()
        table.add_column("id", overflow="fold", min_width=12)
    else:
        table = Table(box=box.SIMPLE_HEAD, show_edge=False)
        table.add_column("id", no_wrap=True, min_width=ID_CHARS + 1)
    table.add_column("status", no_wrap=True, min_width=10)
    table.add_column("chunks", justify="right", no_wrap=True, min_width=6)
    table.add_column("updated (UTC)", no_wrap=True, min_width=16 if not wide else 19)
    cut: dict[str, Any] = ({"overflow": "fold"} if wide
                           else {"no_wrap": True, "overflow": "ellipsis"})
    table.add_column("file_path" if wide else "source", min_width=10, **cut)
    if errors:
        table.add_column("error", min_width=10, **cut)
    for d in rows:
        updated = str(d.updated_at or "")[:19].replace("T", " ")
        cells = [d.id if wide else short_id(d.id), d.status, str(d.chunks_count),
                 updated if wide else updated[:16],
                 (d.file_path or "") if wide else readable_file_path(d.file_path)]
        if errors:
            cells.append((d.error_msg or "")[:ERROR_CHARS])
        table.add_row(*cells)
    return table
