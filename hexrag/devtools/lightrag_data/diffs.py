"""Comparison of the two sides' answers: :func:`diff_query_data`, :func:`diff_context` and
:func:`diff_context_as_sets` list every difference as a readable line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["diff_context", "diff_context_as_sets", "diff_query_data"]


# --------------------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------------------


def _short(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _diff_list(name: str, lr: Sequence[Any], hx: Sequence[Any]) -> list[str]:
    """The first difference of two ordered lists (length, then the first differing item)."""
    out: list[str] = []
    if len(lr) != len(hx):
        out.append(f"{name}: LightRAG has {len(lr)} items, hexrag {len(hx)}")
    for i, (a, b) in enumerate(zip(lr, hx, strict=False)):
        if a != b:
            if isinstance(a, dict) and isinstance(b, dict):
                keys = [
                    k
                    for k in dict.fromkeys([*a, *b])
                    if a.get(k, "<absent>") != b.get(k, "<absent>")
                ]
                detail = "; ".join(
                    f"{k}: LightRAG={_short(a.get(k, '<absent>'), 160)} "
                    f"hexrag={_short(b.get(k, '<absent>'), 160)}"
                    for k in keys
                )
                if list(a) != list(b) and not keys:
                    detail = f"key order LightRAG={list(a)} hexrag={list(b)}"
                out.append(f"{name}[{i}] differs: {detail}")
            else:
                out.append(f"{name}[{i}] differs: LightRAG={_short(a)} hexrag={_short(b)}")
            break
    else:
        if len(lr) != len(hx):
            extra, who = (lr[len(hx)], "LightRAG") if len(lr) > len(hx) else (hx[len(lr)], "hexrag")
            out.append(f"{name}[{min(len(lr), len(hx))}] only in {who}: {_short(extra)}")
    return out


def diff_context(lr: str, hx: str) -> list[str]:
    """The first differing line of two context strings, with its section."""
    if lr == hx:
        return []
    a, b = lr.split("\n"), hx.split("\n")
    section = "?"
    for i in range(max(len(a), len(b))):
        la = a[i] if i < len(a) else "<end>"
        lb = b[i] if i < len(b) else "<end>"
        if la.startswith(("Knowledge Graph Data", "Document Chunks", "Reference Document")):
            section = la.split("(")[0].strip() + (" (" + la.split("(")[1][:20] if "(" in la else "")
        if la != lb:
            return [
                f"context differs at line {i + 1} (section {section!r}; LightRAG {len(a)} lines, "
                f"hexrag {len(b)} lines):",
                f"  LightRAG: {_short(la, 400)}",
                f"  hexrag:   {_short(lb, 400)}",
            ]
    return [f"context differs (lengths {len(lr)} vs {len(hx)}, same lines)"]


def _without_processing_extras(lr: dict[str, Any], hx: dict[str, Any]) -> dict[str, Any]:
    """``hx`` with ``metadata.processing_info`` reduced to LightRAG's keys (hexrag adds some;
    where LightRAG reports no ``processing_info`` at all, hexrag's is dropped)."""
    lr_meta = lr.get("metadata")
    hx_meta = hx.get("metadata")
    if not isinstance(lr_meta, dict) or not isinstance(hx_meta, dict):
        return hx
    hx_info = hx_meta.get("processing_info")
    if not isinstance(hx_info, dict):
        return hx
    lr_info = lr_meta.get("processing_info")
    if not isinstance(lr_info, dict):  # LightRAG has none here: all of hexrag's is additions
        return {**hx, "metadata": {k: v for k, v in hx_meta.items() if k != "processing_info"}}
    trimmed = {k: hx_info[k] for k in hx_info if k in lr_info}
    return {**hx, "metadata": {**hx_meta, "processing_info": trimmed}}


