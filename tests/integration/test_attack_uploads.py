"""Attack suite, uploads (issue 20, holes 3 and 7): decompression bombs sent to
``POST /documents/upload`` over real HTTP get a 4xx naming the limit within seconds, while the
server's memory stays within 200 MB and ``/health`` keeps answering within 0.5 s; the parser
process's timeout and memory limit hold; several ``file`` parts in one upload are each queued
(or all refused); valid small documents still ingest."""

from __future__ import annotations

import io
import threading
import time
import zipfile
import zlib
from collections.abc import Iterator
from typing import Any

import httpx
import psutil
import pytest

from hexrag.api.parse_pool import close_pools
from tests.integration.live import LiveServer
from tests.integration.test_api_documents import _app
from tests.unit.test_parsers import tiny_docx, tiny_pdf

NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
MB = 1 << 20


def _docx_package(write_document: Any) -> bytes:
    """A .docx whose ``word/document.xml`` is written by ``write_document(stream)``."""
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(tiny_docx(["x"]))) as src, zipfile.ZipFile(
            buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as dst:
        for info in src.infolist():
            if info.filename != "word/document.xml":
                dst.writestr(info.filename, src.read(info.filename))
        with dst.open("word/document.xml", "w", force_zip64=True) as out:
            write_document(out)
    return buf.getvalue()


def _inflate_bomb() -> bytes:
    """~1 MB .docx whose document.xml inflates to 1 GiB (one huge run of text)."""
    def write(out: Any) -> None:
        out.write(f'<w:document xmlns:w="{NS}"><w:body><w:p><w:r><w:t>'.encode())
        block = b"A" * MB
        for _ in range(1024):
            out.write(block)
        out.write(b"</w:t></w:r></w:p></w:body></w:document>")
    return _docx_package(write)


def _paragraph_bomb() -> bytes:
    """~44 KB .docx holding 5 million empty ``<w:p/>``."""
    def write(out: Any) -> None:
        out.write(f'<w:document xmlns:w="{NS}"><w:body>'.encode())
        block = b"<w:p/>" * 100_000
        for _ in range(50):
            out.write(block)
        out.write(b"</w:body></w:document>")
    return _docx_package(write)


def _pdf(objects: list[bytes]) -> bytes:
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
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n"
              "%%EOF\n".encode())
    return out.getvalue()


def _flate_bomb_pdf() -> bytes:
    """A one-page PDF whose FlateDecode content stream inflates to 400 MB."""
    comp = zlib.compressobj(9)
    block = b"0 " * (MB // 2)
    stream = b"".join([comp.compress(block) for _ in range(400)] + [comp.flush()])
    return _pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
        b"<< /Length " + str(len(stream)).encode() + b" /Filter /FlateDecode >>\nstream\n"
        + stream + b"\nendstream",
    ])


def _page_bomb_pdf(pages: int = 200_000) -> bytes:
    """A PDF whose page tree lists ``pages`` references to one page (a few MB)."""
    kids = b" ".join([b"3 0 R"] * pages)
    text = b"BT /F1 12 Tf 72 720 Td (page) Tj ET"
    return _pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count " + str(pages).encode() + b" >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(text)).encode() + b" >>\nstream\n" + text + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ])


@pytest.fixture(scope="module")
def bombs() -> dict[str, bytes]:
    return {"inflate.docx": _inflate_bomb(), "paragraphs.docx": _paragraph_bomb(),
            "flate.pdf": _flate_bomb_pdf(), "pages.pdf": _page_bomb_pdf()}


@pytest.fixture
def live() -> Iterator[LiveServer]:
    server = LiveServer(_app())
    try:
        # the parser process is started by this first upload, not by the attack below
        warm = server.client.post("/documents/upload",
                                  files={"file": ("warm.docx", tiny_docx(["Warm up."]))})
        assert warm.status_code == 200, warm.text
        yield server
    finally:
        server.stop()


