"""The parser limits of :mod:`hexrag.parsers` in-process (the CLI's path): the streaming DOCX
reader gives docx2txt's text, refuses DTDs, too many zip entries, lying sizes and documents
over MAX_DECOMPRESSED_BYTES / MAX_DOCUMENT_ELEMENTS / MAX_DOCUMENT_CHARS / MAX_PDF_PAGES; the
limits come from the environment."""

from __future__ import annotations

import io
import re
import struct
import zipfile

import pytest

from hexrag.core.errors import ConfigurationError, InvalidDocument
from hexrag.parsers import ParseLimits, document_text
from tests.integration.test_attack_uploads import _page_bomb_pdf
from tests.unit.test_parsers import tiny_docx, tiny_pdf

NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def _with_parts(base: bytes, replace: dict[str, bytes], add: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(base)) as src, zipfile.ZipFile(
            buf, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, replace.get(info.filename, src.read(info.filename)))
        for name, data in add.items():
            dst.writestr(name, data)
    return buf.getvalue()


def test_docx_text_equals_docx2txts() -> None:
    import docx2txt

    base = tiny_docx(["Hello\tthere", "B & C"], [["x", "y"]])
    with zipfile.ZipFile(io.BytesIO(base)) as z:
        document = z.read("word/document.xml").replace(
            b"</w:body>", b"<w:p><w:r><w:t>a</w:t><w:tab/><w:t>b</w:t><w:br/>"
            b"<w:t>c &amp; &#x263A;</w:t></w:r></w:p><w:p/><w:p/></w:body>")
    data = _with_parts(base, {"word/document.xml": document}, {
        "word/header1.xml": f'<w:hdr xmlns:w="{NS}"><w:p><w:r><w:t>HEAD</w:t></w:r></w:p>'
                            "</w:hdr>".encode(),
        "word/footer2.xml": f'<w:ftr xmlns:w="{NS}"><w:p><w:r><w:t>FOOT</w:t></w:r></w:p>'
                            "</w:ftr>".encode()})
    expected = re.sub(r"\n{3,}", "\n\n", docx2txt.process(io.BytesIO(data))).strip()
    assert document_text(data, "x.docx") == expected
    assert expected.startswith("HEAD\n\nHello\tthere") and expected.endswith("c & ☺\n\nFOOT")


def test_a_docx_with_a_dtd_is_refused() -> None:
    laughs = (b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaaaaaaaa">'
              b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
              b'<w:document xmlns:w="' + NS.encode() + b'"><w:body><w:p><w:r><w:t>&b;</w:t>'
              b"</w:r></w:p></w:body></w:document>")
    data = _with_parts(tiny_docx(["x"]), {"word/document.xml": laughs}, {})
    with pytest.raises(InvalidDocument, match="DTD"):
        document_text(data, "laughs.docx")


def test_too_many_zip_entries_are_refused_before_the_directory_is_read() -> None:
    data = _with_parts(tiny_docx(["x"]), {}, {f"junk/{i}": b"" for i in range(10_001)})
    with pytest.raises(InvalidDocument, match=r"10,00[0-9] zip entries"):
        document_text(data, "many.docx")


def test_declared_sizes_are_not_trusted() -> None:
    """A central directory that under-states document.xml's size reads no further than it
    says: the part is damaged, not inflated."""
    data = bytearray(tiny_docx(["Acme CRM syncs contacts with Mailchimp."] * 50))
    pos = data.find(b"PK\x01\x02")
    while pos >= 0:
        name_len = struct.unpack_from("<H", data, pos + 28)[0]
        if data[pos + 46:pos + 46 + name_len] == b"word/document.xml":
            struct.pack_into("<I", data, pos + 24, 40)  # uncompressed size: 40 bytes
        pos = data.find(b"PK\x01\x02", pos + 4)
    with pytest.raises(InvalidDocument, match="not a readable DOCX"):
        document_text(bytes(data), "liar.docx")


@pytest.mark.parametrize(("limits", "setting"), [
    (ParseLimits(max_decompressed_bytes=2000), "MAX_DECOMPRESSED_BYTES"),
    (ParseLimits(max_document_elements=100), "MAX_DOCUMENT_ELEMENTS"),
    (ParseLimits(max_document_chars=500), "MAX_DOCUMENT_CHARS"),
])
def test_docx_limits_name_the_setting(limits: ParseLimits, setting: str) -> None:
    data = tiny_docx([f"Paragraph {i} of the Acme handbook." for i in range(100)])
    assert "Paragraph 99" in document_text(data, "ok.docx")
    with pytest.raises(InvalidDocument, match=setting):
        document_text(data, "big.docx", limits)


def test_pdf_limits_name_the_setting() -> None:
    data = tiny_pdf(["Acme ERP books Invoices in Xero."] * 20)
    with pytest.raises(InvalidDocument, match="MAX_DOCUMENT_CHARS"):
        document_text(data, "long.pdf", ParseLimits(max_document_chars=100))
    with pytest.raises(InvalidDocument, match="MAX_DOCUMENT_CHARS"):
        document_text(b"x" * 101, "long.txt", ParseLimits(max_document_chars=100))
    two_pages = _page_bomb_pdf(2)
    assert document_text(two_pages, "two.pdf") == "page\n\npage"
    with pytest.raises(InvalidDocument, match="MAX_PDF_PAGES"):
        document_text(two_pages, "two.pdf", ParseLimits(max_pdf_pages=1))


def test_limits_from_the_environment() -> None:
    assert ParseLimits.from_env({}) == ParseLimits()
    limits = ParseLimits.from_env({"MAX_DECOMPRESSED_BYTES": "1000", "PARSE_TIMEOUT": "2.5",
                                   "MAX_PDF_PAGES": " 7 "})
    assert (limits.max_decompressed_bytes, limits.parse_timeout, limits.max_pdf_pages) == (
        1000, 2.5, 7)
    for env in ({"MAX_DOCUMENT_CHARS": "lots"}, {"MAX_DOCUMENT_ELEMENTS": "0"},
                {"PARSE_MEMORY_BYTES": "-1"}):
        with pytest.raises(ConfigurationError, match=next(iter(env))):
            ParseLimits.from_env(env)
