"""Seeded LightRAG-style datasets, written into genuine LightRAG 1.5.7 working directories.

Used by the parity suite (``tests/integration/test_parity_lightrag.py``) and the benchmark
(``bench/parity_bench.py``). Three parts:

* :func:`generate_dataset` builds a realistic knowledge graph from a seed: products with a
  category and several sources (``file_path`` = ``product_id:<p>:category:<c>:source:<s>``),
  documents cut into chunks (1.5.7 chunk ids ``doc-<md5>-chunk-NNN``, some with heading paths),
  entities with Zipf popularity (hubs appear in hundreds of chunks and many products), and about
  twice as many relations whose evidence spans several chunks. It also plants the awkward cases
  LightRAG data really has: descriptions made of ``<SEP>``-joined fragments, names with quotes and
  non-ASCII letters, edges without a ``weight``, nodes without a ``description``, legacy relation
  vectors stored with an unsorted pair, entity vectors whose graph node is gone, and ``source_id``
  lists naming chunks that no longer exist.
* :func:`write_lightrag_workdir` writes a dataset through LightRAG's **own storage classes**
  (``JsonKVStorage``, ``NanoVectorDBStorage``, ``NetworkXStorage`` behind a ``LightRAG`` object),
  so the files are exactly what LightRAG writes: GraphML, NanoVectorDB JSON with float16 vectors,
  JSON KV stores.
* :func:`open_lightrag`, :func:`lightrag_query_data` and :func:`lightrag_context` run LightRAG's
  ``aquery_data`` / ``aquery(only_need_context=True)`` on such a directory without any LLM.

``lightrag`` is imported lazily inside the functions that need it (extra ``parity``), so this
module imports without it.

LightRAG keeps JSON-KV data in process-wide shared dicts keyed by ``(namespace, workspace)``:
every dataset therefore lives in its own ``workspace`` (the files are in ``root/<workspace>/``),
and :func:`write_lightrag_workdir` resets LightRAG's shared state when it is done, so open
LightRAG handles only *after* writing the directories you need.

One module per part: :mod:`~hexrag.devtools.lightrag_data.dataset` (the dataset and its
queries, drawn from :mod:`~hexrag.devtools.lightrag_data.vocabulary`),
:mod:`~hexrag.devtools.lightrag_data.lightrag_side` (writing and querying with LightRAG),
:mod:`~hexrag.devtools.lightrag_data.hexrag_side` (hexrag on the same directory),
:mod:`~hexrag.devtools.lightrag_data.diffs` (what differs) and
:mod:`~hexrag.devtools.lightrag_data.parity` (the parity suite's datasets, embedder and
settings). This package names them all.
"""

from __future__ import annotations

from hexrag.devtools.lightrag_data.dataset import (
    GENERATOR_VERSION,
    GRAPH_FIELD_SEP,
    Dataset,
    DatasetSpec,
    GenChunk,
    GenEntity,
    GenRelation,
    KeywordQuery,
    generate_dataset,
    keyword_queries,
)
from hexrag.devtools.lightrag_data.diffs import (
    diff_context,
    diff_context_as_sets,
    diff_query_data,
)
from hexrag.devtools.lightrag_data.hexrag_side import (
    hexrag_context,
    hexrag_query_data,
    hexrag_query_param,
    open_hexrag,
)
from hexrag.devtools.lightrag_data.lightrag_side import (
    LightRAGDir,
    lightrag_context,
    lightrag_embedding_func,
    lightrag_query_data,
    lightrag_query_param,
    open_lightrag,
    query_param_fields,
    register_offline_tiktoken,
    write_lightrag_records,
    write_lightrag_workdir,
)

# private helpers that tests import from here (explicit re-exports)
from hexrag.devtools.lightrag_data.lightrag_side import _no_llm as _no_llm
from hexrag.devtools.lightrag_data.lightrag_side import _quiet_lightrag as _quiet_lightrag
from hexrag.devtools.lightrag_data.parity import (
    PARITY_DATASETS,
    PARITY_EMBEDDERS,
    PARITY_QUERIES,
    ParityEmbedder,
    parity_embed,
    parity_embedder,
    parity_settings,
    require_lightrag,
)

__all__ = [
    "GENERATOR_VERSION",
    "GRAPH_FIELD_SEP",
    "PARITY_DATASETS",
    "PARITY_EMBEDDERS",
    "PARITY_QUERIES",
    "Dataset",
    "DatasetSpec",
    "GenChunk",
    "GenEntity",
    "GenRelation",
    "KeywordQuery",
    "LightRAGDir",
    "ParityEmbedder",
    "diff_context",
    "diff_context_as_sets",
    "diff_query_data",
    "generate_dataset",
    "hexrag_context",
    "hexrag_query_data",
    "hexrag_query_param",
    "keyword_queries",
    "lightrag_context",
    "lightrag_embedding_func",
    "lightrag_query_data",
    "lightrag_query_param",
    "open_hexrag",
    "open_lightrag",
    "parity_embed",
    "parity_embedder",
    "parity_settings",
    "query_param_fields",
    "register_offline_tiktoken",
    "require_lightrag",
    "write_lightrag_records",
    "write_lightrag_workdir",
]
