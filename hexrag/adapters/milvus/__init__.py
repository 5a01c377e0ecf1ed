"""Milvus adapters (extra ``hexrag[milvus]``: pymilvus, and milvus-lite for local files).

:class:`MilvusVectorIndex` implements :class:`hexrag.ports.VectorIndex` on one collection::

    index = MilvusVectorIndex.from_uri("./hexrag_milvus.db", namespace="entities", dim=1024)
    index = MilvusVectorIndex(MilvusClient("http://milvus:19530"), collection="kb_entities",
                              namespace="entities", dim=1024, cosine_threshold=0.2)

pymilvus is imported lazily (when a client is created or a collection is set up), so
importing this package is cheap and needs no server.

What was checked on pymilvus 3.0.2 + milvus-lite 3.2.2 (the pure-Python Milvus Lite, which
runs an in-process gRPC server for a ``*.db`` path):

* nullable scalar fields, ``JSON``, ``ARRAY<VARCHAR>``, ``array_length`` and
  ``array_contains_any`` work; Lite enforces ARRAY ``max_capacity`` but not VARCHAR
  ``max_length`` (a server does: the adapter checks lengths itself, see ``_convert``).
  A server needs Milvus >= 2.5 for nullable fields.
* filter templating (``filter_params``) is **not** supported by Lite (``{name}`` is a parse
  error), so filters use escaped literals only (``_filter.quote_string``), on Lite and server.
* pymilvus' ``get(ids=...)`` / ``delete(ids=...)`` paste string ids into ``'...'`` without
  escaping; the adapter never uses them.
* ``FLAT`` (the default) is exact everywhere. ``AUTOINDEX`` is approximate on Lite too once its
  background index build has run after a flush (measured: filtered searches lost in-scope hits).
* range search keeps ``score > radius`` (strict), as LightRAG relies on; the port's inclusive
  threshold is enforced by the adapter's exact re-scoring.
* ``create_index`` polls with 0.5 s sleeps when synchronous; the adapter creates the index
  asynchronously on the empty collection and waits in ``load_collection`` (~7 ms per new
  collection on Lite instead of ~0.5 s).
* Lite searches rows still in its memtable slowly (~0.35 s for 5 000 x 384 rows; ~35-70 ms
  once flushed); call ``client.flush(collection)`` after a bulk load into a Lite file.
"""

from __future__ import annotations

from hexrag.adapters.milvus._filter import quote_string, scope_filter
from hexrag.adapters.milvus.index import IndexType, MilvusVectorIndex

__all__ = ["IndexType", "MilvusVectorIndex", "quote_string", "scope_filter"]
