"""Read every file of a LightRAG working directory once and say which ones are damaged.

``hexrag check`` calls :func:`validate_workdir` before it loads a directory, and the loader
(:func:`hexrag.adapters.workdir.load_workdir`) calls :func:`validate_kv_bytes` on the
``kv_store_*.json`` files it keeps byte for byte (full documents, entity/relation chunk
lists...), so a truncated or damaged file is refused naming it instead of being served and
written back. What each kind of file must be:

================================  ==============================================================
file                              rule
================================  ==============================================================
``kv_store_*.json``               UTF-8 (a BOM is allowed), one JSON object whose every value
                                  is a JSON object (LightRAG's ``JsonKVStorage``: key ->
                                  record); a blank file is reported too (LightRAG reads it as
                                  no records, but it never writes one: it writes ``{}``)
``vdb_*.json``                    NanoVectorDB's ``{"embedding_dim", "data", "matrix"}``: the
                                  rows objects with a string ``__id__``, the base64 matrix one
                                  float32 row per data row
``graph_chunk_entity_relation``   well-formed GraphML the loader reads
``.graphml``
================================  ==============================================================

Large files are read in windows: a key-value file is decoded one record at a time from a
memory map (the records are dropped as soon as they are checked), a NanoVectorDB file through
:class:`~hexrag.adapters.workdir.stream.NanoVectorStream` a page at a time (a file in another
layout, which only the whole-file reader accepts, is read whole).
"""

from __future__ import annotations

import json
import mmap
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hexrag.adapters.workdir._sync_run import run_now
from hexrag.adapters.workdir.files import GRAPH_FILE, VDB_FILES, is_lightrag_file
from hexrag.domain.errors import ConfigurationError

__all__ = [
    "BlankFile",
    "blank_files",
    "require_records",
    "require_whole_file",
    "require_whole_files",
    "validate_graph_file",
    "validate_kv_bytes",
    "validate_kv_file",
    "validate_vdb_file",
    "validate_workdir",
]

_WINDOW = 4 << 20  # bytes of text decoded per step (doubled for a larger record)
_BOM = b"\xef\xbb\xbf"
_WS = " \t\r\n"


class BlankFile(ConfigurationError):
    """A key-value file that is empty or holds only whitespace."""


class _More(Exception):
    """The record runs past the decoded window."""


def _fail(path: Path, what: str) -> ConfigurationError:
    return ConfigurationError(f"{path}: {what}")


def _skip_ws(text: str, at: int) -> int:
    n = len(text)
    while at < n and text[at] in _WS:
        at += 1
    return at


