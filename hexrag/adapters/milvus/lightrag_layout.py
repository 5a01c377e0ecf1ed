"""LightRAG 1.5.7's own Milvus layout (``MilvusVectorDBStorage``), read and written in place.

A LightRAG deployment on Milvus keeps one collection per vector namespace, named
``[<workspace>_]<namespace>[_<model>_<dim>d]`` (``entities``, ``relationships``, ``chunks``;
the model suffix is LightRAG's: ``re.sub('[^a-zA-Z0-9_]', '_', model_name.lower())`` +
``_<dim>d``), with explicit fields and dynamic fields enabled:

==================  ======================================================================
field               content
==================  ======================================================================
``id``              VARCHAR(64), primary key: LightRAG's ``ent-``/``rel-``/chunk ids
``vector``          FLOAT_VECTOR(dim), COSINE (LightRAG's default index: ``AUTOINDEX``)
``created_at``      INT64 (epoch seconds; not nullable)
entities            ``entity_name``, ``content``, ``source_id`` (``<SEP>``-joined chunk ids),
                    ``file_path``
relationships       ``src_id``, ``tgt_id``, ``content``, ``source_id``, ``file_path``
chunks              ``full_doc_id``, ``content``, ``file_path``
==================  ======================================================================

Searches are **LightRAG's own call** (``search(limit=top_k, radius=threshold)`` with its
search parameters): Milvus keeps scores strictly above the threshold and orders them, so hits,
order and ties are LightRAG's on the same server. Scope (hexrag's addition) is read from
``file_path`` / ``full_doc_id`` (:func:`hexrag.core.scope.scope_values`): a scoped search
widens the same call until ``top_k`` admitted rows are found or the rows run out (Milvus
filters cannot parse LightRAG's encoded ``file_path``, and no user value ever reaches a filter
expression: ids are escaped by :mod:`hexrag.adapters.milvus._filter`).

Writes produce LightRAG's rows (its fields, ``created_at`` always set, ``source_id`` joined with
``<SEP>``), so LightRAG 1.5.7 reads what hexrag writes. A missing collection is created with
LightRAG's schema and index, so a new deployment can be a migration target.

The layout itself is a strategy, :class:`~hexrag.adapters.milvus.layouts.LightRAGMilvusLayout`,
inside :class:`~hexrag.adapters.milvus.index.MilvusVectorIndex`; this module names LightRAG's
collections and opens them (:class:`LightRAGMilvusVectorIndex` only adds the constructors).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from hexrag.adapters._names import checked_name
from hexrag.adapters._vector_lightrag import lightrag_model_suffix
from hexrag.adapters.milvus.index import MilvusVectorIndex
from hexrag.adapters.milvus.layouts import LAYOUT_FIELDS, LightRAGMilvusLayout
from hexrag.domain.records import VectorNamespace

if TYPE_CHECKING:
    from pymilvus import MilvusClient

__all__ = [
    "LAYOUT_FIELDS",
    "LightRAGMilvusVectorIndex",
    "lightrag_collection_name",
    "open_lightrag_milvus_indexes",
]

_WORKSPACE_RE = re.compile(r"^[A-Za-z0-9_]*$")


class LightRAGMilvusOptions(TypedDict, total=False):
    """The options of every way to open a LightRAG Milvus collection (the defaults are
    :class:`~hexrag.adapters.milvus.index.MilvusVectorIndex`'s, ``""`` and ``None``)."""

    workspace: str
    model_name: str | None
    cosine_threshold: float
    timeout: float | None


def lightrag_collection_name(
    namespace: str, *, workspace: str = "", model_name: str | None = None, dim: int
) -> str:
    """The collection LightRAG 1.5.7's ``MilvusVectorDBStorage`` uses for ``namespace``."""
    base = f"{workspace}_{namespace}" if workspace else namespace
    return base + lightrag_model_suffix(model_name, dim)


class LightRAGMilvusVectorIndex(MilvusVectorIndex):
    """A :class:`MilvusVectorIndex` on one of LightRAG's Milvus collections, in LightRAG's layout
    (:class:`~hexrag.adapters.milvus.layouts.LightRAGMilvusLayout`, LightRAG's ``AUTOINDEX``).

    Construct with :meth:`open` (a ready ``MilvusClient``) or :meth:`open_uri`.
    """

    @classmethod
    def open(
        cls,
        client: MilvusClient,
        *,
        namespace: VectorNamespace,
        dim: int,
        **options: Unpack[LightRAGMilvusOptions],
    ) -> LightRAGMilvusVectorIndex:
        """The index of ``namespace`` in the LightRAG deployment ``client`` reaches."""
        return cls(client, **_in_lightrag_layout(namespace, dim, options))

    @classmethod
    def open_uri(
        cls,
        uri: str,
        *,
        namespace: VectorNamespace,
        dim: int,
        user: str | None = None,
        password: str | None = None,
        **options: Unpack[LightRAGMilvusOptions],
    ) -> LightRAGMilvusVectorIndex:
        """As :meth:`open`, on a client for ``uri`` (a Milvus Lite file or a server URL),
        connected lazily; :meth:`close` closes it."""
        index = cls.from_uri(
            uri, user=user, password=password, **_in_lightrag_layout(namespace, dim, options)
        )
        assert isinstance(index, LightRAGMilvusVectorIndex)
        return index


def _in_lightrag_layout(
    namespace: VectorNamespace, dim: int, options: LightRAGMilvusOptions
) -> dict[str, Any]:
    """:class:`MilvusVectorIndex`'s keywords for LightRAG's collection of ``namespace`` (its
    name, LightRAG's layout and ``AUTOINDEX``), with ``options``' threshold and timeout."""
    rest: dict[str, Any] = dict(options)
    workspace, model_name = rest.pop("workspace", ""), rest.pop("model_name", None)
    collection = _collection(namespace, workspace, model_name, dim)
    return {
        **rest,
        "collection": collection,
        "namespace": namespace,
        "dim": dim,
        "index_type": "AUTOINDEX",
        "layout": LightRAGMilvusLayout(namespace),
    }


def _collection(namespace: str, workspace: str, model_name: str | None, dim: int) -> str:
    checked_name(
        workspace, _WORKSPACE_RE,
        f"LightRAG workspace {workspace!r} is invalid: use letters, digits and '_'",
    )
    return lightrag_collection_name(namespace, workspace=workspace, model_name=model_name, dim=dim)


def open_lightrag_milvus_indexes(
    uri: str,
    *,
    dim: int,
    user: str | None = None,
    password: str | None = None,
    **options: Unpack[LightRAGMilvusOptions],
) -> dict[str, LightRAGMilvusVectorIndex]:
    """The three vector indexes of a LightRAG Milvus deployment (one client each, lazy)."""
    return {
        ns: LightRAGMilvusVectorIndex.open_uri(
            uri, namespace=ns, dim=dim, user=user, password=password, **options  # type: ignore[arg-type]
        )
        for ns in ("entities", "relationships", "chunks")
    }
