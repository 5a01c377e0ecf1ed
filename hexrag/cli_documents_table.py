"""The table ``hexrag documents`` prints: one line per document at any terminal width.

Document ids (``doc-`` + 32 hex digits) are shortened to their first :data:`ID_CHARS`
characters and ``…`` (``--wide`` or ``--json`` give them whole); the status, chunk count and
time (to the minute; without the year below 100 columns) never wrap; hexrag's encoded
``file_path`` is shown as ``product / category / source`` in the width that is left, ending in
``…`` when cut, and each failed document's error follows the table on one line of its own.
``--wide`` shows every value whole (the stored ``file_path``, the error in a column), folding
long ones.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from hexrag.core.encoded_fields import encoded_fields
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
        found = encoded_fields(tokens, _PATH_KEYS)
        out.append(" / ".join(found[k] for k in _PATH_KEYS if found.get(k)))
    return "; ".join(out)


def documents_table(docs: Iterable[Any], *, wide: bool = False, width: int = 80
                    ) -> RenderableType:
    """What ``hexrag documents`` prints for ``docs`` (document status rows with ``id``,
    ``status``, ``chunks_count``, ``updated_at``, ``file_path``, ``error_msg``) on a
    ``width``-column terminal: a table with one line per document (short ids, the file path
    read as ``product / category / source``) and each failure's error on one line below it;
    or, when ``wide``, every value whole (the stored ``file_path``, the error in a column)."""
    rows = list(docs)
    errors = any(getattr(d, "error_msg", None) for d in rows)
    if wide:
        table = Table()
        table.add_column("id", overflow="fold", min_width=12)
        table.add_column("status", no_wrap=True)
        table.add_column("chunks", justify="right", no_wrap=True)
        table.add_column("updated (UTC)", no_wrap=True)
        table.add_column("file_path", overflow="fold", min_width=12)
        if errors:
            table.add_column("error", overflow="fold", min_width=10)
        for d in rows:
            table.add_row(d.id, d.status, str(d.chunks_count),
                          str(d.updated_at or "")[:19].replace("T", " "), d.file_path or "",
                          *([(d.error_msg or "")[:ERROR_CHARS]] if errors else []))
        return table
    stamp = 16 if width >= 100 else 11  # "2026-11-26 12:07", or "11-26 12:07" when narrow
    fixed = {"id": ID_CHARS + 1, "status": 10, "chunks": 6,
             "updated (UTC)" if stamp == 16 else "updated UTC": stamp}
    overhead = 2 * (len(fixed) + 1)  # one space of padding and one divider a column
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, padding=(0, 1, 0, 0))
    for name, size in fixed.items():
        table.add_column(name, no_wrap=True, overflow="ellipsis", max_width=size,
                         justify="right" if name == "chunks" else "left")
    table.add_column("source", no_wrap=True, overflow="ellipsis",
                     max_width=max(8, width - sum(fixed.values()) - overhead))
    failures: list[Text] = []
    for d in rows:
        updated = str(d.updated_at or "")[:16].replace("T", " ")
        table.add_row(short_id(d.id), d.status, str(d.chunks_count), updated[16 - stamp:],
                      readable_file_path(d.file_path))
        if d.error_msg:
            line = Text(f"{short_id(d.id)} {d.status}: ", style="bold", no_wrap=True,
                        overflow="ellipsis")
            line.append(" ".join(str(d.error_msg).split())[:ERROR_CHARS], style="")
            line.truncate(width, overflow="ellipsis")
            failures.append(line)
    if not failures:
        return table
    return Group(table, Text("errors (whole: --wide or --json):", style="dim"), *failures)
