"""Document text from files: ``.txt`` / ``.md`` natively, ``.pdf`` through ``pypdf`` and
``.docx`` through a streaming reader of its WordprocessingML parts (the ``docs`` extra, ``pip
install 'hexrag[docs]'``; both pure Python, neither pulls in ``lxml``, whose mere presence would
change how networkx - and so LightRAG - writes GraphML). Used by ``hexrag ingest`` and
``POST /documents/upload`` (which runs it in a separate process with a memory limit, see
:mod:`hexrag.api.parse_pool`).

Every failure is an :class:`~hexrag.core.errors.InvalidDocument` with a short message naming
the file: an unsupported suffix, a missing extra, a file that is not valid UTF-8 text, a
damaged PDF/DOCX, a document with no text (a scanned PDF has none: hexrag does no OCR), or a
document over one of the limits below (a decompression bomb: a small file that inflates to
gigabytes, or millions of empty elements). The limits are :class:`ParseLimits`, read from the
environment:

==========================  ===========  ============================================
environment variable        default      bounds
==========================  ===========  ============================================
``MAX_DECOMPRESSED_BYTES``  64 MiB       DOCX: the XML parts read, counted while they
                                         are inflated (declared sizes are not trusted);
                                         PDF: each stream's decoded size (pypdf's limits)
``MAX_DOCUMENT_ELEMENTS``   1,000,000    DOCX: XML elements in the parts read
``MAX_DOCUMENT_CHARS``      10,000,000   the extracted text (every format)
``MAX_PDF_PAGES``           5,000        PDF: pages
``PARSE_TIMEOUT``           60 s         an upload's parse (wall clock; the API only)
``PARSE_MEMORY_BYTES``      1 GiB        the parser process's address space (the API only)
==========================  ===========  ============================================

A DOCX with more than 10,000 zip entries or with a DTD (entity tricks) is refused as well.
"""

from __future__ import annotations

import io
import os
import re
import struct
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from hexrag.core.errors import ConfigurationError, InvalidDocument

__all__ = ["DOCUMENT_SUFFIXES", "TEXT_SUFFIXES", "ParseLimits", "document_text",
           "read_document"]

#: Plain-text suffixes read as UTF-8.
TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown", ".text"})
#: Every suffix this module reads.
DOCUMENT_SUFFIXES = TEXT_SUFFIXES | {".pdf", ".docx"}

MAX_ZIP_ENTRIES = 10_000
_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main "
_CHUNK = 1 << 16