class Watch:
    """Polls ``/health`` (own connection) and samples this process's RSS - the server runs
    in a thread of it - until stopped; keeps the slowest answer and the peak RSS."""

    def __init__(self, url: str) -> None:
        self.proc = psutil.Process()
        self.base_rss = self.peak_rss = self.proc.memory_info().rss
        self.slowest = 0.0
        self.polls = 0
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(url,), daemon=True)
        self._thread.start()

    def _run(self, url: str) -> None:
        with httpx.Client(base_url=url, timeout=10) as client:
            while not self._stop.is_set():
                start = time.monotonic()
                try:
                    status = client.get("/health").status_code
                except httpx.HTTPError as exc:
                    self.failures.append(type(exc).__name__)
                    status = 0
                self.slowest = max(self.slowest, time.monotonic() - start)
                if status not in (200, 503):
                    self.failures.append(str(status))
                self.polls += 1
                self.peak_rss = max(self.peak_rss, self.proc.memory_info().rss)
                time.sleep(0.02)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


@pytest.mark.parametrize(("name", "limit"), [
    ("inflate.docx", "MAX_DECOMPRESSED_BYTES"),
    ("paragraphs.docx", "MAX_DOCUMENT_ELEMENTS"),
    ("flate.pdf", "MAX_DECOMPRESSED_BYTES"),
    ("pages.pdf", "MAX_PDF_PAGES"),
])
def test_a_bomb_is_refused_fast_without_memory_growth_or_a_stalled_health(
        live: LiveServer, bombs: dict[str, bytes], name: str, limit: str) -> None:
    data = bombs[name]
    watch = Watch(live.url)
    try:
        time.sleep(0.1)
        start = time.monotonic()
        r = live.client.post("/documents/upload", files={"file": (name, data)})
        took = time.monotonic() - start
        time.sleep(0.1)
    finally:
        watch.stop()
    assert watch.polls >= 3 and not watch.failures, (watch.polls, watch.failures)
    assert watch.slowest < 0.5, f"/health took {watch.slowest:.2f} s during the upload"
    grew = (watch.peak_rss - watch.base_rss) / MB
    assert grew < 200, f"server RSS grew by {grew:.0f} MB"
    assert took < 5, f"refused after {took:.1f} s"
    assert r.status_code == 422, (r.status_code, r.text[:300])
    assert limit in r.text and name in r.text and len(r.text) < 1000, r.text
    names = {d["file_path"] for docs in live.client.get("/documents").json()["statuses"].values()
             for d in docs}
    assert name not in names


