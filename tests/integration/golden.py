"""A realistic generated knowledge base and a golden query set, shared by the mixed-stack
equivalence tests (``mixed_stacks/test_mixed_stacks.py``) and the backend benchmark
(``bench/backends_bench.py``).

:func:`build_dataset` makes a seeded dataset of any size (the tests use ~150 entities, the
benchmark 10k and 100k) shaped like LightRAG data from a product-ingestion pipeline:

* products in categories; every chunk belongs to one product document and carries an encoded
  ``file_path`` (``product_id:<p>:category:<c>:source:<s>``), most chunks also first-class
  ``product_id`` / ``category_id`` metadata (the rest are scoped by their ``file_path`` only);
* entities with Zipf-like popularity (hubs), one to several chunks (``<SEP>``-joined
  ``source_id``), some spanning several products (multi-segment ``file_path``), non-ASCII and
  quoted names, an entity vector whose graph node is gone;
* about twice as many relations as entities, most with evidence in several chunks, a few
  naming chunk ids that no longer exist, some multi-edge pairs (several relations with their
  own ids and chunks between one pair, one pair with at least six), relation vectors whose
  ``source_id`` is PostgreSQL array text ``{chunk-…,chunk-…}`` (seed 001's form), edges without a
  weight;
* one vector record per entity, relation and chunk.

**Vectors and ties.** Query vectors come from the deterministic
:class:`~hexrag.adapters.memory.HashingEmbedder`. A stored vector is the embedder's vector of the
record's text plus a small seeded Gaussian jitter (``JITTER`` per component). Without the jitter,
formulaic texts give *exactly* equal cosines, and backends that compute cosines with different
float32 rounding (the memory index on normalised float32 rows, pgvector, Milvus) may order such
near-ties differently; the port breaks exact ties by id, but float noise turns an exact tie into
an arbitrary one. With the jitter, :func:`near_ties` can verify that the golden queries meet no
score closer than ``TIE_GAP`` to another score or to the cosine threshold, so every backend must
produce the same order, and the equivalence test compares results exactly.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from hexrag.adapters.memory import HashingEmbedder
from hexrag.core.ingest.ids import entity_id, relation_id
from hexrag.core.model import Chunk, Entity, QueryScope, Relation, VectorRecord

__all__ = [
    "DIM",
    "GENERATOR_VERSION",
    "JITTER",
    "MODES",
    "NAMESPACES",
    "PICK_METHODS",
    "THRESHOLD",
    "TIE_GAP",
    "GoldenDataset",
    "GoldenQuery",
    "build_dataset",
    "golden_queries",
    "keyword_queries",
    "load_chunks",
    "load_graph",
    "load_vectors",
    "near_ties",
]

GENERATOR_VERSION = 1  # bump when build_dataset's output changes (invalidates bench caches)
DIM = 128
THRESHOLD = 0.2  # every index's cosine_threshold (LightRAG's COSINE_THRESHOLD default)
JITTER = 0.02
TIE_GAP = 2e-6  # float32 cosines of one vector pair differ across backends by ~1e-7
BASE_EPOCH = 1_717_000_000
MODES: tuple[str, ...] = ("local", "global", "hybrid", "mix", "naive")
PICK_METHODS: tuple[str, ...] = ("VECTOR", "WEIGHT")

# fmt: off
CATEGORIES = ("CRM", "ERP", "Billing", "Analytics", "Security", "Logistics", "HR", "Support")
SOURCES = ("ingestion", "manual", "support-kb", "release-notes")
ENTITY_TYPES = ("organization", "product", "feature", "technology", "person", "component",
                "concept", "location")
THEMES = (
    "data integration", "access control", "billing workflow", "incident response",
    "customer onboarding", "usage analytics", "shipment tracking", "payroll compliance",
    "audit logging", "single sign-on", "invoice reconciliation", "demand forecasting",
    "ticket routing", "role management", "data retention", "encryption at rest",
    "pipeline orchestration", "revenue recognition", "fraud detection", "report scheduling",
    "api rate limiting", "tenant isolation", "disaster recovery", "contract renewal",
)
VERBS = ("integrates with", "depends on", "replaces", "feeds data into", "monitors",
         "authenticates against", "exports records to", "synchronises with", "extends",
         "is configured through", "competes with", "is maintained by")
ADJ = ("Atlas", "Nimbus", "Quantum", "Vertex", "Helix", "Aurora", "Cobalt", "Zenith", "Orion",
       "Nova", "Pulse", "Summit", "Harbor", "Beacon", "Cascade", "Ember", "Falcon", "Granite",
       "Horizon", "Ion", "Jade", "Krypton", "Lumen", "Meridian", "Nebula", "Onyx", "Prism",
       "Quartz", "Radiant", "Sable", "Titan", "Umbra", "Willow", "Xenon", "Zephyr", "Apex",
       "Boreal", "Cinder", "Delta", "Echo", "Flux", "Glacier", "Halo", "Iris", "Juniper",
       "Kestrel", "Lattice", "Mosaic", "Zürich", "Østfold", "Kyōto", "Café", "Señor", "北京",
       "Ångström", "Łódź", "São", "Dvořák", "Müller", "Révolte")
NOUN = ("Ledger", "Gateway", "Engine", "Console", "Vault", "Connector", "Scheduler", "Portal",
        "Hub", "Router", "Planner", "Tracker", "Monitor", "Studio", "Registry", "Broker",
        "Catalog", "Pipeline", "Dashboard", "Agent", "Bridge", "Compass", "Desk", "Forge",
        "Graph", "Index", "Journal", "Kernel", "Lens", "Matrix", "Navigator", "Relay",
        "Sentinel", "Toolkit", "Validator", "Workbench", "Exchange", "Archive", "Cluster",
        "Depot", "Foundry", "Harness", "引擎", "Käse", "Señal", "Daten", "Møde", "Éclair")
SUFFIX = ("Cloud", "Pro", "Suite", "Lite", "Edge", "Plus", "Enterprise", "Mobile", "API",
          "Express", "Core", "Insights", "Sync", "Flow", "One", "X", "360", "Connect", "Live",
          "Max")
SPECIAL_NAMES = ('O\'Brien "Q" Labs', "Rocket 🚀 Launch", "中文 实体", "back\\slash Corp",
                 "100% _Match_ Inc.")
# fmt: on


@dataclass(frozen=True)
class GoldenQuery:
    """One golden query: text, supplied keywords (no LLM), a scope for its scoped variant."""

    label: str
    query: str
    hl_keywords: tuple[str, ...]
    ll_keywords: tuple[str, ...]
    scope: QueryScope
    top_k: int | None = None
    chunk_top_k: int | None = None

    def param_fields(self, *, scoped: bool) -> dict[str, Any]:
        """``QueryParam`` fields (add ``mode``): keywords, no rerank, the scope when scoped."""
        out: dict[str, Any] = {
            "hl_keywords": list(self.hl_keywords),
            "ll_keywords": list(self.ll_keywords),
            "enable_rerank": False,
        }
        if self.top_k is not None:
            out["top_k"] = self.top_k
        if self.chunk_top_k is not None:
            out["chunk_top_k"] = self.chunk_top_k
        if scoped:
            out["scope"] = self.scope
        return out


@dataclass
class GoldenDataset:
    """A generated dataset. Records carry no vectors: use :meth:`vector_records` (or the
    ``*_vectors`` matrices, row ``i`` = record ``i``) to load an index."""

    label: str
    seed: int
    dim: int
    products: list[tuple[str, str]]  # (product_id, category)
    entities: list[Entity]
    relations: list[Relation]
    chunks: list[Chunk]
    entity_records: list[VectorRecord]
    relation_records: list[VectorRecord]
    chunk_records: list[VectorRecord]
    entity_vectors: np.ndarray
    relation_vectors: np.ndarray
    chunk_vectors: np.ndarray
    multi_edge_pair: tuple[str, str]
    missing_chunk_ids: list[str] = field(default_factory=list)
    version: int = GENERATOR_VERSION

    def records(self, namespace: str) -> tuple[list[VectorRecord], np.ndarray]:
        """The records of ``namespace`` and their vector matrix."""
        if namespace == "entities":
            return self.entity_records, self.entity_vectors
        if namespace == "relationships":
            return self.relation_records, self.relation_vectors
        if namespace == "chunks":
            return self.chunk_records, self.chunk_vectors
        raise ValueError(f"unknown namespace {namespace!r}")

    def vector_records(
        self, namespace: str, start: int = 0, stop: int | None = None
    ) -> list[VectorRecord]:
        """Records ``[start:stop]`` of ``namespace`` with their vectors attached."""
        records, matrix = self.records(namespace)
        stop = len(records) if stop is None else min(stop, len(records))
        return [replace(records[i], vector=matrix[i]) for i in range(start, stop)]

    def chunk_by_id(self) -> dict[str, Chunk]:
        """Chunks by id."""
        return {c.id: c for c in self.chunks}

    def stats(self) -> dict[str, int]:
        """Counts, for logs."""
        pairs: dict[tuple[str, str], int] = {}
        for r in self.relations:
            pairs[r.pair] = pairs.get(r.pair, 0) + 1
        return {
            "entities": len(self.entities),
            "relations": len(self.relations),
            "chunks": len(self.chunks),
            "multi_edge_pairs": sum(1 for n in pairs.values() if n > 1),
            "max_pair_multiplicity": max(pairs.values(), default=0),
            "multi_chunk_relations": sum(1 for r in self.relations if "<SEP>" in str(r.source_id)),
        }


# --------------------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------------------


def _md5(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()


def _names(n: int, rng: random.Random) -> list[str]:
    """``n`` distinct entity names: adjective + noun (+ suffix, + number when exhausted)."""
    a, b, s = len(ADJ), len(NOUN), len(SUFFIX)
    out = list(SPECIAL_NAMES[: max(0, min(len(SPECIAL_NAMES), n // 20))])
    i = 0
    while len(out) < n:
        name = f"{ADJ[i % a]} {NOUN[(i // a) % b]}"
        if i >= a * b:
            name += f" {SUFFIX[(i // (a * b)) % s]}"
        if i >= a * b * s:
            name += f" {i // (a * b * s) + 1}"
        out.append(name)
        i += 1
    rng.shuffle(out)
    return out


def _file_path(product: str, category: str, source: str) -> str:
    return f"product_id:{product}:category:{category}:source:{source}"


def _join_distinct(values: Iterable[str]) -> str:
    return "<SEP>".join(dict.fromkeys(values))


def _pg_array(ids: Sequence[str]) -> str:
    return "{" + ",".join(ids) + "}"


class _Embed:
    """Embedder vector of a text plus a seeded per-record jitter, as float32 rows."""

    def __init__(self, dim: int, seed: int) -> None:
        self.embedder = HashingEmbedder(dim)
        self.rng = np.random.default_rng(seed)
        self.dim = dim

    def matrix(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = self.embedder.embed_one(text)
        out += (self.rng.standard_normal(out.shape) * JITTER).astype(np.float32)
        # raw (not normalised) lengths, as real embedders give: the port must not assume unit input
        out *= self.rng.uniform(0.5, 2.0, size=(len(texts), 1)).astype(np.float32)
        return out


def build_dataset(n_entities: int, *, seed: int = 7, dim: int = DIM) -> GoldenDataset:
    """A seeded dataset with ``n_entities`` entities, about ``2 * n_entities`` relations and
    ``max(24, n_entities // 2)`` chunks (see the module docstring for its shape)."""
    if n_entities < 40:
        raise ValueError("build_dataset needs at least 40 entities")
    rng = random.Random(seed)
    label = f"golden_e{n_entities}_s{seed}_d{dim}_v{GENERATOR_VERSION}"
    n_products = max(4, n_entities // 50)
    n_chunks = max(24, n_entities // 2)

    # Products and their chunks. Product 0 has a non-ASCII id (scope values are escaped).
    products = [
        ("pé-中文" if i == 0 else f"p{i:04d}", CATEGORIES[i % len(CATEGORIES)])
        for i in range(n_products)
    ]
    product_names = [
        f"{ADJ[(i * 7) % len(ADJ)]} {SUFFIX[i % len(SUFFIX)]}" for i in range(n_products)
    ]
    chunk_ids = [f"chunk-{_md5(f'{label}-chunk-{i}')}" for i in range(n_chunks)]
    chunk_product = [i % n_products for i in range(n_chunks)]
    rng.shuffle(chunk_product)
    chunk_theme = [rng.randrange(len(THEMES)) for _ in range(n_chunks)]
    chunks_of_product: list[list[int]] = [[] for _ in range(n_products)]
    for ci, p in enumerate(chunk_product):
        chunks_of_product[p].append(ci)
    chunk_source = [SOURCES[rng.randrange(len(SOURCES))] for _ in range(n_chunks)]
    chunk_fp = [
        _file_path(products[chunk_product[ci]][0], products[chunk_product[ci]][1], chunk_source[ci])
        for ci in range(n_chunks)
    ]

    # Entities: popularity ~ 1 / (rank + 3); hubs get more chunks.
    names = _names(n_entities, rng)
    popularity = [1.0 / (i + 3) for i in range(n_entities)]
    home = [rng.randrange(n_products) for _ in range(n_entities)]
    ent_chunks: list[list[int]] = []
    for i in range(n_entities):
        k = 1 + min(5, int(12 * popularity[i] * 3)) + (1 if rng.random() < 0.3 else 0)
        own = chunks_of_product[home[i]] or [rng.randrange(n_chunks)]
        picked = [
            rng.choice(own) if rng.random() < 0.8 else rng.randrange(n_chunks) for _ in range(k)
        ]
        ent_chunks.append(list(dict.fromkeys(picked)))
    ent_type = [ENTITY_TYPES[rng.randrange(len(ENTITY_TYPES))] for _ in range(n_entities)]
    ent_theme = [chunk_theme[ent_chunks[i][0]] for i in range(n_entities)]

    entities: list[Entity] = []
    for i, name in enumerate(names):
        cids = [chunk_ids[c] for c in ent_chunks[i]]
        fps = [chunk_fp[c] for c in ent_chunks[i]]
        prods = list(dict.fromkeys(products[chunk_product[c]][0] for c in ent_chunks[i]))
        description: str | None = (
            f"{name} is a {ent_type[i]} for {THEMES[ent_theme[i]]} in {product_names[home[i]]}."
        )
        if i % 97 == 13:
            description = None
        entities.append(
            Entity(
                name=name,
                entity_type=ent_type[i],
                description=description,
                source_id="<SEP>".join(cids),
                file_path=_join_distinct(fps),
                created_at=BASE_EPOCH + i,
                properties={"product_id": prods} if i % 10 == 3 else {},
            )
        )

    # Relations. Endpoints by popularity, mostly inside one product; evidence in 1-3 chunks.
    cum_weights = list(itertools.accumulate(popularity))
    by_product: list[list[int]] = [[] for _ in range(n_products)]
    for i in range(n_entities):
        by_product[home[i]].append(i)
    relations: list[Relation] = []
    pair_count: dict[tuple[str, str], int] = {}
    missing: list[str] = []
    rel_meta: list[tuple[int, int, list[int]]] = []

    def add_relation(a: int, b: int, cis: list[int], extra_missing: str | None) -> None:
        src, tgt = names[a], names[b]
        pair = (src, tgt) if src <= tgt else (tgt, src)
        k = pair_count.get(pair, 0)
        pair_count[pair] = k + 1
        rid = relation_id(src, tgt) if k == 0 else f"{relation_id(src, tgt)}-{k}"
        cids = [chunk_ids[c] for c in cis]
        if extra_missing:
            cids.append(extra_missing)
        theme = THEMES[chunk_theme[cis[0]]]
        n = len(relations)
        verb = VERBS[n % len(VERBS)]
        relations.append(
            Relation(
                id=rid,
                src_id=src,
                tgt_id=tgt,
                description=f"{src} {verb} {tgt} for {theme}.",
                keywords=f"{theme},{verb}",
                weight=None if n % 53 == 7 else round(1.0 + (n * 37 % 90) / 10, 1),
                source_id="<SEP>".join(cids),
                file_path=None if n % 71 == 5 else _join_distinct(chunk_fp[c] for c in cis),
                created_at=None if n % 11 == 4 else BASE_EPOCH + 10_000 + n,
                properties={"rel_type": verb.upper().replace(" ", "_")} if n % 9 == 0 else {},
            )
        )
        rel_meta.append((a, b, cis))

    # The multi-edge pair: six relations between the two most popular entities, each with its
    # own chunks (one names a chunk that no longer exists).
    mp = (0, 1)
    for k in range(6):
        cis = [ent_chunks[0][k % len(ent_chunks[0])], ent_chunks[1][k % len(ent_chunks[1])]]
        gone = f"chunk-gone-{_md5(f'{label}-pair-{k}')}" if k == 4 else None
        if gone:
            missing.append(gone)
        add_relation(mp[k % 2], mp[1 - k % 2], list(dict.fromkeys(cis)), gone)

    target = 2 * n_entities
    while len(relations) < target:
        a = rng.choices(range(n_entities), cum_weights=cum_weights)[0]
        if rng.random() < 0.7 and len(by_product[home[a]]) > 1:
            b = rng.choice(by_product[home[a]])
        else:
            b = rng.choices(range(n_entities), cum_weights=cum_weights)[0]
        if a == b:
            continue
        shared = [c for c in ent_chunks[a] if c in set(ent_chunks[b])]
        pool = list(dict.fromkeys(shared + ent_chunks[a][:2] + ent_chunks[b][:2]))
        k = 1 if rng.random() < 0.25 else min(len(pool), rng.randint(2, 3))
        cis = pool[:k] if shared else rng.sample(pool, k)
        gone = None
        if rng.random() < 0.02:
            gone = f"chunk-gone-{_md5(f'{label}-gone-{len(relations)}')}"
            missing.append(gone)
        add_relation(a, b, cis, gone)

    # Chunk texts: heading, theme, the entities and relations they evidence.
    mentions: list[list[str]] = [[] for _ in range(n_chunks)]
    for i, cis in enumerate(ent_chunks):
        for c in cis:
            if len(mentions[c]) < 8:
                mentions[c].append(f"{names[i]} supports {THEMES[ent_theme[i]]}.")
    for r, (_, _, cis) in zip(relations, rel_meta, strict=True):
        for c in cis:
            if len(mentions[c]) < 14:
                mentions[c].append(r.description or "")
    chunks: list[Chunk] = []
    for ci in range(n_chunks):
        p = chunk_product[ci]
        pid, cat = products[p]
        doc = f"doc-{pid}-{ci % 3}"
        heading = f"{product_names[p]} — {THEMES[chunk_theme[ci]].title()}"
        content = f"{heading}. " + " ".join(
            mentions[ci] or [f"Notes on {THEMES[chunk_theme[ci]]}."]
        )
        metadata: dict[str, Any] = {}
        if ci % 5 != 2:  # the rest are scoped by their encoded file_path only
            metadata = {"product_id": pid, "category_id": cat}
        if ci % 3 == 0:
            metadata["heading"] = heading
            metadata["parent_headings"] = [product_names[p], cat]
        chunks.append(
            Chunk(
                id=chunk_ids[ci],
                content=content,
                tokens=len(content.split()),
                full_doc_id=doc,
                chunk_order_index=ci // n_products,
                file_path=chunk_fp[ci],
                metadata=metadata,
            )
        )

    # Vector records.
    entity_records = []
    for i, e in enumerate(entities):
        meta: dict[str, Any] = {}
        if i % 3 == 1:
            prods = list(dict.fromkeys(products[chunk_product[c]][0] for c in ent_chunks[i]))
            cats = list(dict.fromkeys(products[chunk_product[c]][1] for c in ent_chunks[i]))
            meta = {"product_id": prods, "category_id": cats}
        entity_records.append(
            VectorRecord(
                id=entity_id(e.name),
                entity_name=e.name,
                content=f"{e.name}\n{e.description or ''}",
                source_id=e.source_id,
                file_path=e.file_path,
                created_at=e.created_at,
                metadata=meta,
            )
        )
    # An entity vector whose graph node is gone (LightRAG data has these).
    orphan = f"{names[2]} Legacy"
    entity_records.append(
        VectorRecord(
            id=entity_id(orphan),
            entity_name=orphan,
            content=f"{orphan}\nA retired {ent_type[2]} for {THEMES[ent_theme[2]]}.",
            source_id=entities[2].source_id,
            file_path=entities[2].file_path,
            created_at=BASE_EPOCH - 1,
        )
    )
    relation_records = []
    for n, r in enumerate(relations):
        ids = [c for c in str(r.source_id).split("<SEP>") if c]
        source: Any = _pg_array(ids) if n % 4 == 1 else r.source_id
        relation_records.append(
            VectorRecord(
                id=r.id,
                src_id=r.src_id,
                tgt_id=r.tgt_id,
                content=f"{r.keywords}\t{r.src_id}\n{r.tgt_id}\n{r.description}",
                source_id=source,
                file_path=r.file_path,
                created_at=BASE_EPOCH + 10_000 + n,
            )
        )
    chunk_records = [
        VectorRecord(
            id=c.id,
            content=c.content,
            full_doc_id=c.full_doc_id,
            file_path=c.file_path,
            source_id=c.id,
            created_at=BASE_EPOCH + 50_000 + i,
            metadata={k: v for k, v in c.metadata.items() if k in ("product_id", "category_id")},
        )
        for i, c in enumerate(chunks)
    ]

    emb = _Embed(dim, seed)
    return GoldenDataset(
        label=label,
        seed=seed,
        dim=dim,
        products=products,
        entities=entities,
        relations=relations,
        chunks=chunks,
        entity_records=entity_records,
        relation_records=relation_records,
        chunk_records=chunk_records,
        entity_vectors=emb.matrix([r.content or "" for r in entity_records]),
        relation_vectors=emb.matrix([r.content or "" for r in relation_records]),
        chunk_vectors=emb.matrix([r.content or "" for r in chunk_records]),
        multi_edge_pair=(names[mp[0]], names[mp[1]]),
        missing_chunk_ids=missing,
    )


# --------------------------------------------------------------------------------------
# Queries
# --------------------------------------------------------------------------------------


def _product_of(ds: GoldenDataset, entity: Entity) -> tuple[str, str]:
    """The (product, category) of an entity's first chunk."""
    first = str(entity.source_id).split("<SEP>")[0]
    chunk = ds.chunk_by_id()[first]
    fp = chunk.file_path or ""
    parts = fp.split(":")
    return parts[1], parts[3]


def golden_queries(ds: GoldenDataset) -> list[GoldenQuery]:
    """Six queries derived from ``ds``, each with a scope for its scoped variant.

    They cover: a hub entity plus a theme, the multi-edge pair, a non-ASCII entity, a
    multi-product entity, a small ``top_k``/``chunk_top_k``, and high-level keywords only.
    Scopes use one product, a list of products, a category, product AND category, and a
    document id.
    """
    ents = ds.entities
    a, b = ds.multi_edge_pair
    by_name = {e.name: e for e in ents}
    non_ascii = next(e for e in ents[5:] if any(ord(ch) > 127 for ch in e.name))
    multi = next(e for e in ents[3:] if "<SEP>" in (e.file_path or ""))
    hub = next(e for e in ents if e.description)
    theme_hub = (hub.description or "").split(" for ")[1].split(" in ")[0]
    pa, ca = _product_of(ds, by_name[a])
    pn, _ = _product_of(ds, non_ascii)
    pm, cm = _product_of(ds, multi)
    p_other = ds.products[1][0] if ds.products[1][0] != pm else ds.products[2][0]
    small = ents[7]
    doc = ds.chunk_by_id()[str(small.source_id).split("<SEP>")[0]].full_doc_id or ""
    return [
        GoldenQuery(
            label="hub+theme",
            query=f"How does {hub.name} handle {theme_hub}?",
            hl_keywords=(theme_hub, "integration"),
            ll_keywords=(hub.name,),
            scope=QueryScope(product_id=pa),
        ),
        GoldenQuery(
            label="multi-edge-pair",
            query=f"What connects {a} and {b}?",
            hl_keywords=("integrates with", "synchronises with"),
            ll_keywords=(a, b),
            scope=QueryScope(category_id=ca),
        ),
        GoldenQuery(
            label="non-ascii",
            query=f"Tell me about {non_ascii.name}",
            hl_keywords=(THEMES[3],),
            ll_keywords=(non_ascii.name,),
            scope=QueryScope(product_id=[pn, ds.products[0][0]]),
        ),
        GoldenQuery(
            label="multi-product",
            query=f"Where is {multi.name} used across products?",
            hl_keywords=("usage analytics", "data integration"),
            ll_keywords=(multi.name,),
            scope=QueryScope(product_id=[pm, p_other], category_id=cm),
        ),
        GoldenQuery(
            label="small-top-k",
            query=f"{small.name} {THEMES[5]}",
            hl_keywords=(THEMES[5],),
            ll_keywords=(small.name,),
            scope=QueryScope(doc_ids=doc),
            top_k=5,
            chunk_top_k=3,
        ),
        GoldenQuery(
            label="hl-only",
            query="Which components handle billing workflow and invoice reconciliation?",
            hl_keywords=("billing workflow", "invoice reconciliation"),
            ll_keywords=(),
            scope=QueryScope(category_id=["Billing", "ERP"]),
        ),
    ]


def keyword_queries(ds: GoldenDataset, n: int, *, seed: int = 0) -> list[GoldenQuery]:
    """``n`` random keyword queries over ``ds`` (for the benchmark): an entity name as the
    low-level keyword, one or two themes as high-level ones, its product as the scope."""
    rng = random.Random(seed)
    # popular entities more often, as real questions are (the generator's popularity law)
    cum_weights = list(itertools.accumulate(1.0 / (i + 3) for i in range(len(ds.entities))))
    out = []
    for i in range(n):
        e = ds.entities[rng.choices(range(len(ds.entities)), cum_weights=cum_weights)[0]]
        themes = rng.sample(THEMES, 2)
        product, _ = _product_of(ds, e)
        out.append(
            GoldenQuery(
                label=f"q{i}",
                query=f"How does {e.name} support {themes[0]}?",
                hl_keywords=tuple(themes),
                ll_keywords=(e.name,),
                scope=QueryScope(product_id=product),
            )
        )
    return out


# --------------------------------------------------------------------------------------
# Tie check
# --------------------------------------------------------------------------------------


def _cosines(matrix: np.ndarray, q: np.ndarray) -> np.ndarray:
    m = matrix.astype(np.float64)
    norms = np.linalg.norm(m, axis=1) * float(np.linalg.norm(q))
    with np.errstate(all="ignore"):
        s = (m @ q.astype(np.float64)) / norms
    return np.where(norms > 0, s, 0.0)


def near_ties(
    ds: GoldenDataset, queries: Sequence[GoldenQuery], *, gap: float = TIE_GAP
) -> list[str]:
    """Scores the golden queries meet that lie within ``gap`` of another score or of the
    threshold (an empty list means every backend must rank identically).

    Checked where the engine compares vectors: the low-level keywords (joined with ``", "``)
    against the entity vectors and the high-level ones against the relation vectors (scores
    above ``THRESHOLD - gap``), and the query text against every chunk vector (mix/naive
    chunk search, and the VECTOR chunk pick, rank chunks by that cosine).
    """
    embedder = HashingEmbedder(ds.dim)
    problems: list[str] = []
    spaces = {
        "entities": ds.entity_vectors,
        "relationships": ds.relation_vectors,
        "chunks": ds.chunk_vectors,
    }
    for q in queries:
        # (text, namespace, whether every score matters or only those above the threshold)
        checks = [(q.query, "chunks", True)]
        if q.ll_keywords:
            checks.append((", ".join(q.ll_keywords), "entities", False))
        if q.hl_keywords:
            checks.append((", ".join(q.hl_keywords), "relationships", False))
        for text, ns, every in checks:
            scores = _cosines(spaces[ns], embedder.embed_one(text))
            if (np.abs(scores - THRESHOLD) < gap).any():
                problems.append(f"{q.label}/{ns}: a score within {gap} of the threshold")
            ranked = np.sort(scores if every else scores[scores >= THRESHOLD - gap])
            if ranked.size > 1 and float(np.min(np.diff(ranked))) < gap:
                problems.append(
                    f"{q.label}/{ns}: two scores within {gap} "
                    f"(min gap {float(np.min(np.diff(ranked))):.2e})"
                )
    return problems


# --------------------------------------------------------------------------------------
# Loading (batched: one adapter call per batch, whatever the backend)
# --------------------------------------------------------------------------------------

NAMESPACES: tuple[str, ...] = ("entities", "relationships", "chunks")


async def load_vectors(index: Any, ds: GoldenDataset, namespace: str, *, batch: int = 5000) -> None:
    """Upsert ``namespace``'s records into ``index`` in batches of ``batch``."""
    records, _ = ds.records(namespace)
    for start in range(0, len(records), batch):
        await index.upsert(ds.vector_records(namespace, start, start + batch))


async def load_graph(graph: Any, ds: GoldenDataset, *, batch: int = 5000) -> None:
    """Upsert the nodes, then the relations (in dataset order: the edge order follows it)."""
    for start in range(0, len(ds.entities), batch):
        await graph.upsert_nodes(ds.entities[start : start + batch])
    for start in range(0, len(ds.relations), batch):
        await graph.upsert_edges(ds.relations[start : start + batch])


async def load_chunks(store: Any, ds: GoldenDataset, *, batch: int = 5000) -> None:
    """Upsert the chunks in batches."""
    for start in range(0, len(ds.chunks), batch):
        await store.upsert_chunks(ds.chunks[start : start + batch])
