"""The core is pure: it imports nothing that does I/O and reads no environment.

Two checks: a static one (no module of ``hexrag.domain``, ``hexrag.core`` or ``hexrag.ports``
imports a driver, an HTTP client, the file system, the environment or an adapter), and a live
one: in a fresh interpreter every core and domain module is imported again, and the core's
values built and used, with ``os.environ``, ``os.getenv`` and ``open`` replaced by functions
that fail. The domain stands at the centre: it imports nothing else of hexrag, the ports import
only the domain, and ``import hexrag.domain`` loads no adapter, tokenizer or configuration.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

FORBIDDEN = {
    "os", "io", "pathlib", "tempfile", "shutil", "gzip", "importlib", "socket", "ssl",
    "subprocess", "urllib", "http", "sqlite3", "pickle", "glob", "mmap",
    "asyncpg", "pgvector", "pymilvus", "redis", "neo4j", "httpx", "openai", "requests",
    "fastapi", "starlette", "uvicorn", "typer", "rich", "pydantic_settings", "tiktoken",
    "dotenv", "json_repair", "hexrag.adapters", "hexrag.api", "hexrag.config", "hexrag.cli",
    "hexrag.env", "hexrag.bootstrap", "hexrag.transfer", "hexrag.testing", "hexrag.embedders",
}


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.append((node.lineno, node.module))
    return out


def test_core_and_ports_import_nothing_that_does_io() -> None:
    bad = []
    for folder in ("hexrag/domain", "hexrag/core", "hexrag/ports"):
        for path in sorted((REPO / folder).rglob("*.py")):
            for line, name in _imports(path):
                if any(name == f or name.startswith(f + ".") for f in FORBIDDEN):
                    bad.append(f"{path.relative_to(REPO)}:{line} imports {name}")
    assert not bad, "\n".join(bad)


PROBE = textwrap.dedent(
    """
    import builtins, importlib, os, sys
    import hexrag  # the outer layers may read files at import; the core is re-imported below

    for name in [m for m in sys.modules if m.startswith(("hexrag.core", "hexrag.domain"))]:
        del sys.modules[name]

    real_environ, real_getenv, real_open = os.environ, os.getenv, builtins.open
    CORE = (os.sep + os.path.join("hexrag", "core") + os.sep,
            os.sep + os.path.join("hexrag", "domain") + os.sep)

    def from_core():
        # any frame of the calling stack in hexrag/core (libraries the core calls, such as
        # pydantic reading its own PYDANTIC_* switches, are not the core's doing)
        f = sys._getframe(2)
        return any(part in f.f_code.co_filename for part in CORE)

    class NoEnv(dict):
        def _guard(name):
            def method(self, *a, **k):
                if from_core():
                    raise AssertionError(f"the core read the environment: {a[:1]}")
                return getattr(real_environ, name)(*a, **k)
            return method
        __getitem__ = _guard("__getitem__")
        get = _guard("get")
        __contains__ = _guard("__contains__")
        __iter__ = _guard("__iter__")
        keys = _guard("keys")
        items = _guard("items")

    def no_getenv(*a, **k):
        if from_core():
            raise AssertionError(f"the core read the environment: {a[:1]}")
        return real_getenv(*a, **k)

    def no_open(*a, **k):
        if from_core():
            raise AssertionError(f"the core opened a file: {a[:1]}")
        return real_open(*a, **k)

    os.environ, os.getenv, builtins.open = NoEnv(), no_getenv, no_open
    try:
        import pkgutil
        import hexrag.core as core
        import hexrag.domain as domain
        names = [m.name for m in pkgutil.walk_packages(core.__path__, "hexrag.core.")]
        names += [m.name for m in pkgutil.iter_modules(domain.__path__, "hexrag.domain.")]
        for name in names:
            importlib.import_module(name)
        from hexrag.core.model import EngineSettings, QueryParam, QueryScope
        from hexrag.core.tokenizer import count_tokens, truncate_list_by_token_size

        class Chars:
            def encode(self, text):
                return [ord(c) for c in text]

            def decode(self, tokens):
                return "".join(map(chr, tokens))

        p = QueryParam(mode="hybrid", scope=QueryScope(product_id="p1"))
        s = EngineSettings(KG_CHUNK_PICK_METHOD="WEIGHT")
        assert p.top_k == 40 and s.kg_chunk_pick_method == "WEIGHT"
        assert count_tokens("abc", Chars()) == 3
        assert truncate_list_by_token_size(["ab", "cd", "ef"], "\\n", 5, Chars()) == 2
    finally:
        os.environ, os.getenv, builtins.open = real_environ, real_getenv, real_open
    print("pure", len(names))
    """
)


def test_core_imports_and_runs_without_environment_or_files() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("pure "), result.stdout
    assert int(result.stdout.split()[1]) >= 40  # every core module (subpackages too) imported again


def test_lightrags_variables_reach_the_front_doors(monkeypatch: object) -> None:
    """:mod:`hexrag.env` applies LightRAG's variables; explicit values win."""
    from hexrag.env import engine_settings, query_param

    env = {"TOP_K": "7", "CHUNK_TOP_K": "x", "RERANK_BY_DEFAULT": "False",
           "KG_CHUNK_PICK_METHOD": "WEIGHT", "HEXRAG_RELATION_LOOKUP": '{"hybrid": "pair"}',
           "COSINE_THRESHOLD": "0.3"}
    p = query_param(env, mode="local")
    assert (p.top_k, p.chunk_top_k, p.enable_rerank) == (7, 20, False)
    assert query_param(env, top_k=3).top_k == 3
    s = engine_settings(env, cosine_threshold=0.5)
    assert s.kg_chunk_pick_method == "WEIGHT" and s.lookup_for("hybrid") == "pair"
    assert s.cosine_threshold == 0.5
    assert engine_settings(env, KG_CHUNK_PICK_METHOD="VECTOR").kg_chunk_pick_method == "VECTOR"


