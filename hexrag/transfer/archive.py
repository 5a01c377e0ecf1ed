"""The hexrag archive: a backend-neutral copy of a whole stack, written and read in pages.

Layout of an archive directory (format ``hexrag-archive``, version 2; version 1 archives,
without the document sections, are read too)::

    manifest.json          written last: its presence means the archive is complete
    entities.jsonl         one VectorRecord per line (codec.encode, no vector) ...
    entities.npy           ... and its vector: float32 (count, dim), row i = line i
    relationships.jsonl    relationships.npy
    chunks.jsonl           chunks.npy          (the chunk vector index)
    nodes.jsonl            graph nodes (Entity)
    edges.jsonl            graph edges (Relation, with their ids)
    text_chunks.jsonl      the chunk store (Chunk)
    llm_cache.jsonl        {"key": ..., "value": {...}} per cache entry (when a cache is given)
    doc_status.jsonl       {"id": ..., "record": {...}} per document status row
    fragments.jsonl        one description fragment per line (Fragment.to_json)
    full_docs.jsonl ...    {"key": ..., "value": {...}}: LightRAG's key-value namespaces
                           full_docs, full_entities, full_relations, entity_chunks,
                           relation_chunks

Every section the stack holds is written (:mod:`hexrag.transfer.sections` declares them);
an import refuses an archive holding records of a section the target has no store for.

``manifest.json`` holds ``format``, ``format_version``, ``hexrag_version``, ``created_at``,
``embedding`` (``model``, ``dim``) and per section its files, ``count`` and the SHA-256 of
each file. Lines are UTF-8 JSON objects, records in the source's scan order (insertion order
for memory stores and LightRAG working directories, so their order survives a round trip).
Vectors are copied as stored, never re-embedded.

Memory stays bounded by one page: records are scanned (:mod:`hexrag.ports.scan`) and written
page by page; vectors go to a raw file first and get their ``.npy`` header when the count is
known; import reads lines and memory-maps the ``.npy``.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

from hexrag.core.errors import ConfigurationError
from hexrag.core.model import VectorRecord
from hexrag.ports import BulkLoads, VectorIndex
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page, scan_all
from hexrag.ports.stack import Stack
from hexrag.transfer.codec import decode, dumps, encode
from hexrag.transfer.sections import (
    SECTIONS,
    VECTOR_SECTIONS,
    SectionError,
    decode_line,
    encode_line,
    held_sections,
    scanner,
    writer,
)

__all__ = [
    "ARCHIVE_FORMAT",
    "ARCHIVE_VERSION",
    "SECTIONS",
    "ArchiveError",
    "Progress",
    "StackStores",
    "export_stack",
    "import_archive",
    "read_manifest",
    "verify_archive",
]

ARCHIVE_FORMAT = "hexrag-archive"
ARCHIVE_VERSION = 2
#: Archive versions this hexrag reads (1: no document sections).
READS_VERSIONS = (1, 2)
MANIFEST = "manifest.json"

Progress = Callable[[str, int, int | None], None]
"""``progress(section, done, total)``: called after every page (``total`` may be ``None``)."""


class ArchiveError(ConfigurationError):
    """An archive is missing, incomplete, corrupt, or does not fit the target stack."""


#: The stores of one stack, as export, import, migration and checks see it: the one stack
#: type (:class:`hexrag.ports.stack.Stack`), under the name transfer code has always used.
StackStores = Stack


def require_scan(store: Any, capability: type, what: str) -> None:
    """Refuse (:class:`ArchiveError`) a store without the scan ``capability``."""
    if not isinstance(store, capability):
        raise ArchiveError(
            f"{type(store).__name__} cannot list its records ({what} has no scan capability)"
        )


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("hexrag")
    except Exception:  # pragma: no cover - not installed (source checkout)
        return "unknown"


class _HashingWriter:
    """A binary file that hashes what goes through it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fh: IO[bytes] = open(path, "wb")
        self.sha = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> None:
        self.fh.write(data)
        self.sha.update(data)
        self.size += len(data)

    def close(self) -> str:
        self.fh.close()
        return self.sha.hexdigest()


