"""hexrag's development tools - **not** part of the public API (no compatibility promise).

* :mod:`hexrag.devtools.lightrag_data` - the LightRAG dataset generator, the parity embedder
  and settings, and helpers that run LightRAG 1.5.7 itself (needs the ``parity`` extra);
* :mod:`hexrag.devtools.lightrag_pg`, :mod:`hexrag.devtools.lightrag_milvus` - LightRAG
  deployments on PostgreSQL and on Milvus + Redis written by LightRAG's own storage classes;
* :mod:`hexrag.devtools.scripted_openai` - a scripted OpenAI-compatible HTTP server;
  ``python -m hexrag.devtools.scripted_openai`` runs it as the offline stand-in of the README,
  answering with :mod:`hexrag.devtools.standin_llm` (keywords, extraction, summaries, answers
  drawn from each prompt's own text).

The parity, round-trip and benchmark suites use them. The contract suite a backend author needs
is :mod:`hexrag.testing`.
"""
