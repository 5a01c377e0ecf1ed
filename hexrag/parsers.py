"""Document text from files: ``.txt`` / ``.md`` natively, ``.pdf`` and ``.docx`` through
well-kept libraries (``pypdf``, ``docx2txt``: the ``docs`` extra, ``pip install
'hexrag[docs]'``; both pure Python, neither pulls in ``lxml``, whose mere presence would change
how networkx - and so LightRAG - writes GraphML). Used by ``hexrag ingest`` and
``POST /documents/upload``.

Every failure is an :class:`~hexrag.core.errors.InvalidDocument` with a short message naming
the file: an unsupported suffix, a missing extra, a file that is not valid UTF-8 text, a
damaged PDF/DOCX, or a document with no text (a scanned PDF has none: hexrag does no OCR).
"""

from __future__ import annotations

import io
from pathlib import Path

from hexrag.core.errors import InvalidDocument

__all__ = ["DOCUMENT_SUFFIXES", "TEXT_SUFFIXES", "document_text", "read_document"]

#: Plain-text suffixes read as UTF-8.
TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown", ".text"})
#: Every suffix this module reads.
DOCUMENT_SUFFIXES = TEXT_SUFFIXES | {".pdf", ".docx"}


def _short(name: str) -> str:
    return name if len(name) <= 120 else name[:117] + "..."


def document_text(data: bytes, name: str) -> str:
    """The text of a document given as bytes; ``name`` (a file name) picks the format."""
    suffix = Path(name).suffix.lower()
    label = _short(name)
    if suffix in TEXT_SUFFIXES:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InvalidDocument(f"{label} is not UTF-8 text (byte {exc.start})") from None
    elif suffix == ".pdf":
        text = _pdf(data, label)
    elif suffix == ".docx":
        text = _docx(data, label)
    else:
        kinds = ", ".join(sorted(DOCUMENT_SUFFIXES))
        raise InvalidDocument(f"{label}: unsupported document type {suffix or '(none)'!r} "
                           f"(supported: {kinds})")
    if not text.strip():
        raise InvalidDocument(f"{label} has no text" + (" (a scanned PDF needs OCR first)"
                                                     if suffix == ".pdf" else ""))
    return text


def read_document(path: Path) -> str:
    """The text of the document file at ``path`` (see :func:`document_text`)."""
    return document_text(path.read_bytes(), path.name)


def _pdf(data: bytes, label: str) -> str:
    try:
        from pypdf import PdfReader
        from pypdf.errors import PyPdfError
    except ImportError:
        raise InvalidDocument(f"{label}: reading PDF needs pypdf (pip install 'hexrag[docs]')"
                           ) from None
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise InvalidDocument(f"{label} is an encrypted PDF")
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:
        raise InvalidDocument(f"{label} is not a readable PDF ({type(exc).__name__})") from None
    return "\n\n".join(p.strip() for p in pages if p.strip())


def _docx(data: bytes, label: str) -> str:
    try:
        import docx2txt
    except ImportError:
        raise InvalidDocument(f"{label}: reading DOCX needs docx2txt "
                              "(pip install 'hexrag[docs]')") from None
    import re
    import zipfile
    from xml.etree.ElementTree import ParseError

    try:
        text = str(docx2txt.process(io.BytesIO(data)))
    except (zipfile.BadZipFile, KeyError, ParseError, ValueError, OSError) as exc:
        raise InvalidDocument(f"{label} is not a readable DOCX ({type(exc).__name__})"
                              ) from None
    return re.sub(r"\n{3,}", "\n\n", text).strip()