async def _pages(scan: Callable[..., Any], limit: int) -> AsyncIterator[Page[Any]]:
    async for page in scan_all(scan, limit=limit):
        yield page


async def export_stack(
    stores: StackStores,
    directory: str | Path,
    *,
    page_size: int = DEFAULT_SCAN_LIMIT,
    overwrite: bool = False,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Write every record of ``stores`` into an archive at ``directory``; returns the manifest.

    Refuses (:class:`ArchiveError`) a directory that already holds files unless
    ``overwrite``, and a store without a scan capability. Memory is bounded by one page.
    """
    target = Path(directory).expanduser()
    if target.exists() and not target.is_dir():
        raise ArchiveError(f"{target} exists and is not a directory")
    if target.exists() and any(target.iterdir()) and not overwrite:
        raise ArchiveError(f"{target} is not empty (use overwrite to replace its archive)")
    for name in held_sections(stores):
        scanner(stores, name, side="the exported")  # every section can be listed
    target.mkdir(parents=True, exist_ok=True)
    (target / MANIFEST).unlink(missing_ok=True)  # an old manifest would claim completeness
    totals = await stores.counts()
    say = progress or (lambda *_: None)
    dims = {stores.vector_index(n).dim for n in VECTOR_SECTIONS}
    if len(dims) != 1:
        raise ArchiveError(f"the vector indexes disagree on the dimension: {sorted(dims)}")
    dim = dims.pop()
    sections: dict[str, Any] = {}

    for name in VECTOR_SECTIONS:
        index = stores.vector_index(name)

        def report(done: int, section: str = name) -> None:
            say(section, done, totals[section])

        sections[name] = await _export_vectors(index, target, name, dim, page_size, report)
        sections[name]["cosine_threshold"] = index.cosine_threshold
    for name in held_sections(stores):
        if name in VECTOR_SECTIONS:
            continue

        def report_lines(done: int, section: str = name) -> None:
            say(section, done, totals.get(section))

        def line(item: Any, section: str = name) -> dict[str, Any]:
            return encode_line(section, item)

        sections[name] = await _export_lines(
            scanner(stores, name), target / f"{name}.jsonl", line, page_size, report_lines
        )
    manifest = {
        "format": ARCHIVE_FORMAT,
        "format_version": ARCHIVE_VERSION,
        "hexrag_version": _version(),
        "created_at": _now(),
        "embedding": {"model": stores.embedding_model, "dim": dim},
        "sections": sections,
    }
    tmp = target / (MANIFEST + ".partial")
    tmp.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, target / MANIFEST)
    return manifest


async def _export_lines(
    scan: Callable[..., Any],
    path: Path,
    to_json: Callable[[Any], dict[str, Any]],
    page_size: int,
    report: Callable[[int], None],
) -> dict[str, Any]:
    out = _HashingWriter(path)
    count = 0
    try:
        async for page in _pages(scan, page_size):
            if page.items:
                out.write("".join(dumps(to_json(r)) + "\n" for r in page.items).encode("utf-8"))
                count += len(page.items)
            report(count)
    finally:
        digest = out.close()
    return {"records": path.name, "count": count, "sha256": {path.name: digest}}


async def _export_vectors(
    index: VectorIndex,
    target: Path,
    name: str,
    dim: int,
    page_size: int,
    report: Callable[[int], None],
) -> dict[str, Any]:
    lines = _HashingWriter(target / f"{name}.jsonl")
    raw_path = target / f"{name}.f32.partial"
    count = 0
    try:
        with open(raw_path, "wb") as raw:
            async for page in _pages(index.scan_records, page_size):  # type: ignore[attr-defined]
                if not page.items:
                    report(count)
                    continue
                block = np.empty((len(page.items), dim), dtype="<f4")
                for i, rec in enumerate(page.items):
                    if rec.vector is None:
                        raise ArchiveError(f"{name}: record {rec.id!r} came without its vector")
                    block[i] = np.asarray(rec.vector, dtype=np.float32)
                raw.write(block.tobytes())
                lines.write("".join(dumps(encode(r)) + "\n" for r in page.items).encode("utf-8"))
                count += len(page.items)
                report(count)
    finally:
        lines_digest = lines.close()
    npy = _HashingWriter(target / f"{name}.npy")
    try:
        header = _npy_header(count, dim)
        npy.write(header)
        with open(raw_path, "rb") as raw:
            while block_bytes := raw.read(1 << 22):
                npy.write(block_bytes)
    finally:
        npy_digest = npy.close()
    raw_path.unlink()
    return {
        "records": f"{name}.jsonl",
        "vectors": f"{name}.npy",
        "count": count,
        "dim": dim,
        "sha256": {f"{name}.jsonl": lines_digest, f"{name}.npy": npy_digest},
    }


def _npy_header(count: int, dim: int) -> bytes:
    import io

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": "<f4", "fortran_order": False, "shape": (count, dim)}
    )
    return buf.getvalue()


# ----------------------------------------------------------------------------------------
# Reading
# ----------------------------------------------------------------------------------------


def read_manifest(directory: str | Path) -> dict[str, Any]:
    """The manifest of the archive at ``directory`` (format and version checked)."""
    path = Path(directory).expanduser() / MANIFEST
    if not path.is_file():
        raise ArchiveError(
            f"{path.parent} is not a complete hexrag archive ({MANIFEST} is missing)"
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ArchiveError(f"{path}: unreadable manifest ({exc})") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != ARCHIVE_FORMAT:
        raise ArchiveError(f"{path} is not a {ARCHIVE_FORMAT} manifest")
    version = manifest.get("format_version")
    if version not in READS_VERSIONS:
        raise ArchiveError(
            f"{path}: archive format version {version!r}; this hexrag reads "
            f"{', '.join(map(str, READS_VERSIONS))}"
        )
    return manifest


def _sha256(path: Path) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 22):
            sha.update(block)
    return sha.hexdigest()


def verify_archive(directory: str | Path) -> dict[str, Any]:
    """Check every file's SHA-256 and every count against the manifest; returns it."""
    root = Path(directory).expanduser()
    manifest = read_manifest(root)
    for section, info in manifest["sections"].items():
        for fname, digest in info.get("sha256", {}).items():
            path = root / fname
            if not path.is_file():
                raise ArchiveError(f"archive section {section}: {fname} is missing")
            if _sha256(path) != digest:
                raise ArchiveError(f"archive section {section}: {fname} is corrupt (checksum)")
        lines = _count_lines(root / info["records"])
        if lines != info["count"]:
            raise ArchiveError(
                f"archive section {section}: {info['records']} has {lines} lines, "
                f"manifest says {info['count']}"
            )
        if "vectors" in info:
            arr = np.load(root / info["vectors"], mmap_mode="r")
            if arr.shape != (info["count"], info["dim"]) or arr.dtype != np.float32:
                raise ArchiveError(
                    f"archive section {section}: {info['vectors']} holds {arr.dtype} "
                    f"{arr.shape}, expected float32 ({info['count']}, {info['dim']})"
                )
    return manifest


def _count_lines(path: Path) -> int:
    n = 0
    with open(path, "rb") as fh:
        while block := fh.read(1 << 22):
            n += block.count(b"\n")
    return n


def _read_lines(path: Path, batch: int) -> Iterator[list[dict[str, Any]]]:
    out: list[dict[str, Any]] = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            try:
                out.append(json.loads(line))
            except ValueError as exc:
                raise ArchiveError(f"{path.name} line {lineno}: not JSON ({exc})") from exc
            if len(out) >= batch:
                yield out
                out = []
    if out:
        yield out


async def _require_empty(stores: StackStores) -> None:
    counts = await stores.counts()
    busy = {k: v for k, v in counts.items() if v}
    if busy:
        listing = ", ".join(f"{k}={v}" for k, v in busy.items())
        raise ArchiveError(f"the target stack is not empty ({listing}); use overwrite")


def check_fits(manifest: dict[str, Any], stores: StackStores, *, allow_model_change: bool) -> None:
    """Refuse a target whose vector dimension or embedding model differs from the archive's."""
    emb = manifest.get("embedding") or {}
    dim = emb.get("dim")
    for name in VECTOR_SECTIONS:
        target_dim = stores.vector_index(name).dim
        if dim is not None and target_dim != dim:
            raise ArchiveError(
                f"vector dimension mismatch: the archive holds {dim}-dimensional vectors, "
                f"the target {name} index stores {target_dim}"
            )
    model, target_model = emb.get("model"), stores.embedding_model
    if model and target_model and model != target_model and not allow_model_change:
        raise ArchiveError(
            f"embedding model mismatch: the vectors were made by {model!r}, the target stack "
            f"embeds queries with {target_model!r} (re-embed, or allow the model change)"
        )


async def import_archive(
    directory: str | Path,
    stores: StackStores,
    *,
    batch: int = DEFAULT_SCAN_LIMIT,
    overwrite: bool = False,
    allow_model_change: bool = False,
    verify: bool = True,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Load the archive at ``directory`` into ``stores``; returns its manifest.

    Checks checksums and counts first (``verify``), the vector dimension and embedding model
    (:func:`check_fits`), and that the target is empty unless ``overwrite`` (records with the
    same ids are then replaced). Writes in batches of ``batch`` records, graph nodes before
    edges.
    """
    root = Path(directory).expanduser()
    manifest = verify_archive(root) if verify else read_manifest(root)
    check_fits(manifest, stores, allow_model_change=allow_model_change)
    sections = manifest["sections"]
    unknown = sorted(set(sections) - set(SECTIONS))
    if unknown:
        raise ArchiveError(f"the archive holds sections this hexrag does not know: {unknown}")
    for name, info in sections.items():
        if info.get("count") and writer(stores, name) is None:
            raise SectionError(
                f"the archive holds {info['count']} {name} records and the target stack has "
                f"no store for the {name} section (configure one; nothing was written)"
            )
    if not overwrite:
        await _require_empty(stores)
    say = progress or (lambda *_: None)
    for name in VECTOR_SECTIONS:
        info = sections.get(name)
        if info is None:
            continue
        vectors = np.load(root / info["vectors"], mmap_mode="r")
        index = stores.vector_index(name)
        if isinstance(index, BulkLoads):
            await index.begin_bulk_load()
        done = 0
        for lines in _read_lines(root / info["records"], batch):
            block = np.array(vectors[done : done + len(lines)], dtype=np.float32)
            records = [
                _decode(VectorRecord, d, name, done + i, vector=block[i])
                for i, d in enumerate(lines)
            ]
            await index.upsert(records)
            done += len(lines)
            say(name, done, info["count"])
        if isinstance(index, BulkLoads):
            await index.end_bulk_load()
    for name in SECTIONS:
        info = sections.get(name)
        if info is None or name in VECTOR_SECTIONS:
            continue
        write = writer(stores, name)
        if write is None:
            continue  # an empty section (checked above)
        done = 0
        for lines in _read_lines(root / info["records"], batch):
            await write([_decode_line(name, d, done + i) for i, d in enumerate(lines)])
            done += len(lines)
            say(name, done, info["count"])
    return manifest


def _decode_line(section: str, data: dict[str, Any], line: int) -> Any:
    try:
        return decode_line(section, data)
    except (TypeError, ValueError, KeyError) as exc:
        raise ArchiveError(f"{section} record {line + 1}: {exc!r}") from exc


def _decode(kind: type, data: dict[str, Any], section: str, line: int, **extra: Any) -> Any:
    try:
        record = decode(kind, data)
    except (TypeError, ValueError) as exc:
        raise ArchiveError(f"{section} record {line + 1}: {exc}") from exc
    if extra:
        from dataclasses import replace

        record = replace(record, **extra)
    return record