@dataclass(frozen=True)
class ParseLimits:
    """Decompressed-size, element, text, page, time and memory bounds of a parse (see the
    module docstring for the environment variables and defaults)."""

    max_decompressed_bytes: int = 64 * 1024 * 1024
    max_document_elements: int = 1_000_000
    max_document_chars: int = 10_000_000
    max_pdf_pages: int = 5_000
    parse_timeout: float = 60.0
    parse_memory_bytes: int = 1024 * 1024 * 1024

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ConfigurationError(f"{f.name.upper()} must be a positive number, "
                                         f"got {value!r}")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ParseLimits:
        """The limits set in ``env`` (default: ``os.environ``), defaults elsewhere."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = env.get(f.name.upper(), "").strip()
            if not raw:
                continue
            kind: Callable[[str], Any] = float if f.name == "parse_timeout" else int
            try:
                values[f.name] = kind(raw)
            except ValueError:
                raise ConfigurationError(f"{f.name.upper()} must be a positive "
                                         f"{'number' if kind is float else 'integer'}, "
                                         f"got {raw[:40]!r}") from None
        return cls(**values)


def _short(name: str) -> str:
    return name if len(name) <= 120 else name[:117] + "..."


def document_text(data: bytes, name: str, limits: ParseLimits | None = None) -> str:
    """The text of a document given as bytes; ``name`` (a file name) picks the format.
    ``limits`` default to :meth:`ParseLimits.from_env`."""
    limits = ParseLimits.from_env() if limits is None else limits
    suffix = Path(name).suffix.lower()
    label = _short(name)
    if suffix in TEXT_SUFFIXES:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InvalidDocument(f"{label} is not UTF-8 text (byte {exc.start})") from None
    elif suffix == ".pdf":
        text = _pdf(data, label, limits)
    elif suffix == ".docx":
        text = _docx(data, label, limits)
    else:
        kinds = ", ".join(sorted(DOCUMENT_SUFFIXES))
        raise InvalidDocument(f"{label}: unsupported document type {suffix or '(none)'!r} "
                           f"(supported: {kinds})")
    if len(text) > limits.max_document_chars:
        raise InvalidDocument(_over(label, "MAX_DOCUMENT_CHARS", limits.max_document_chars,
                                    "characters of text"))
    if not text.strip():
        raise InvalidDocument(f"{label} has no text" + (" (a scanned PDF needs OCR first)"
                                                     if suffix == ".pdf" else ""))
    return text


def read_document(path: Path, limits: ParseLimits | None = None) -> str:
    """The text of the document file at ``path`` (see :func:`document_text`)."""
    return document_text(path.read_bytes(), path.name, limits)


def _over(label: str, setting: str, limit: int, what: str) -> str:
    return f"{label} is over {setting} ({limit:,} {what})"


# --- PDF -----------------------------------------------------------------------------------

_PYPDF_BYTE_LIMITS = (
    "maximum_declared_stream_length", "array_based_stream_maximum_output_length",
    "jbig2_maximum_output_length", "lzw_maximum_output_length",
    "run_length_maximum_output_length", "zlib_maximum_output_length",
    "brotli_maximum_output_length", "image_maximum_buffer_size",
)
_PYPDF_LEGACY = ("MAX_DECLARED_STREAM_LENGTH", "MAX_ARRAY_BASED_STREAM_OUTPUT_LENGTH",
                 "JBIG2_MAX_OUTPUT_LENGTH", "LZW_MAX_OUTPUT_LENGTH",
                 "RUN_LENGTH_MAX_OUTPUT_LENGTH", "ZLIB_MAX_OUTPUT_LENGTH",
                 "FLATE_MAX_BUFFER_SIZE")


@contextmanager
def _pypdf_limits(limits: ParseLimits) -> Iterator[None]:
    """pypdf's own decompression limits lowered to ``max_decompressed_bytes`` and its page
    tree bounded near ``max_pdf_pages`` (pypdf >= 6.x: ``apply_configuration``; older
    versions: the module constants of ``pypdf.filters``, only ever lowered)."""
    import pypdf

    cap = limits.max_decompressed_bytes
    apply = getattr(pypdf, "apply_configuration", None)
    if apply is not None:
        current = pypdf.get_configuration()
        names = {f.name for f in fields(current)}
        overrides: dict[str, int] = {
            n: min(getattr(current, n) or cap, cap) for n in _PYPDF_BYTE_LIMITS if n in names
        }
        if "page_tree_maximum_entries" in names:
            overrides["page_tree_maximum_entries"] = min(
                current.page_tree_maximum_entries, 2 * limits.max_pdf_pages + 100)
        with apply(**overrides):
            yield
        return
    import pypdf.filters as flt

    saved = {n: getattr(flt, n) for n in _PYPDF_LEGACY if hasattr(flt, n)}
    try:
        for n, value in saved.items():
            setattr(flt, n, min(value or cap, cap))
        yield
    finally:
        for n, value in saved.items():
            setattr(flt, n, value)


def _pdf(data: bytes, label: str, limits: ParseLimits) -> str:
    try:
        from pypdf import PdfReader
        from pypdf import errors as pdf_errors
    except ImportError:
        raise InvalidDocument(f"{label}: reading PDF needs pypdf (pip install 'hexrag[docs]')"
                              ) from None
    # pypdf before 5.x has no LimitReachedError (nor its limits): RLIMIT_AS stands in
    limit_reached: type[BaseException] = getattr(
        pdf_errors, "LimitReachedError", MemoryError)
    pages: list[str] = []
    try:
        with _pypdf_limits(limits):
            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted:
                raise InvalidDocument(f"{label} is an encrypted PDF")
            count = len(reader.pages)
            if count > limits.max_pdf_pages:
                raise InvalidDocument(_over(label, "MAX_PDF_PAGES", limits.max_pdf_pages,
                                            "pages"))
            size = 0
            for page in reader.pages:
                page.get_contents()  # decoded first: pypdf's text extraction would swallow
                # a LimitReachedError and answer "" (a bomb would read as a scanned page)
                text = (page.extract_text() or "").strip()
                size += len(text) + 2
                if size > limits.max_document_chars:
                    raise InvalidDocument(_over(label, "MAX_DOCUMENT_CHARS",
                                                limits.max_document_chars,
                                                "characters of text"))
                if text:
                    pages.append(text)
    except limit_reached:
        raise InvalidDocument(f"{label} is over a PDF decoding limit (MAX_DECOMPRESSED_BYTES="
                              f"{limits.max_decompressed_bytes:,}, MAX_PDF_PAGES="
                              f"{limits.max_pdf_pages:,})") from None
    except MemoryError:
        raise InvalidDocument(f"{label} needs more memory than the parser may use "
                              "(PARSE_MEMORY_BYTES)") from None
    except (pdf_errors.PyPdfError, ValueError, KeyError, TypeError, OSError, RecursionError,
            AttributeError, IndexError, struct.error) as exc:
        if isinstance(exc, InvalidDocument):
            raise
        raise InvalidDocument(f"{label} is not a readable PDF ({type(exc).__name__})") from None
    return "\n\n".join(pages)


# --- DOCX ----------------------------------------------------------------------------------

_HEADER = re.compile(r"word/header[0-9]*\.xml$")
_FOOTER = re.compile(r"word/footer[0-9]*\.xml$")


_PIECES = {_W + "p": "\n\n", _W + "tab": "\t", _W + "br": "\n", _W + "cr": "\n"}


def _zip_entry_count(data: bytes) -> int | None:
    """The entry count of the zip's end-of-central-directory record, read before the
    central directory is (``None``: not found, or a ZIP64 marker)."""
    pos = data.rfind(b"PK\x05\x06", max(0, len(data) - 65_557))
    if pos < 0 or pos + 22 > len(data):
        return None
    (total,) = struct.unpack_from("<H", data, pos + 10)
    return None if total == 0xFFFF else int(total)


class _Budget:
    """The DOCX reader's running counts, checked against the limits as they grow."""

    def __init__(self, label: str, limits: ParseLimits) -> None:
        self.label, self.limits = label, limits
        self.inflated = self.elements = self.chars = 0

    def check(self) -> None:
        """Raise :class:`InvalidDocument` naming the first limit the counts are over."""
        lim = self.limits
        for count, limit, setting, what in (
            (self.inflated, lim.max_decompressed_bytes, "MAX_DECOMPRESSED_BYTES",
             "bytes of XML once inflated"),
            (self.elements, lim.max_document_elements, "MAX_DOCUMENT_ELEMENTS", "XML elements"),
            (self.chars, lim.max_document_chars, "MAX_DOCUMENT_CHARS", "characters of text"),
        ):
            if count > limit:
                raise InvalidDocument(_over(self.label, setting, limit, what))