def _text(raw: bytes, at_end: bool, path: Path, offset: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if at_end or exc.start < len(raw) - 3:
            raise _fail(path, f"not UTF-8 text at byte {offset + exc.start}") from exc
        return raw[: exc.start].decode("utf-8")  # a character cut by the window


def validate_kv_bytes(path: Path, buf: bytes | mmap.mmap) -> int:
    """Check that ``buf`` (the content of the key-value file ``path``) is one JSON object of
    JSON objects; returns the number of records.

    Raises :class:`BlankFile` for an empty or blank file and
    :class:`~hexrag.core.errors.ConfigurationError` naming ``path`` and the byte where it
    goes wrong otherwise (a truncated file: "ends before the closing '}'").
    """
    n = len(buf)
    pos = len(_BOM) if buf[: len(_BOM)] == _BOM else 0
    while pos < n and buf[pos : pos + 1] in (b" ", b"\t", b"\r", b"\n"):
        pos += 1
    if pos >= n:
        raise BlankFile(f"{path} is empty: LightRAG reads it as holding no records, but never "
                        "writes it so (an empty store is '{}'): a truncated copy?")
    if buf[pos : pos + 1] != b"{":
        kind = {b"[": "list", b'"': "str"}.get(bytes(buf[pos : pos + 1]), "not an object")
        raise _fail(path, f"must hold a JSON object (key -> record), found {kind}")
    pos += 1
    decode = json.JSONDecoder().raw_decode
    count, state, window = 0, "first", _WINDOW
    while True:
        stop = min(pos + window, n)
        at_end = stop >= n
        text = _text(bytes(buf[pos:stop]), at_end, path, pos)
        at = consumed = 0
        closed = False
        while not closed:
            at = _skip_ws(text, at)
            if at >= len(text):
                break
            if state == "sep":
                if text[at] == ",":
                    state, at, consumed = "key", at + 1, at + 1
                    continue
                if text[at] == "}":
                    closed, consumed = True, at + 1
                    break
                raise _fail(path, f"expected ',' or '}}' after record {count} "
                                  f"(byte {pos + len(text[:at].encode())})")
            if state == "first" and text[at] == "}":
                closed, consumed = True, at + 1
                break
            if text[at] != '"':
                raise _fail(path, f"expected a quoted key for record {count} "
                                  f"(byte {pos + len(text[:at].encode())})")
            try:
                key, j = decode(text, at)
                j = _skip_ws(text, j)
                if j >= len(text):
                    raise _More
                if text[j] != ":":
                    raise _fail(path, f"expected ':' after the key {key!r}")
                j = _skip_ws(text, j + 1)
                if j >= len(text):
                    raise _More
                value, end = decode(text, j)
            except (json.JSONDecodeError, _More) as exc:
                if not at_end:
                    break  # decode again from this record with more text
                where = pos + len(text[:at].encode())
                why = exc.msg if isinstance(exc, json.JSONDecodeError) else "the file ends"
                raise _fail(path, f"malformed JSON in record {count} starting at byte "
                                  f"{where} ({why}): truncated or damaged") from None
            if not isinstance(value, dict):
                raise _fail(path, f"record {key!r} is not a JSON object "
                                  f"(found {type(value).__name__})")
            count += 1
            state, at, consumed = "sep", end, end
        if closed:
            rest = pos + len(text[:consumed].encode())
            if bytes(buf[rest:]).strip(b" \t\r\n"):
                raise _fail(path, f"unexpected data after the closing '}}' at byte {rest}")
            return count
        if consumed == 0:
            if at_end:
                raise _fail(path, f"ends before the closing '}}' after {count} record(s): "
                                  "truncated")
            window *= 2
            continue
        pos += len(text[:consumed].encode("utf-8"))
        window = _WINDOW


def validate_kv_file(path: str | Path) -> int:
    """:func:`validate_kv_bytes` of the file at ``path``, read through a memory map."""
    path = Path(path)
    if path.stat().st_size == 0:
        return validate_kv_bytes(path, b"")
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        return validate_kv_bytes(path, mm)


def require_records(raw: dict[str, Any] | None, path: Path) -> dict[str, Any] | None:
    """``raw`` (a key-value file as :func:`~hexrag.adapters.workdir.files.read_json_kv` read
    it) when every value is a JSON object; else :class:`~hexrag.core.errors.ConfigurationError`
    naming ``path`` and the first bad key."""
    for key, value in (raw or {}).items():
        if not isinstance(value, dict):
            raise _fail(path, f"record {key!r} is not a JSON object "
                              f"(found {type(value).__name__})")
    return raw


def _tail(path: Path, size: int = 256) -> bytes:
    with open(path, "rb") as fh:
        fh.seek(0, 2)
        end = fh.tell()
        fh.seek(max(0, end - size))
        return fh.read().rstrip(b" \t\r\n")


def require_whole_file(path: str | Path) -> None:
    """Refuse a NanoVectorDB or GraphML file whose end is missing (cut after its last record:
    a reader that stops at the data it needs would not notice). Only the file's last bytes
    are read. Raises :class:`~hexrag.core.errors.ConfigurationError` naming the file."""
    path = Path(path)
    if path.name == GRAPH_FILE:
        if not _tail(path).endswith(b"</graphml>"):
            raise ConfigurationError(
                f"malformed GraphML file {path}: it does not end with '</graphml>' (truncated)")
    elif path.stat().st_size and not _tail(path).endswith(b"}"):
        raise ConfigurationError(f"malformed JSON in NanoVectorDB file {path}: it does not end "
                                 "with the closing '}' of its object (truncated)")


def require_whole_files(directory: Path) -> None:
    """:func:`require_whole_file` for the NanoVectorDB and GraphML files of ``directory``."""
    for name in (*VDB_FILES.values(), GRAPH_FILE):
        if (directory / name).is_file():
            require_whole_file(directory / name)


def validate_vdb_file(path: str | Path) -> int:
    """Check a NanoVectorDB file as the loader reads it; returns its number of rows.

    Raises :class:`~hexrag.core.errors.ConfigurationError` naming the file."""
    from hexrag.adapters.workdir.nanovdb import read_nano_vdb
    from hexrag.adapters.workdir.stream import NanoVectorStream

    path = Path(path)
    require_whole_file(path)
    try:
        stream = NanoVectorStream(path, path.stem.removeprefix("vdb_"))
        try:
            rows, cursor = 0, None
            while True:
                # NanoVectorStream.scan_records never suspends (it reads a memory map)
                page = run_now(stream.scan_records(cursor, limit=5000), "a file read suspended")
                rows += len(page.items)
                cursor = page.cursor
                if cursor is None:
                    return rows
        finally:
            stream.close()
    except ConfigurationError:
        # another layout the whole-file reader accepts, or damage: it decides and names it
        return len(read_nano_vdb(path, normalize=False).rows)


def validate_graph_file(path: str | Path) -> None:
    """Check the GraphML file as the loader reads it (a streaming parse; the attributes are
    dropped afterwards). Raises :class:`~hexrag.core.errors.ConfigurationError` naming it."""
    from xml.parsers import expat

    from hexrag.adapters.workdir.graphml import read_graphml

    path = Path(path)
    parser = expat.ParserCreate()
    try:
        with open(path, "rb") as fh:
            while block := fh.read(1 << 20):
                parser.Parse(block, False)
        parser.Parse(b"", True)
    except expat.ExpatError as exc:
        raise ConfigurationError(f"malformed GraphML file {path}: {exc} (truncated or "
                                 "damaged)") from None
    read_graphml(path)


def blank_files(directory: Path, names: Iterable[str]) -> list[str]:
    """The files among ``names`` present in ``directory`` that hold nothing but whitespace."""
    out = []
    for name in names:
        p = directory / name
        try:
            if p.is_file() and p.stat().st_size < 4096 and not p.read_bytes().lstrip(
                _BOM).strip(b" \t\r\n"):
                out.append(name)
        except OSError:
            continue
    return out


def validate_workdir(directory: str | Path) -> dict[str, str]:
    """Every LightRAG file of ``directory`` read once: file name -> what is wrong with it
    (the message names the file); empty when every file is sound, or when ``directory`` is
    not a directory (the loader reports that)."""
    base = Path(directory).expanduser()
    problems: dict[str, str] = {}
    try:
        names = sorted(p.name for p in base.iterdir() if p.is_file() and is_lightrag_file(p.name))
    except OSError:
        return problems
    vdb_names = set(VDB_FILES.values())
    for name in names:
        path = base / name
        try:
            if name == GRAPH_FILE:
                validate_graph_file(path)
            elif name in vdb_names:
                validate_vdb_file(path)
            else:
                validate_kv_file(path)
        except ConfigurationError as exc:
            problems[name] = str(exc)
        except (OSError, ValueError) as exc:  # unreadable, or a decoder's own error
            problems[name] = f"{path} cannot be read: {type(exc).__name__}: {exc}"[:500]
    return problems