def _hexrag_imports(folder: str, allowed: tuple[str, ...]) -> list[str]:
    """The imports of hexrag modules under ``folder`` that are not under ``allowed``."""
    bad = []
    for path in sorted((REPO / folder).rglob("*.py")):
        for line, name in _imports(path):
            if name != "hexrag" and not name.startswith("hexrag."):
                continue
            if not any(name == a or name.startswith(a + ".") for a in allowed):
                bad.append(f"{path.relative_to(REPO)}:{line} imports {name}")
    return bad


def test_the_domain_imports_nothing_else_of_hexrag() -> None:
    bad = _hexrag_imports("hexrag/domain", ("hexrag.domain",))
    assert not bad, "\n".join(bad)


def test_the_ports_import_only_the_domain_and_each_other() -> None:
    """No arrow runs from the ports back up to the core (or anywhere else)."""
    bad = _hexrag_imports("hexrag/ports", ("hexrag.domain", "hexrag.ports"))
    assert not bad, "\n".join(bad)


DOMAIN_PROBE = textwrap.dedent(
    """
    import sys
    import hexrag.domain.documents, hexrag.domain.errors, hexrag.domain.params
    import hexrag.domain.records, hexrag.domain.scope
    print("\\n".join(sorted(sys.modules)))
    """
)


def test_importing_the_domain_loads_no_adapter_tokenizer_or_configuration() -> None:
    result = subprocess.run(
        [sys.executable, "-c", DOMAIN_PROBE], capture_output=True, text=True, cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = set(result.stdout.split())
    domain = {"hexrag.domain." + m for m in ("documents", "errors", "params", "records", "scope")}
    assert domain <= loaded  # the probe did import what it claims
    ours = {m for m in loaded if m == "hexrag" or m.startswith("hexrag.")}
    assert ours == {"hexrag", "hexrag.domain", *domain}, sorted(ours)
    heavy = {"tiktoken", "pydantic_settings", "fastapi", "httpx", "asyncpg", "pymilvus", "redis"}
    assert not {m for m in loaded if m.split(".")[0] in heavy}


def test_the_old_homes_hand_on_the_same_objects() -> None:
    """``hexrag.core.model``/``errors``/``documents`` and ``hexrag`` re-export the domain's
    own classes (identity, so ``isinstance``, ``except`` and pickling are unchanged)."""
    import pickle

    import hexrag
    import hexrag.core.documents as old_documents
    import hexrag.core.errors as old_errors
    import hexrag.core.model as old_model
    from hexrag.domain import documents, errors, params, records, scope

    assert old_model.Entity is records.Entity and hexrag.Entity is records.Entity
    assert old_model.QueryScope is scope.QueryScope and hexrag.QueryScope is scope.QueryScope
    assert old_model.QueryParam is params.QueryParam and hexrag.QueryParam is params.QueryParam
    assert old_errors.InvalidScope is errors.InvalidScope and hexrag.NotFound is errors.NotFound
    assert old_documents.DocRecord is documents.DocRecord
    try:
        old_model.QueryScope(colour="red")
    except errors.InvalidScope as exc:
        assert isinstance(exc, old_errors.InvalidQuery)
    else:
        raise AssertionError("an unknown scope field was accepted")
    entity = old_model.Entity("e", description="d", properties={"k": 1})
    assert pickle.loads(pickle.dumps(entity)) == entity
    assert type(pickle.loads(pickle.dumps(entity))) is records.Entity