def _part_text(stream: io.BufferedIOBase | Any, budget: _Budget) -> str:
    """docx2txt's text of one WordprocessingML part (``w:t`` text, ``w:tab`` as a tab,
    ``w:br``/``w:cr`` as a line break, two line breaks before each ``w:p``), read in 64 KiB
    blocks by a streaming (expat) parser: no tree is built; the inflated bytes, elements and
    text are counted as they come and checked after each block (one block adds at most
    16k elements)."""
    from xml.parsers import expat

    out: list[str] = []
    pieces = _PIECES
    text_tag = _W + "t"
    elements = chars = 0
    in_t = False

    def start(tag: str, _attrs: Any) -> None:
        nonlocal elements, chars, in_t
        elements += 1
        piece = pieces.get(tag)
        if piece is not None:
            chars += 2
            out.append(piece)
        elif tag == text_tag:
            in_t = True

    def end(tag: str) -> None:
        nonlocal in_t
        if tag == text_tag:
            in_t = False

    def text(data: str) -> None:
        nonlocal chars
        if in_t:
            chars += len(data)
            out.append(data)

    def no_dtd(*_: Any) -> None:
        raise InvalidDocument(f"{budget.label}: a DOCX part has a DTD (refused)")

    parser = expat.ParserCreate(namespace_separator=" ")
    parser.buffer_text = True
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = text
    parser.StartDoctypeDeclHandler = no_dtd
    parser.EntityDeclHandler = no_dtd
    base_elements, base_chars = budget.elements, budget.chars
    final = False
    while not final:
        block = stream.read(_CHUNK)
        final = not block
        budget.inflated += len(block)
        budget.check()
        parser.Parse(block, final)
        budget.elements, budget.chars = base_elements + elements, base_chars + chars
        budget.check()
    return "".join(out)


def _docx(data: bytes, label: str, limits: ParseLimits) -> str:
    import zipfile
    import zlib
    from xml.parsers.expat import ExpatError

    count = _zip_entry_count(data)
    if count is not None and count > MAX_ZIP_ENTRIES:
        raise InvalidDocument(f"{label} has {count:,} zip entries (over {MAX_ZIP_ENTRIES:,})")
    budget = _Budget(label, limits)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
            if len(infos) > MAX_ZIP_ENTRIES:
                raise InvalidDocument(f"{label} has {len(infos):,} zip entries "
                                      f"(over {MAX_ZIP_ENTRIES:,})")
            names = [i.filename for i in infos]
            parts = ([n for n in names if _HEADER.match(n)] + ["word/document.xml"]
                     + [n for n in names if _FOOTER.match(n)])
            declared = sum(zf.getinfo(n).file_size for n in parts)
            if declared > limits.max_decompressed_bytes:  # early; the real cap is below
                raise InvalidDocument(_over(label, "MAX_DECOMPRESSED_BYTES",
                                            limits.max_decompressed_bytes,
                                            "bytes of XML once inflated"))
            texts = []
            for part in parts:
                with zf.open(part) as stream:
                    texts.append(_part_text(stream, budget))
    except MemoryError:
        raise InvalidDocument(f"{label} needs more memory than the parser may use "
                              "(PARSE_MEMORY_BYTES)") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, KeyError, ExpatError, ValueError,
            OSError, EOFError, RuntimeError, NotImplementedError, zlib.error,
            struct.error) as exc:
        if isinstance(exc, InvalidDocument):
            raise
        raise InvalidDocument(f"{label} is not a readable DOCX ({type(exc).__name__})"
                              ) from None
    return re.sub(r"\n{3,}", "\n\n", "".join(texts).strip())