def diff_query_data(lr: dict[str, Any], hx: dict[str, Any], *, exact: bool = True) -> list[str]:
    """Differences between LightRAG's ``aquery_data`` and hexrag's ``query_data`` results.

    ``exact``: everything must be equal, in order (hexrag's extra ``processing_info`` keys are
    ignored). Otherwise (VECTOR chunk picking, whose tie order in LightRAG depends on a set's
    iteration order) chunks and references are compared as sets, the chunk-dependent counts are
    not compared, and entities, relationships and keywords must still be equal in order.
    """
    hx = _without_processing_extras(lr, hx)
    out: list[str] = []
    for key in ("status", "message"):
        if lr.get(key) != hx.get(key):
            out.append(f"{key}: LightRAG={lr.get(key)!r} hexrag={hx.get(key)!r}")
    if list(lr) != list(hx):
        out.append(f"top-level keys: LightRAG={list(lr)} hexrag={list(hx)}")
    lr_data, hx_data = lr.get("data", {}), hx.get("data", {})
    if list(lr_data) != list(hx_data):
        out.append(f"data keys: LightRAG={list(lr_data)} hexrag={list(hx_data)}")
    for key in ("entities", "relationships"):
        out += _diff_list(key, lr_data.get(key, []), hx_data.get(key, []))
    if exact:
        for key in ("chunks", "references"):
            out += _diff_list(key, lr_data.get(key, []), hx_data.get(key, []))
        lr_meta, hx_meta = lr.get("metadata", {}), hx.get("metadata", {})
        if lr_meta != hx_meta:
            out.append(f"metadata: LightRAG={_short(lr_meta, 600)} hexrag={_short(hx_meta, 600)}")
    else:
        lr_ids = {c.get("chunk_id") for c in lr_data.get("chunks", [])}
        hx_ids = {c.get("chunk_id") for c in hx_data.get("chunks", [])}
        if lr_ids != hx_ids:
            out.append(
                f"chunk ids (as sets): only LightRAG={sorted(lr_ids - hx_ids)[:5]} "
                f"only hexrag={sorted(hx_ids - lr_ids)[:5]} ({len(lr_ids)} vs {len(hx_ids)})"
            )
        lr_refs = {r.get("file_path") for r in lr_data.get("references", [])}
        hx_refs = {r.get("file_path") for r in hx_data.get("references", [])}
        if lr_refs != hx_refs:
            out.append(
                f"reference paths (as sets): LightRAG={sorted(lr_refs)} hexrag={sorted(hx_refs)}"
            )
        lr_meta = dict(lr.get("metadata", {}))
        hx_meta = dict(hx.get("metadata", {}))
        for meta in (lr_meta, hx_meta):
            info = meta.get("processing_info")
            if isinstance(info, dict):
                meta["processing_info"] = {
                    k: v
                    for k, v in info.items()
                    if k not in ("final_chunks_count", "merged_chunks_count")
                }
        if lr_meta != hx_meta:
            out.append(f"metadata: LightRAG={_short(lr_meta, 600)} hexrag={_short(hx_meta, 600)}")
    return out


def diff_context_as_sets(lr: str, hx: str) -> list[str]:
    """Context comparison for VECTOR picking: KG sections exact, chunk lines as sets."""

    def split(ctx: str) -> tuple[str, set[str], set[str]]:
        head, _, tail = ctx.partition("Document Chunks")
        chunk_part, _sep, ref_part = tail.partition("Reference Document List")
        chunks = {
            line.split('"content": ', 1)[-1]
            for line in chunk_part.split("\n")
            if line.startswith('{"reference_id"')
        }
        refs = {line.split("] ", 1)[-1] for line in ref_part.split("\n") if line.startswith("[")}
        return head, chunks, refs

    a, b = split(lr), split(hx)
    out: list[str] = []
    if a[0] != b[0]:
        out += diff_context(a[0], b[0])
    if a[1] != b[1]:
        out.append(f"context chunk lines differ as sets ({len(a[1])} vs {len(b[1])})")
    if a[2] != b[2]:
        out.append(f"context reference paths differ as sets: {sorted(a[2] ^ b[2])[:5]}")
    return out