def test_the_parser_process_timeout_and_memory_limit_hold(
        bombs: dict[str, bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    """With the size limits lifted, the 5M-paragraph bomb runs into ``PARSE_TIMEOUT`` and the
    1 GiB text into ``PARSE_MEMORY_BYTES``: each a 422, the worker replaced, the next valid
    upload parsed."""
    monkeypatch.setenv("MAX_DOCUMENT_ELEMENTS", str(10**9))
    monkeypatch.setenv("MAX_DOCUMENT_CHARS", str(10**10))
    monkeypatch.setenv("MAX_DECOMPRESSED_BYTES", str(1 << 33))
    monkeypatch.setenv("PARSE_MEMORY_BYTES", str(600 * MB))
    server = LiveServer(_app())
    try:
        monkeypatch.setenv("PARSE_TIMEOUT", "0.5")
        r = server.client.post("/documents/upload",
                               files={"file": ("slow.docx", bombs["paragraphs.docx"])})
        assert r.status_code == 422 and "PARSE_TIMEOUT" in r.text, r.text
        monkeypatch.setenv("PARSE_TIMEOUT", "60")
        warm = server.client.post("/documents/upload",  # starts this pool's worker
                                  files={"file": ("warm.docx", tiny_docx(["Warm up."]))})
        assert warm.status_code == 200, warm.text
        watch = Watch(server.url)
        try:
            r = server.client.post("/documents/upload",
                                   files={"file": ("big.docx", bombs["inflate.docx"])})
        finally:
            watch.stop()
        assert r.status_code == 422 and "PARSE_MEMORY_BYTES" in r.text, r.text
        assert watch.slowest < 0.5 and (watch.peak_rss - watch.base_rss) / MB < 200
        ok = server.client.post("/documents/upload",
                                files={"file": ("after.docx", tiny_docx(["Acme ERP."]))})
        assert ok.status_code == 200, ok.text
    finally:
        server.stop()
        close_pools()


def _all_docs(live: LiveServer) -> dict[str, str]:
    statuses = live.client.get("/documents").json()["statuses"]
    return {d["file_path"]: status for status, docs in statuses.items() for d in docs}


def _wait_idle(live: LiveServer) -> dict[str, str]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        docs = _all_docs(live)
        if not live.client.get("/documents/pipeline_status").json()["busy"] and not any(
                s in ("pending", "processing") for s in docs.values()):
            return docs
        time.sleep(0.05)
    raise AssertionError("ingestion did not finish")


def test_several_file_parts_are_each_queued(live: LiveServer) -> None:
    files = [("file", ("crm.md", b"Acme CRM syncs contacts with Mailchimp.")),
             ("file", ("erp.pdf", tiny_pdf(["Acme ERP books Invoices in Xero."]))),
             ("file", ("ledger.docx", tiny_docx(["Ledger Pro imports Invoices from Xero."])))]
    r = live.client.post("/documents/upload", files=files, data={"product_id": "p-1"})
    assert r.status_code == 200 and r.json()["status"] == "success", r.text
    message = r.json()["message"]
    assert "3 document(s) queued" in message and "crm.md, erp.pdf, ledger.docx" in message
    docs = _wait_idle(live)
    assert {p: s for p, s in docs.items() if p.startswith("product_id:p-1:")} == {
        f"product_id:p-1:source:{n}": "processed" for n in ("crm.md", "erp.pdf", "ledger.docx")
    }, docs


def test_one_bad_part_refuses_the_whole_upload(live: LiveServer,
                                               bombs: dict[str, bytes]) -> None:
    before = _all_docs(live)
    files = [("file", ("fine.md", b"Acme CRM syncs contacts.")),
             ("file", ("paragraphs.docx", bombs["paragraphs.docx"]))]
    r = live.client.post("/documents/upload", files=files)
    assert r.status_code == 422 and "MAX_DOCUMENT_ELEMENTS" in r.text, r.text
    many = [("file", (f"f{i}.md", f"Doc {i}".encode())) for i in range(101)]
    r = live.client.post("/documents/upload", files=many)
    assert r.status_code == 422 and "at most 100" in r.text, r.text
    assert _all_docs(live) == before


def test_a_single_file_part_behaves_as_lightrags_upload(live: LiveServer) -> None:
    r = live.client.post("/documents/upload",
                         files={"file": ("one.pdf", tiny_pdf(["Acme Billing uses Stripe."]))})
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"status", "message", "track_id"} and body["status"] == "success"
    assert "files:" not in body["message"]
    docs = _wait_idle(live)
    assert docs["one.pdf"] == "processed" and docs["warm.docx"] == "processed", docs


def test_hexrag_ingest_applies_the_same_limits(bombs: dict[str, bytes], tmp_path: Any) -> None:
    """``hexrag ingest`` parses in-process under the same limits: the bombs are reported as
    failed documents naming the limit (lowered here through the environment), the valid
    document beside them is ingested."""
    import json
    import os
    import subprocess
    import sys

    from hexrag.devtools.scripted_kg import chat_responder
    from hexrag.devtools.scripted_openai import ScriptedOpenAIServer

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "paragraphs.docx").write_bytes(bombs["paragraphs.docx"])
    (docs / "inflate.docx").write_bytes(bombs["inflate.docx"])
    (docs / "ok.docx").write_bytes(tiny_docx(["Acme CRM syncs contacts with Mailchimp."]))
    with ScriptedOpenAIServer() as server:
        server.set_chat_responder(chat_responder)
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test",
               "MAX_DOCUMENT_ELEMENTS": "100000"}
        done = subprocess.run(
            [sys.executable, "-m", "hexrag.cli", "ingest", str(docs), "--stack",
             str(tmp_path / "rag"), "--llm", "openai:scripted", "--embedder", "hashing:64"],
            capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    assert "paragraphs.docx is over MAX_DOCUMENT_ELEMENTS (100,000" in done.stderr, done.stderr
    assert "inflate.docx is over MAX_DECOMPRESSED_BYTES" in done.stderr, done.stderr
    totals = json.loads(done.stdout.split(": ", 1)[1])
    assert totals["documents"] == 1 and totals["failed"] == 2, totals
