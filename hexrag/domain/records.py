"""The records that cross the ports: graph nodes and edges, chunks, vector rows and hits.

Records are frozen dataclasses: adapters build them in one conversion function and the core
never mutates them. ``None`` always means *absent* (LightRAG distinguishes a missing
``description`` - rendered ``"UNKNOWN"`` - from a stored empty string), so adapters must not
turn a missing value into ``""``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal, TypeVar

import numpy as np

VectorNamespace = Literal["entities", "relationships", "chunks"]
_T = TypeVar("_T")

#: LightRAG's separator of joined values (``source_id``, ``file_path``, descriptions).
GRAPH_FIELD_SEP = "<SEP>"

EMPTY_PROPS: Mapping[str, Any] = {}


@dataclass(frozen=True, slots=True)
class Entity:
    """A knowledge-graph node. ``name`` is the node id (LightRAG's ``entity_id``).

    ``source_id`` is kept exactly as stored (``<SEP>``-joined chunk ids, or whatever form the
    store uses); :func:`hexrag.core.query.source_ids.parse_source_ids` turns it into ids.
    ``properties`` holds any further stored attributes (never the fields above).
    """

    name: str
    entity_type: str | None = None
    description: str | None = None
    source_id: Any = None
    file_path: str | None = None
    created_at: int | None = None
    properties: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Relation:
    """A knowledge-graph edge. Several relations may join the same pair; ``id`` tells them apart.

    ``src_id``/``tgt_id`` keep the stored orientation (edges are undirected for every lookup).
    A store that has no relation ids (LightRAG's NetworkX graph) uses
    :func:`hexrag.core.ingest.ids.relation_id` of the sorted pair, which is also LightRAG's
    relationship-vector id, so graph and vector index agree.
    ``weight`` ``None`` means missing (the pipeline then uses 1.0, as LightRAG does).
    """

    id: str
    src_id: str
    tgt_id: str
    description: str | None = None
    keywords: str | None = None
    weight: float | None = None
    source_id: Any = None
    file_path: str | None = None
    created_at: int | None = None
    properties: Mapping[str, Any] = field(default_factory=dict)

    @property
    def pair(self) -> tuple[str, str]:
        """The endpoints in sorted (code-point) order: the key LightRAG dedups by."""
        a, b = self.src_id, self.tgt_id
        return (a, b) if a <= b else (b, a)


@dataclass(frozen=True, slots=True)
class Chunk:
    """A text chunk as the chunk store keeps it.

    ``metadata`` holds every other stored field: scope fields (``product_id``,
    ``category_id``), heading information (``heading``, ``parent_headings``), LightRAG
    bookkeeping (``llm_cache_list``, ``create_time``...).
    """

    id: str
    content: str
    tokens: int | None = None
    full_doc_id: str | None = None
    chunk_order_index: int | None = None
    file_path: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class VectorRecord:
    """One row of a vector index (entities, relationships or chunks namespace).

    Field use by namespace (LightRAG's ``meta_fields``):
    entities: ``entity_name``; relationships: ``src_id``, ``tgt_id``; chunks:
    ``full_doc_id``. All may carry ``content``, ``file_path`` and ``source_id`` (the chunk ids
    the record came from, in any form: ``<SEP>`` string, ``{a,b}`` array text or a list).
    ``metadata`` carries first-class scope fields (``product_id``, ``category_id`` as a string
    or a list) and anything else a backend stores.
    ``vector`` is the raw (not necessarily normalised) embedding.
    """

    id: str
    vector: np.ndarray | Sequence[float] | None = None
    entity_name: str | None = None
    src_id: str | None = None
    tgt_id: str | None = None
    content: str | None = None
    source_id: Any = None
    file_path: str | None = None
    full_doc_id: str | None = None
    created_at: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    #: LightRAG's per-row float16 copy of the embedding exactly as a NanoVectorDB file stored
    #: it (its ``"vector"`` string), carried by copies between working directories so that
    #: it is written back byte for byte; ``None`` everywhere else (a lossy derivative of the
    #: vector: never compared, never stored by other backends).
    row_vector: str | None = None


@dataclass(frozen=True, slots=True)
class VectorHit:
    """A search result: the stored record (without its vector) and its cosine similarity."""

    record: VectorRecord
    score: float

    @property
    def id(self) -> str:
        """The record id."""
        return self.record.id


@dataclass(frozen=True, slots=True)
class RerankResult:
    """One reranker verdict: the index of a document in the request, and its score."""

    index: int
    relevance_score: float


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One conversation-history message (``role`` is ``user``/``assistant``/``system``)."""

    role: str
    content: str


# --------------------------------------------------------------------------------------
# Positional constructors for the adapters' read paths
# --------------------------------------------------------------------------------------


def _positional_constructor(cls: type[_T]) -> Callable[..., _T]:
    """A function building ``cls(*values)`` from every field, in field order, by setting the
    slots directly.

    A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__`` (about
    1.5 us for a relation built by keywords); a query reads several hundred records, so
    the adapters' row converters use these (0.6 us). The object is the same as the
    dataclass's own (equal, frozen, every field set); there are no defaults and no
    ``default_factory``: every value is given. ``tests/unit/test_record_constructors.py`` checks the
    equality for every record type.
    """
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    scope: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    for name in names:
        scope[f"_set_{name}"] = cls.__dict__[name].__set__
    body = "".join(f"    _set_{name}(o, {name})\n" for name in names)
    exec(  # a fixed template over the dataclass's own field names
        f"def new_{cls.__name__}({', '.join(names)}):\n    o = _new(_cls)\n{body}    return o\n",
        scope,
    )
    made: Callable[..., _T] = scope[f"new_{cls.__name__}"]
    made.__doc__ = f"``{cls.__name__}(*values)``, every field given in field order."
    return made


new_entity: Callable[..., Entity] = _positional_constructor(Entity)
new_relation: Callable[..., Relation] = _positional_constructor(Relation)
new_chunk: Callable[..., Chunk] = _positional_constructor(Chunk)
new_vector_record: Callable[..., VectorRecord] = _positional_constructor(VectorRecord)
