"""Document text from files (:mod:`hexrag.parsers`): UTF-8 text, PDF (pypdf) and DOCX
(python-docx), with typed errors for everything else."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from hexrag.core.errors import InvalidDocument
from hexrag.parsers import document_text, read_document


def tiny_pdf(lines: list[str]) -> bytes:
    """A valid one-page PDF whose text layer holds ``lines`` (ASCII)."""
    text = "BT /F1 12 Tf 72 720 Td 14 TL " + " ".join(
        "(" + line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ") Tj T*"
        for line in lines) + " ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(text)).encode() + b" >>\nstream\n" + text.encode()
        + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(f"{i} 0 obj\n".encode() + body + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for off in offsets:
        out.write(f"{off:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
              .encode())
    return out.getvalue()


def tiny_docx(paragraphs: list[str], table: list[list[str]] | None = None) -> bytes:
    """A minimal valid .docx (WordprocessingML package) with these paragraphs and table."""
    import zipfile
    from xml.sax.saxutils import escape

    def para(text: str) -> str:
        return f"<w:p><w:r><w:t xml:space=\"preserve\">{escape(text)}</w:t></w:r></w:p>"

    body = "".join(para(p) for p in paragraphs)
    if table:
        body += "<w:tbl>" + "".join(
            "<w:tr>" + "".join(f"<w:tc>{para(c)}</w:tc>" for c in row) + "</w:tr>"
            for row in table) + "</w:tbl>"
    ns = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    document = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
                f'<w:document xmlns:w="{ns}"><w:body>{body}</w:body></w:document>')
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("[Content_Types].xml", (
            '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats'
            '.org/package/2006/content-types"><Default Extension="rels" ContentType="applicat'
            'ion/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" Conte'
            'ntType="application/xml"/><Override PartName="/word/document.xml" ContentType="ap'
            'plication/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
            '</Types>'))
        z.writestr("_rels/.rels", (
            '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openx'
            'mlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://sc'
            'hemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target'
            '="word/document.xml"/></Relationships>'))
        z.writestr("word/document.xml", document)
    return buf.getvalue()


def test_text_files(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_bytes("\ufeff# Acme CRM\nsyncs with Mailchimp — nightly.".encode())
    assert read_document(tmp_path / "a.md") == "# Acme CRM\nsyncs with Mailchimp — nightly."
    assert document_text(b"plain", "notes.TXT") == "plain"


def test_pdf_text_layer() -> None:
    text = document_text(tiny_pdf(["Acme ERP books Invoices in Xero.", "Xero reports (daily)."]),
                         "erp.pdf")
    assert "Acme ERP books Invoices in Xero." in text and "Xero reports (daily)." in text


def test_docx_paragraphs_and_tables() -> None:
    text = document_text(tiny_docx(["Acme CRM syncs contacts.", "Mailchimp sends mail."],
                                   [["Product", "Owner"], ["Acme CRM", "Sales"]]), "crm.docx")
    assert text.split("\n\n")[:2] == ["Acme CRM syncs contacts.", "Mailchimp sends mail."]
    for cell in ("Product", "Owner", "Acme CRM", "Sales"):
        assert cell in text.split("\n\n")


@pytest.mark.parametrize(("data", "name", "message"), [
    (b"\xff\xfe\x00bad", "x.txt", "is not UTF-8 text"),
    (b"hello", "x.exe", "unsupported document type '.exe'"),
    (b"hello", "noext", "unsupported document type '(none)'"),
    (b"%PDF-1.4 garbage", "x.pdf", "is not a readable PDF"),
    (b"PK not a zip", "x.docx", "is not a readable DOCX"),
    (b"   \n\t ", "x.md", "has no text"),
])
def test_bad_documents_are_typed_errors(data: bytes, name: str, message: str) -> None:
    with pytest.raises(InvalidDocument, match=message.replace("(", r"\(").replace(")", r"\)")):
        document_text(data, name)


def test_a_pdf_without_text_says_so() -> None:
    with pytest.raises(InvalidDocument, match="needs OCR"):
        document_text(tiny_pdf([]), "scan.pdf")
