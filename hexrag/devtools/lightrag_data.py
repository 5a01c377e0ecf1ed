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
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from hexrag.ports.embedder import Embedder

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

GRAPH_FIELD_SEP = "<SEP>"
GENERATOR_VERSION = 5  # bump when generate_dataset's output changes (invalidates bench caches)
BASE_EPOCH = 1_717_171_717
MAX_SOURCE_IDS = 200  # LightRAG's max_source_ids_per_entity / _per_relation (KEEP = oldest)
MAX_FILE_PATHS = 75  # LightRAG's DEFAULT_MAX_FILE_PATHS (KEEP + placeholder)

# --------------------------------------------------------------------------------------
# Vocabulary
# --------------------------------------------------------------------------------------

# fmt: off
CATEGORIES = ("CRM", "ERP", "HR", "Billing", "Analytics", "Security", "Logistics", "Support")
SOURCES = ("ingestion", "manual", "support-kb", "release-notes")
ENTITY_TYPES = (
    "organization",
    "person",
    "product",
    "feature",
    "technology",
    "component",
    "location",
    "event",
    "concept",
)
_TYPE_WEIGHTS = (14, 14, 16, 16, 10, 12, 6, 5, 7)

THEMES = (
    "data integration",
    "access control",
    "billing workflow",
    "incident response",
    "customer onboarding",
    "usage analytics",
    "supply chain visibility",
    "payroll compliance",
    "audit logging",
    "single sign-on",
    "invoice reconciliation",
    "demand forecasting",
    "ticket routing",
    "role management",
    "data retention",
    "encryption at rest",
    "pipeline orchestration",
    "revenue recognition",
    "shipment tracking",
    "performance reviews",
    "fraud detection",
    "report scheduling",
    "api rate limiting",
    "tenant isolation",
    "disaster recovery",
    "contract renewal",
    "inventory planning",
    "sla monitoring",
    "field mapping",
    "webhook delivery",
    "license management",
    "change management",
    "customer churn",
    "knowledge base search",
    "expense approval",
    "vendor onboarding",
    "schema migration",
    "alert escalation",
    "tax calculation",
    "workforce scheduling",
)
_VERBS = (
    "integrates with",
    "depends on",
    "replaces",
    "reports to",
    "feeds data into",
    "is deployed alongside",
    "authenticates against",
    "was evaluated by",
    "exports records to",
    "is maintained by",
    "synchronises with",
    "extends",
    "monitors",
    "is configured through",
    "competes with",
)
_ADJ = (
    "Atlas", "Nimbus", "Quantum", "Vertex", "Helix", "Aurora", "Cobalt", "Zenith", "Orion",
    "Nova", "Pulse", "Summit", "Harbor", "Beacon", "Cascade", "Ember", "Falcon", "Granite",
    "Horizon", "Ion", "Jade", "Krypton", "Lumen", "Meridian", "Nebula", "Onyx", "Prism",
    "Quartz", "Radiant", "Sable", "Titan", "Umbra", "Vector", "Willow", "Xenon", "Yonder",
    "Zephyr", "Apex", "Boreal", "Cinder", "Delta", "Echo", "Flux", "Glacier", "Halo", "Iris",
    "Juniper", "Kestrel", "Lattice", "Mosaic", "Nordic", "Opal", "Pioneer", "Quill", "Raven",
    "Sierra", "Tundra", "Unity", "Vivid", "Wharf", "Yukon", "Zircon", "Amber", "Basalt",
    "Citadel", "Drift", "Elm", "Fjord", "Grove", "Hearth", "Indigo", "Jasper", "Keel",
    "Lagoon", "Mistral", "Nimble", "Oasis", "Pylon", "Rune", "Solstice", "Tessera",
    "Zürich", "Østfold", "Saõ", "Kyōto",
)
_NOUN = (
    "Ledger", "Gateway", "Engine", "Console", "Vault", "Connector", "Scheduler", "Portal",
    "Hub", "Router", "Planner", "Tracker", "Monitor", "Studio", "Registry", "Broker",
    "Catalog", "Pipeline", "Dashboard", "Agent", "Bridge", "Compass", "Desk", "Forge",
    "Graph", "Index", "Journal", "Kernel", "Lens", "Matrix", "Navigator", "Orchestrator",
    "Pilot", "Queue", "Relay", "Sentinel", "Toolkit", "Uplink", "Validator", "Workbench",
    "Exchange", "Archive", "Beacon", "Cluster", "Depot", "Foundry", "Garden", "Harness",
)
_SUFFIX = (
    "Cloud", "Pro", "Suite", "Lite", "Edge", "Plus", "Enterprise", "Mobile", "API",
    "Express", "Core", "Insights", "Sync", "Flow", "One", "X", "360", "Connect", "Live", "Max",
)
_ORG_SUFFIX = (
    "Systems", "Labs", "Corp", "Group", "Networks", "Analytics", "Partners", "GmbH", "Inc.",
    "Holdings", "Technologies", "& Sons", "Software", "Consulting", "AG", "Ltd",
)
_FIRST = (
    "Maria", "James", "Aisha", "Chen", "Olga", "Diego", "Priya", "Tom", "Fatima", "Lars",
    "Yuki", "Kwame", "Elena", "Omar", "Grace", "Ivan", "Sofia", "Raj", "Nora", "Pedro",
    "Hana", "Felix", "Amara", "Jonas", "Leila", "Mateo", "Ingrid", "Kofi", "Mei", "Ahmed",
    "José", "Zoë", "Łukasz", "Søren", "Anaïs", "Björn", "Chloé", "Dmitri", "Émile", "Noël",
)
_LAST = (
    "Okafor", "Smith", "Nakamura", "Garcia", "Ivanova", "Müller", "Rossi", "Kowalski",
    "Haddad", "Larsen", "Patel", "Nguyen", "Dubois", "O'Brien", "Silva", "Kim", "Andersen",
    "Costa", "Fischer", "Mensah", "Schmidt", "Tanaka", "Moreau", "Novak", "Yilmaz", "Berg",
    "Ramos", "Chowdhury", "Lindqvist", "Petrov", "Ferreira", "Wójcik", "Åberg", "Núñez",
)
_LOCATIONS = (
    "Berlin", "Lagos", "Osaka", "Austin", "Lyon", "Pune", "Oslo", "Lima", "Seoul", "Cork",
    "Porto", "Accra", "Perth", "Kraków", "Malmö", "Québec", "Tromsø", "São Paulo",
)
_EVENTS = ("Summit", "Outage", "Migration", "Launch", "Audit", "Hackathon", "Review", "Rollout")
_CONCEPTS = (
    "Zero Trust", "Event Sourcing", "Data Mesh", "Chargeback", "Least Privilege",
    "Idempotency", "Backpressure", "Eventual Consistency", "Sharding", "Feature Flags",
    "Blue-Green Deployment", "Rate Shaping", "Soft Delete", "Tiered Storage", "Dead Letter",
)
_TECH = (
    "OAuth 2.0", "Kafka", "PostgreSQL", "gRPC", "GraphQL", "Redis", "SAML", "Kubernetes",
    "WebAssembly", "Parquet", "OpenTelemetry", "Terraform", "Elasticsearch", "SCIM", "JWT",
    "Protobuf", "Airflow", "dbt", "Snowflake", "S3",
)
_FILLER = (
    "The rollout was staged over several maintenance windows to limit customer impact.",
    "Administrators can override the default behaviour from the settings page.",
    "Metrics are exported every five minutes and retained for ninety days.",
    "The team documented known limitations in the internal runbook.",
    "Support engineers escalate unresolved cases after two business days.",
    "Configuration changes are versioned and can be rolled back.",
    "The feature is disabled by default for tenants on legacy plans.",
    "Customers reported faster turnaround after the change.",
    "A nightly job reconciles the records and flags mismatches for review.",
    "Access is granted per workspace and audited quarterly.",
    "Latency stayed under the agreed threshold during the load test.",
    "The migration guide lists every deprecated field and its replacement.",
)
_SECTIONS = (
    "Overview", "Installation", "Configuration", "Troubleshooting", "Release Notes",
    "Security Model", "Data Flows", "Administration", "Integrations", "FAQ", "Known Issues",
)
# fmt: on


# --------------------------------------------------------------------------------------
# Dataset model
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DatasetSpec:
    """What to generate. ``n_relations`` defaults to twice ``n_entities``."""

    n_entities: int
    seed: int = 0
    n_relations: int | None = None
    n_products: int | None = None  # default: max(4, n_entities // 40)
    chunks_per_entity: float = 0.25  # ~1 chunk per 4 entities (LightRAG extracts ~10-20/chunk)
    relations_per_chunk: int = 14  # relation incidences per chunk (evidence spans chunks)
    zipf_s: float = 1.0
    zipf_q: float = 3.0  # Zipf-Mandelbrot offset: w = 1 / (rank + q) ** s
    chunk_words: tuple[int, int] = (120, 420)
    heading_fraction: float = 0.35
    fragment_description_fraction: float = 0.04  # "<SEP>"-joined unsummarised descriptions
    legacy_relation_fraction: float = 0.03  # relation vectors stored with an unsorted pair
    missing_weight_fraction: float = 0.01  # graph edges without a weight attribute
    missing_description_fraction: float = 0.005  # graph nodes without a description
    dangling_chunk_fraction: float = 0.01  # entities naming a chunk id that no longer exists
    orphan_vector_entities: int = 2  # entity vectors whose graph node is gone
    # Duplicated texts: this fraction of entities (relations) carries, word for word, the
    # description of an earlier entity of the same type (an earlier relation). With the plain
    # hashing embedder that makes exact cosine ties (the tie-heavy parity dataset).
    duplicate_description_fraction: float = 0.0

    @property
    def relations(self) -> int:
        """The number of relations to generate."""
        return self.n_relations if self.n_relations is not None else 2 * self.n_entities

    @property
    def products(self) -> int:
        """The number of products."""
        return self.n_products if self.n_products is not None else max(4, self.n_entities // 40)

    @property
    def label(self) -> str:
        """A short name usable as a LightRAG workspace: ``e<entities>_s<seed>``."""
        return f"e{self.n_entities}_r{self.relations}_s{self.seed}"


@dataclass
class GenChunk:
    """A text chunk as LightRAG's document pipeline stores it."""

    id: str
    content: str
    doc_id: str
    order: int
    file_path: str
    product_id: str
    category: str
    heading: dict[str, Any] | None = None
    tokens: int = 0


@dataclass
class GenEntity:
    """A graph node (and, unless ``orphan``, its entity vector)."""

    name: str
    entity_type: str
    description: str | None
    chunk_ids: list[str] = field(default_factory=list)
    file_paths: list[str] = field(default_factory=list)
    created_at: int = BASE_EPOCH
    popularity: float = 0.0
    home_product: int = 0
    orphan: bool = False  # only in the entities vector store, not in the graph


@dataclass
class GenRelation:
    """A graph edge (one per unordered pair, as in LightRAG's NetworkX graph)."""

    src: str
    tgt: str
    description: str
    keywords: str
    weight: float | None
    chunk_ids: list[str] = field(default_factory=list)
    file_paths: list[str] = field(default_factory=list)
    created_at: int = BASE_EPOCH
    legacy_unsorted: bool = False  # vector stored as (src, tgt) with src > tgt

    @property
    def pair(self) -> tuple[str, str]:
        """The sorted pair."""
        return (self.src, self.tgt) if self.src <= self.tgt else (self.tgt, self.src)


@dataclass
class Dataset:
    """A generated dataset (see :func:`generate_dataset`)."""

    spec: DatasetSpec
    chunks: list[GenChunk]
    entities: list[GenEntity]
    relations: list[GenRelation]
    docs: dict[str, dict[str, Any]]
    products: list[dict[str, str]]

    def stats(self) -> dict[str, Any]:
        """Counts and spread figures, for logs and sanity checks."""
        degrees: dict[str, int] = {}
        for r in self.relations:
            degrees[r.src] = degrees.get(r.src, 0) + 1
            degrees[r.tgt] = degrees.get(r.tgt, 0) + 1
        ev = [len(r.chunk_ids) for r in self.relations]
        prods = [len(e.file_paths) for e in self.entities]
        return {
            "entities": len(self.entities),
            "relations": len(self.relations),
            "chunks": len(self.chunks),
            "docs": len(self.docs),
            "max_degree": max(degrees.values(), default=0),
            "mean_relation_chunks": sum(ev) / max(1, len(ev)),
            "max_relation_chunks": max(ev, default=0),
            "multi_chunk_relations": sum(1 for n in ev if n > 1),
            "multi_product_entities": sum(1 for n in prods if n > 1),
            "max_entity_chunks": max((len(e.chunk_ids) for e in self.entities), default=0),
        }


@dataclass(frozen=True)
class KeywordQuery:
    """A query with pre-supplied keywords (so LightRAG never calls an LLM) and its parameters."""

    query: str
    hl_keywords: tuple[str, ...]
    ll_keywords: tuple[str, ...]
    params: tuple[tuple[str, Any], ...] = ()
    label: str = ""

    def param_dict(self) -> dict[str, Any]:
        """Extra QueryParam fields (``top_k``, token budgets, ...)."""
        return dict(self.params)


# --------------------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------------------


def _md5(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()


def _limit_file_paths(paths: list[str]) -> list[str]:
    """LightRAG's KEEP limit on merged file paths, with its placeholder entry."""
    if len(paths) <= MAX_FILE_PATHS:
        return paths
    return [*paths[:MAX_FILE_PATHS], f"...truncated...(KEEP {MAX_FILE_PATHS}/{len(paths)})"]


class _Names:
    """Unique entity names per type, deterministic for a seeded ``random.Random``."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def _candidate(self, etype: str) -> str:
        r = self.rng
        if etype == "person":
            return f"{r.choice(_FIRST)} {r.choice(_LAST)}"
        if etype == "organization":
            return f"{r.choice(_ADJ)} {r.choice(_ORG_SUFFIX)}"
        if etype == "product":
            return f"{r.choice(_ADJ)} {r.choice(_NOUN)} {r.choice(_SUFFIX)}"
        if etype == "feature":
            theme = r.choice(THEMES).title()
            return f"{theme} {r.choice(('Module', 'Add-on', 'Wizard', 'Policy', 'Rules'))}"
        if etype == "technology":
            return f"{r.choice(_TECH)} {r.choice(_NOUN)}"
        if etype == "component":
            return f"{r.choice(_ADJ)} {r.choice(_NOUN)}"
        if etype == "location":
            return f"{r.choice(_LOCATIONS)} {r.choice(('Data Center', 'Office', 'Region', 'Hub'))}"
        if etype == "event":
            return f"{r.choice(_ADJ)} {r.choice(_EVENTS)} {r.randint(2019, 2025)}"
        return f"{r.choice(_CONCEPTS)} {r.choice(('Pattern', 'Principle', 'Model', 'Policy'))}"

    def make(self, etype: str) -> str:
        for attempt in range(12):
            name = self._candidate(etype)
            if attempt >= 6:  # the combination space is getting crowded: add a version tag
                name = f"{name} {self.rng.choice(('v', 'Mk', 'Gen'))}{self.rng.randint(2, 999)}"
            if name not in self.used:
                self.used.add(name)
                return name
        name = f"{self._candidate(etype)} #{len(self.used)}"
        self.used.add(name)
        return name


def _entity_description(rng: random.Random, name: str, etype: str, product: str) -> str:
    t1, t2 = rng.sample(THEMES, 2)
    parts = [
        f"{name} is a {etype} used in {product} deployments for {t1}.",
        f"It supports {t2} and is referenced in customer documentation.",
    ]
    if rng.random() < 0.5:
        parts.append(rng.choice(_FILLER))
    return " ".join(parts[: rng.randint(1, len(parts))])


def _relation_description(
    rng: random.Random, src: str, tgt: str, themes: Sequence[str], product: str
) -> str:
    verb = rng.choice(_VERBS)
    text = f"{src} {verb} {tgt} to support {themes[0]} in {product}."
    if rng.random() < 0.4:
        text += f" The link matters for {themes[-1]}."
    return text


def _chunk_text(
    rng: random.Random,
    relations: Sequence[GenRelation],
    mentions: Sequence[GenEntity],
    product: str,
    words: tuple[int, int],
) -> str:
    target = rng.randint(*words)
    sentences: list[str] = [f"This section of the {product} documentation covers the following."]
    for rel in relations:
        sentences.append(rel.description)
    for ent in mentions:
        sentences.append(f"{ent.name} is mentioned as a {ent.entity_type} in this context.")
    n_words = sum(len(s.split()) for s in sentences)
    while n_words < target:
        s = rng.choice(_FILLER)
        if rng.random() < 0.3:
            s = f"{s} This affects {rng.choice(THEMES)}."
        sentences.append(s)
        n_words += len(s.split())
    body = sentences[1:]
    rng.shuffle(body)
    return " ".join([sentences[0], *body])


def _heading(rng: random.Random, product_name: str, source: str) -> dict[str, Any]:
    title = f"{product_name} {source.replace('-', ' ').title()} Guide"
    parents = [title, rng.choice(_SECTIONS)]
    roll = rng.random()
    if roll < 0.01:
        # Deeper than 256 tokens even after the per-level cap: collapsed to "first → … → last".
        parents += [f"Part {k}: " + " ".join(rng.sample(THEMES, 8)) for k in range(1, 19)]
    elif roll < 0.05:
        # A long, messy chain: per-level 80-char cap, arrows and zero-width characters.
        parents += [
            "Appendix → Deep Dive into " + " ".join(rng.sample(THEMES, 6)),
            "Step\u200b-by-step  walkthrough\u2060 for admins",
            rng.choice(_SECTIONS),
        ]
    elif roll < 0.5:
        parents.append(rng.choice(_SECTIONS) + " Details")
    return {
        "level": len(parents) + 1,
        "heading": rng.choice(THEMES).title(),
        "parent_headings": parents,
    }


def generate_dataset(spec: DatasetSpec) -> Dataset:
    """Build a dataset from ``spec``; the same spec always gives the same dataset."""
    rng = random.Random(spec.seed)
    nrng = np.random.default_rng(spec.seed)
    names = _Names(rng)

    # Products, documents (one per product source), chunks.
    products: list[dict[str, str]] = []
    for p in range(spec.products):
        pid = f"p{p:04d}"
        products.append(
            {
                "product_id": pid,
                "name": f"{rng.choice(_ADJ)} {rng.choice(CATEGORIES)} {rng.choice(_SUFFIX)}",
                "category": rng.choice(CATEGORIES),
            }
        )
    docs: dict[str, dict[str, Any]] = {}
    doc_keys: list[tuple[str, int, str]] = []  # (doc_id, product index, file_path)
    for p, prod in enumerate(products):
        for source in rng.sample(SOURCES, rng.randint(1, 3)):
            fp = f"product_id:{prod['product_id']}:category:{prod['category']}:source:{source}"
            doc_id = "doc-" + _md5(fp)
            docs[doc_id] = {"file_path": fp, "product": p, "source": source, "chunks": []}
            doc_keys.append((doc_id, p, fp))

    n_chunks = max(len(doc_keys), math.ceil(spec.n_entities * spec.chunks_per_entity))
    # Every document gets a chunk; the rest are spread at random. Ingestion order: document by
    # document, chunks in order inside a document.
    chunk_docs = list(range(len(doc_keys)))
    chunk_docs += [rng.randrange(len(doc_keys)) for _ in range(n_chunks - len(doc_keys))]
    chunk_docs.sort()
    chunks: list[GenChunk] = []
    for doc_id, p, fp in (doc_keys[d] for d in chunk_docs):
        order = len(docs[doc_id]["chunks"])
        cid = f"{doc_id}-chunk-{order:03d}"
        docs[doc_id]["chunks"].append(cid)
        prod = products[p]
        heading = None
        if rng.random() < spec.heading_fraction:
            heading = _heading(rng, prod["name"], docs[doc_id]["source"])
        chunks.append(
            GenChunk(
                id=cid,
                content="",
                doc_id=doc_id,
                order=order,
                file_path=fp,
                product_id=prod["product_id"],
                category=prod["category"],
                heading=heading,
            )
        )
    chunks_by_product: list[list[int]] = [[] for _ in products]
    for i, c in enumerate(chunks):
        chunks_by_product[docs[c.doc_id]["product"]].append(i)

    # Entities with Zipf-Mandelbrot popularity over a random rank order.
    n = spec.n_entities
    ranks = nrng.permutation(n)
    popularity = 1.0 / np.power(ranks + 1.0 + spec.zipf_q, spec.zipf_s)
    popularity = popularity / popularity.sum()
    entities: list[GenEntity] = []
    for i in range(n):
        etype = rng.choices(ENTITY_TYPES, weights=_TYPE_WEIGHTS)[0]
        home = rng.randrange(len(products))
        name = names.make(etype)
        entities.append(
            GenEntity(
                name=name,
                entity_type=etype,
                description=_entity_description(rng, name, etype, products[home]["name"]),
                created_at=BASE_EPOCH + i,
                popularity=float(popularity[i]),
                home_product=home,
            )
        )

    # Relations: endpoints drawn by popularity, one relation per unordered pair.
    n_rel = spec.relations
    relations: list[GenRelation] = []
    seen_pairs: set[tuple[int, int]] = set()
    batch = max(1024, n_rel)
    while len(relations) < n_rel:
        srcs = nrng.choice(n, size=batch, p=popularity)
        tgts = nrng.choice(n, size=batch, p=popularity)
        for a, b in zip(srcs.tolist(), tgts.tolist(), strict=True):
            if a == b:
                continue
            key = (a, b) if a < b else (b, a)
            if key in seen_pairs:
                continue
            seen_pairs.add(key)
            src, tgt = entities[a], entities[b]
            themes = rng.sample(THEMES, rng.randint(1, 3))
            prod = products[src.home_product]["name"]
            relations.append(
                GenRelation(
                    src=src.name,
                    tgt=tgt.name,
                    description=_relation_description(rng, src.name, tgt.name, themes, prod),
                    keywords=", ".join(themes),
                    weight=0.0,
                    created_at=BASE_EPOCH + n + len(relations),
                )
            )
            if len(relations) >= n_rel:
                break
    name_index = {e.name: i for i, e in enumerate(entities)}

    # Evidence: every relation gets a home chunk in its source product; then each chunk draws
    # further relations by popularity (local product first), so popular relations span many
    # chunks and products.
    chunk_rels: list[list[int]] = [[] for _ in chunks]
    rel_pop = np.array(
        [
            math.sqrt(popularity[name_index[r.src]] * popularity[name_index[r.tgt]])
            for r in relations
        ]
    )
    rel_pop = rel_pop / rel_pop.sum()
    for ri, rel in enumerate(relations):
        pool = chunks_by_product[entities[name_index[rel.src]].home_product] or range(len(chunks))
        chunk_rels[rng.choice(pool)].append(ri)
    extra = nrng.choice(len(relations), size=(len(chunks), spec.relations_per_chunk), p=rel_pop)
    for ci in range(len(chunks)):
        have = set(chunk_rels[ci])
        for ri in extra[ci].tolist():
            if ri not in have and len(chunk_rels[ci]) < spec.relations_per_chunk * 2:
                have.add(ri)
                chunk_rels[ci].append(ri)

    ent_chunks: list[list[int]] = [[] for _ in entities]
    rel_chunks: list[list[int]] = [[] for _ in relations]
    chunk_mentions: list[list[int]] = [[] for _ in chunks]
    for ci, rlist in enumerate(chunk_rels):
        seen_e: set[int] = set()
        for ri in rlist:
            rel_chunks[ri].append(ci)
            for ei in (name_index[relations[ri].src], name_index[relations[ri].tgt]):
                if ei not in seen_e:
                    seen_e.add(ei)
                    ent_chunks[ei].append(ci)
    for ei, ent in enumerate(entities):
        if not ent_chunks[ei] or rng.random() < 0.15:
            pool = chunks_by_product[ent.home_product] or range(len(chunks))
            ci = rng.choice(pool)
            if ci not in ent_chunks[ei]:
                ent_chunks[ei].append(ci)
                chunk_mentions[ci].append(ei)

    # Chunk text and per-object source ids / file paths, in ingestion order.
    for ci, chunk in enumerate(chunks):
        prod_name = products[docs[chunk.doc_id]["product"]]["name"]
        chunk.content = _chunk_text(
            rng,
            [relations[ri] for ri in chunk_rels[ci]],
            [entities[ei] for ei in chunk_mentions[ci]],
            prod_name,
            spec.chunk_words,
        )
    for ei, ent in enumerate(entities):
        cis = sorted(ent_chunks[ei])
        ent.chunk_ids = [chunks[ci].id for ci in cis][:MAX_SOURCE_IDS]
        ent.file_paths = _limit_file_paths(list(dict.fromkeys(chunks[ci].file_path for ci in cis)))
        if rng.random() < spec.dangling_chunk_fraction:
            # A chunk deleted after extraction: its id stays in source_id (within the cap).
            pos = rng.randrange(len(ent.chunk_ids) + 1)
            dangling = "chunk-" + _md5(ent.name)
            if len(ent.chunk_ids) >= MAX_SOURCE_IDS:
                ent.chunk_ids[min(pos, MAX_SOURCE_IDS - 1)] = dangling
            else:
                ent.chunk_ids.insert(pos, dangling)
        if rng.random() < spec.fragment_description_fraction and ent.description:
            ent.description = GRAPH_FIELD_SEP.join(
                [ent.description, f"{ent.name} also appears in {rng.choice(THEMES)} material."]
            )
        if rng.random() < spec.missing_description_fraction:
            ent.description = None
    for ri, rel in enumerate(relations):
        cis = sorted(rel_chunks[ri])
        rel.chunk_ids = [chunks[ci].id for ci in cis][:MAX_SOURCE_IDS]
        rel.file_paths = _limit_file_paths(list(dict.fromkeys(chunks[ci].file_path for ci in cis)))
        # Weight: at least the number of evidence chunks (LightRAG's floor), often tied.
        rel.weight = float(len(rel.chunk_ids)) + rng.choice((0.0, 0.0, 0.0, 0.5, 1.0, 2.0))
        if rng.random() < spec.missing_weight_fraction:
            rel.weight = None
        # Random stored orientation; legacy data keeps an unsorted pair in the vector store.
        if rng.random() < 0.5:
            rel.src, rel.tgt = rel.tgt, rel.src
        rel.legacy_unsorted = rel.src > rel.tgt and rng.random() < spec.legacy_relation_fraction * 2

    if spec.duplicate_description_fraction > 0:
        _duplicate_descriptions(spec, entities, relations)

    for k in range(spec.orphan_vector_entities):
        name = names.make("component")
        entities.append(
            GenEntity(
                name=name,
                entity_type="component",
                description=f"{name} was removed from the graph but its vector remains.",
                chunk_ids=[chunks[k % len(chunks)].id],
                file_paths=[chunks[k % len(chunks)].file_path],
                created_at=BASE_EPOCH - 1000 + k,
                orphan=True,
            )
        )

    return Dataset(
        spec=spec,
        chunks=chunks,
        entities=entities,
        relations=relations,
        docs=docs,
        products=products,
    )


def _duplicate_descriptions(
    spec: DatasetSpec, entities: list[GenEntity], relations: list[GenRelation]
) -> None:
    """Copy descriptions word for word (a separate random stream, so datasets without
    duplication are unchanged)."""
    rng = random.Random(spec.seed * 7919 + 1)
    by_type: dict[str, list[GenEntity]] = {}
    for ent in entities:
        earlier = by_type.setdefault(ent.entity_type, [])
        if earlier and rng.random() < spec.duplicate_description_fraction:
            ent.description = rng.choice(earlier).description
        earlier.append(ent)
    for i, rel in enumerate(relations):
        if i and rng.random() < spec.duplicate_description_fraction:
            rel.description = relations[rng.randrange(i)].description


def keyword_queries(
    dataset: Dataset, n: int, *, seed: int = 0, no_match: bool = True
) -> list[KeywordQuery]:
    """``n`` realistic keyword queries over ``dataset`` (deterministic).

    Low-level keywords are entity names (popular hubs and long-tail entities, sometimes a
    partial name); high-level keywords are relation themes. Every eighth query omits one list
    (mode fall-through: ``i % 8`` in 5, 6) or matches nothing (``i % 8 == 7``, unless
    ``no_match`` is false); parameters cycle through LightRAG's defaults, small token budgets
    (truncation), a small ``top_k``, a tight total budget and a user prompt.
    """
    rng = random.Random(f"{dataset.spec.label}:{seed}")
    graph_entities = [e for e in dataset.entities if not e.orphan]
    by_pop = sorted(graph_entities, key=lambda e: -e.popularity)
    hubs = by_pop[: max(5, len(by_pop) // 100)]
    variants: list[tuple[str, dict[str, Any]]] = [
        ("default", {}),
        (
            "small-budgets",
            {"max_entity_tokens": 600, "max_relation_tokens": 900, "max_total_tokens": 6000},
        ),
        ("small-k", {"top_k": 8, "chunk_top_k": 5}),
        ("default", {}),
        ("tight-total", {"max_total_tokens": 12000}),
        (
            "user-prompt",
            {
                "user_prompt": "Answer in two sentences and cite sources.",
                "response_type": "Bullet Points",
                "max_total_tokens": 9000,
            },
        ),
    ]
    out: list[KeywordQuery] = []
    for i in range(n):
        kind = i % 8
        label, params = variants[i % len(variants)]
        ents = [rng.choice(hubs), *rng.sample(graph_entities, rng.randint(0, 2))]
        ll = [e.name for e in ents]
        if kind == 3:
            ll = [" ".join(ll[0].split()[:1]) or ll[0]]  # a partial name
        hl = rng.sample(THEMES, rng.randint(1, 2))
        if kind == 5:
            hl = []
        if kind == 6:
            ll = []
        if kind == 7 and no_match:
            ll, hl = ["Qzxv Plorth"], ["wibble frobnication"]
            label = "no-match"
        q = f"How does {', '.join(ll) or 'the platform'} relate to {' and '.join(hl) or 'this'}?"
        out.append(
            KeywordQuery(
                query=q,
                hl_keywords=tuple(hl),
                ll_keywords=tuple(ll),
                params=tuple(sorted(params.items())),
                label=f"q{i}-{label}",
            )
        )
    return out


# --------------------------------------------------------------------------------------
# LightRAG side
# --------------------------------------------------------------------------------------


class _AsyncEmbedder(Protocol):
    @property
    def dim(self) -> int: ...

    async def embed(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class LightRAGDir:
    """A LightRAG working directory: ``root`` + ``workspace``; the files are in ``path``."""

    root: Path
    workspace: str

    @property
    def path(self) -> Path:
        """The directory that holds the ``vdb_*.json``, ``kv_store_*.json`` and GraphML files."""
        return self.root / self.workspace


def register_offline_tiktoken() -> None:
    """Put hexrag's offline ``o200k_base`` into tiktoken's registry.

    LightRAG's ``TiktokenTokenizer("gpt-4o-mini")`` then finds the encoding without a download,
    and both sides tokenise with the very same BPE ranks.
    """
    import tiktoken.registry

    from hexrag.adapters.tiktoken_offline import load_encoding

    if "o200k_base" not in tiktoken.registry.ENCODINGS:
        tiktoken.registry.ENCODINGS["o200k_base"] = load_encoding("o200k_base")


def lightrag_embedding_func(
    embedder: Embedder | _AsyncEmbedder, *, model_name: str | None = None
) -> Any:
    """``embedder`` wrapped as LightRAG's ``EmbeddingFunc`` (same vectors on both sides).

    ``model_name`` becomes the ``EmbeddingFunc``'s model name, from which LightRAG's
    database backends derive their table suffix (``<model>_<dim>d``)."""
    from lightrag.utils import EmbeddingFunc

    async def _embed(texts: Sequence[str], **_kwargs: Any) -> np.ndarray:
        return np.asarray(await embedder.embed(list(texts)), dtype=np.float32)

    if model_name is None:
        return EmbeddingFunc(embedding_dim=embedder.dim, func=_embed)
    return EmbeddingFunc(embedding_dim=embedder.dim, func=_embed, model_name=model_name)


async def _no_llm(*args: Any, **kwargs: Any) -> str:
    raise AssertionError("LightRAG called an LLM during a parity/benchmark run")


def _quiet_lightrag() -> None:
    # After ``import lightrag`` (lightrag.utils sets its logger to INFO at import): no log
    # I/O on LightRAG's side during parity runs and benchmarks.
    for name in ("lightrag", "nano-vectordb"):
        logging.getLogger(name).setLevel(logging.ERROR)


def _make_lightrag(
    wd: LightRAGDir,
    embedder: Embedder | _AsyncEmbedder,
    *,
    kg_chunk_pick_method: str = "VECTOR",
    cosine_threshold: float = 0.2,
    related_chunk_number: int = 5,
    enable_content_headings: bool = True,
) -> Any:
    register_offline_tiktoken()
    from lightrag import LightRAG
    from lightrag.utils import TiktokenTokenizer

    _quiet_lightrag()

    return LightRAG(
        working_dir=str(wd.root),
        workspace=wd.workspace,
        embedding_func=lightrag_embedding_func(embedder),
        llm_model_func=_no_llm,
        tokenizer=TiktokenTokenizer("gpt-4o-mini"),
        kg_chunk_pick_method=kg_chunk_pick_method,
        related_chunk_number=related_chunk_number,
        enable_content_headings=enable_content_headings,
        cosine_better_than_threshold=cosine_threshold,
        vector_db_storage_cls_kwargs={"cosine_better_than_threshold": cosine_threshold},
        min_rerank_score=0.0,
        user_prompt_prefix="",
        enable_llm_cache=True,
        rerank_model_func=None,
    )


def _clear_workdir(path: Path) -> None:
    """Remove an earlier dataset's files: LightRAG's storages *merge* into existing files."""
    if not path.exists():
        return
    ours = ("kv_store_", "vdb_", "graph_chunk_entity_relation", ".hexrag-bench")
    files = [p for p in path.iterdir()]
    strangers = [p.name for p in files if p.is_dir() or not p.name.startswith(ours)]
    if strangers:
        raise FileExistsError(
            f"{path} holds files that are not LightRAG's ({strangers[:5]}); "
            "refusing to overwrite it with a generated dataset"
        )
    for p in files:
        p.unlink()


async def write_lightrag_workdir(
    dataset: Dataset,
    root: Path | str,
    embedder: Embedder | _AsyncEmbedder,
    *,
    workspace: str | None = None,
) -> LightRAGDir:
    """Write ``dataset`` into ``root/<workspace>/`` through LightRAG's own storage classes.

    Writes text chunks, full docs, entity/relation chunk trackers, the three NanoVectorDB
    stores (embedded with ``embedder``) and the NetworkX graph, then finalises the storages
    (LightRAG flushes and saves every file) and resets LightRAG's process-wide shared state.
    LightRAG files already in ``root/<workspace>/`` are deleted first (LightRAG would merge the
    new dataset into them); any other file there makes it refuse (``FileExistsError``).
    """
    from lightrag.kg.shared_storage import finalize_share_data

    wd = LightRAGDir(Path(root), workspace or dataset.spec.label)
    _clear_workdir(wd.path)
    rag = _make_lightrag(wd, embedder)
    await rag.initialize_storages()
    try:
        await write_lightrag_records(rag, dataset)
    finally:
        await rag.finalize_storages()
        finalize_share_data()
    return wd


async def write_lightrag_records(rag: Any, dataset: Dataset) -> None:
    """Write ``dataset`` through the storage objects of an initialised ``LightRAG``: text
    chunks, full docs, entity/relation chunk trackers, the three vector stores and the graph,
    then LightRAG's insert commit (``_insert_done``: flush and persist every store). Works for
    any LightRAG storage backend (files, PostgreSQL, Milvus + Redis, ...)."""
    tokenizer = rag.tokenizer
    chunk_records: dict[str, dict[str, Any]] = {}
    for c in dataset.chunks:
        rec: dict[str, Any] = {
            "tokens": len(tokenizer.encode(c.content)),
            "content": c.content,
            "chunk_order_index": c.order,
            "full_doc_id": c.doc_id,
            "file_path": c.file_path,
            "llm_cache_list": [],
            "product_id": c.product_id,
            "category": c.category,
        }
        if c.heading is not None:
            rec["heading"] = c.heading
        chunk_records[c.id] = rec
    await rag.text_chunks.upsert(chunk_records)
    await rag.chunks_vdb.upsert(chunk_records)
    await rag.full_docs.upsert(
        {
            doc_id: {
                "content": "\n\n".join(chunk_records[cid]["content"] for cid in d["chunks"]),
                "file_path": d["file_path"],
            }
            for doc_id, d in dataset.docs.items()
        }
    )

    nodes: list[tuple[str, dict[str, Any]]] = []
    ent_vectors: dict[str, dict[str, Any]] = {}
    ent_chunks: dict[str, dict[str, Any]] = {}
    for e in dataset.entities:
        source_id = GRAPH_FIELD_SEP.join(e.chunk_ids)
        file_path = GRAPH_FIELD_SEP.join(e.file_paths)
        description = e.description if e.description is not None else ""
        if not e.orphan:
            node: dict[str, Any] = {
                "entity_id": e.name,
                "entity_type": e.entity_type,
                "description": description,
                "source_id": source_id,
                "file_path": file_path,
                "created_at": e.created_at,
            }
            if e.description is None:
                del node["description"]
            nodes.append((e.name, node))
            ent_chunks[e.name] = {"chunk_ids": list(e.chunk_ids), "count": len(e.chunk_ids)}
        ent_vectors["ent-" + _md5(e.name)] = {
            "entity_name": e.name,
            "entity_type": e.entity_type,
            "content": f"{e.name}\n{description}",
            "source_id": source_id,
            "file_path": file_path,
        }
    await rag.chunk_entity_relation_graph.upsert_nodes_batch(nodes)

    edges: list[tuple[str, str, dict[str, Any]]] = []
    rel_vectors: dict[str, dict[str, Any]] = {}
    rel_chunks: dict[str, dict[str, Any]] = {}
    for r in dataset.relations:
        source_id = GRAPH_FIELD_SEP.join(r.chunk_ids)
        file_path = GRAPH_FIELD_SEP.join(r.file_paths)
        edge: dict[str, Any] = {
            "weight": r.weight,
            "description": r.description,
            "keywords": r.keywords,
            "source_id": source_id,
            "file_path": file_path,
            "created_at": r.created_at,
        }
        if r.weight is None:
            del edge["weight"]
        edges.append((r.src, r.tgt, edge))
        a, b = (r.src, r.tgt) if r.legacy_unsorted else r.pair
        rel_vectors["rel-" + _md5(a + b)] = {
            "src_id": a,
            "tgt_id": b,
            "source_id": source_id,
            "content": f"{r.keywords}\t{a}\n{b}\n{r.description}",
            "keywords": r.keywords,
            "description": r.description,
            "weight": r.weight if r.weight is not None else 1.0,
            "file_path": file_path,
        }
        rel_chunks[f"{r.pair[0]}{GRAPH_FIELD_SEP}{r.pair[1]}"] = {
            "chunk_ids": list(r.chunk_ids),
            "count": len(r.chunk_ids),
        }
    await rag.chunk_entity_relation_graph.upsert_edges_batch(edges)
    await asyncio.gather(
        rag.entities_vdb.upsert(ent_vectors),
        rag.relationships_vdb.upsert(rel_vectors),
        rag.entity_chunks.upsert(ent_chunks),
        rag.relation_chunks.upsert(rel_chunks),
    )
    # The document pipeline's commit: flush vector buffers and persist every store.
    await rag._insert_done()


async def open_lightrag(
    wd: LightRAGDir,
    embedder: Embedder | _AsyncEmbedder,
    *,
    kg_chunk_pick_method: str = "VECTOR",
    cosine_threshold: float = 0.2,
    related_chunk_number: int = 5,
    enable_content_headings: bool = True,
) -> Any:
    """A ``LightRAG`` object on ``wd`` with initialised storages and no LLM.

    Settings that LightRAG reads from the environment at import are passed explicitly. Call
    ``await rag.finalize_storages()`` when done.
    """
    rag = _make_lightrag(
        wd,
        embedder,
        kg_chunk_pick_method=kg_chunk_pick_method,
        cosine_threshold=cosine_threshold,
        related_chunk_number=related_chunk_number,
        enable_content_headings=enable_content_headings,
    )
    await rag.initialize_storages()
    return rag


_PARAM_DEFAULTS: dict[str, Any] = {
    "top_k": 40,
    "chunk_top_k": 20,
    "max_entity_tokens": 6000,
    "max_relation_tokens": 8000,
    "max_total_tokens": 30000,
    "response_type": "Multiple Paragraphs",
    "user_prompt": None,
    "enable_rerank": False,
    "disable_user_prompt_prefix": False,
}


def query_param_fields(mode: str, q: KeywordQuery) -> dict[str, Any]:
    """Every QueryParam field a parity run sets, explicitly (no env-driven defaults)."""
    fields: dict[str, Any] = {
        **_PARAM_DEFAULTS,
        "mode": mode,
        "hl_keywords": list(q.hl_keywords),
        "ll_keywords": list(q.ll_keywords),
        "conversation_history": [],
    }
    fields.update(q.param_dict())
    return fields


def lightrag_query_param(mode: str, q: KeywordQuery, **overrides: Any) -> Any:
    """LightRAG's ``QueryParam`` for ``q`` in ``mode`` (all fields explicit)."""
    from lightrag.base import QueryParam

    return QueryParam(**{**query_param_fields(mode, q), **overrides})


async def lightrag_query_data(rag: Any, mode: str, q: KeywordQuery) -> dict[str, Any]:
    """LightRAG's ``aquery_data`` for ``q`` in ``mode``."""
    result: dict[str, Any] = await rag.aquery_data(q.query, lightrag_query_param(mode, q))
    return result


async def lightrag_context(rag: Any, mode: str, q: KeywordQuery) -> str:
    """LightRAG's context string (``aquery`` with ``only_need_context=True``)."""
    result = await rag.aquery(q.query, lightrag_query_param(mode, q, only_need_context=True))
    return str(result) if result is not None else ""


# --------------------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------------------


def _short(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _diff_list(name: str, lr: Sequence[Any], hx: Sequence[Any]) -> list[str]:
    """The first difference of two ordered lists (length, then the first differing item)."""
    out: list[str] = []
    if len(lr) != len(hx):
        out.append(f"{name}: LightRAG has {len(lr)} items, hexrag {len(hx)}")
    for i, (a, b) in enumerate(zip(lr, hx, strict=False)):
        if a != b:
            if isinstance(a, dict) and isinstance(b, dict):
                keys = [
                    k
                    for k in dict.fromkeys([*a, *b])
                    if a.get(k, "<absent>") != b.get(k, "<absent>")
                ]
                detail = "; ".join(
                    f"{k}: LightRAG={_short(a.get(k, '<absent>'), 160)} "
                    f"hexrag={_short(b.get(k, '<absent>'), 160)}"
                    for k in keys
                )
                if list(a) != list(b) and not keys:
                    detail = f"key order LightRAG={list(a)} hexrag={list(b)}"
                out.append(f"{name}[{i}] differs: {detail}")
            else:
                out.append(f"{name}[{i}] differs: LightRAG={_short(a)} hexrag={_short(b)}")
            break
    else:
        if len(lr) != len(hx):
            extra, who = (lr[len(hx)], "LightRAG") if len(lr) > len(hx) else (hx[len(lr)], "hexrag")
            out.append(f"{name}[{min(len(lr), len(hx))}] only in {who}: {_short(extra)}")
    return out


def diff_context(lr: str, hx: str) -> list[str]:
    """The first differing line of two context strings, with its section."""
    if lr == hx:
        return []
    a, b = lr.split("\n"), hx.split("\n")
    section = "?"
    for i in range(max(len(a), len(b))):
        la = a[i] if i < len(a) else "<end>"
        lb = b[i] if i < len(b) else "<end>"
        if la.startswith(("Knowledge Graph Data", "Document Chunks", "Reference Document")):
            section = la.split("(")[0].strip() + (" (" + la.split("(")[1][:20] if "(" in la else "")
        if la != lb:
            return [
                f"context differs at line {i + 1} (section {section!r}; LightRAG {len(a)} lines, "
                f"hexrag {len(b)} lines):",
                f"  LightRAG: {_short(la, 400)}",
                f"  hexrag:   {_short(lb, 400)}",
            ]
    return [f"context differs (lengths {len(lr)} vs {len(hx)}, same lines)"]


def _without_processing_extras(lr: dict[str, Any], hx: dict[str, Any]) -> dict[str, Any]:
    """``hx`` with ``metadata.processing_info`` reduced to LightRAG's keys (hexrag adds some;
    where LightRAG reports no ``processing_info`` at all, hexrag's is dropped)."""
    lr_meta = lr.get("metadata")
    hx_meta = hx.get("metadata")
    if not isinstance(lr_meta, dict) or not isinstance(hx_meta, dict):
        return hx
    hx_info = hx_meta.get("processing_info")
    if not isinstance(hx_info, dict):
        return hx
    lr_info = lr_meta.get("processing_info")
    if not isinstance(lr_info, dict):  # LightRAG has none here: all of hexrag's is additions
        return {**hx, "metadata": {k: v for k, v in hx_meta.items() if k != "processing_info"}}
    trimmed = {k: hx_info[k] for k in hx_info if k in lr_info}
    return {**hx, "metadata": {**hx_meta, "processing_info": trimmed}}


def diff_query_data(lr: dict[str, Any], hx: dict[str, Any], *, exact: bool = True) -> list[str]:
    """Differences between LightRAG's ``aquery_data`` and hexrag's ``query_data`` results.

    ``exact``: everything must be equal, in order (hexrag's extra ``processing_info`` keys are
    ignored). Otherwise (VECTOR chunk picking, whose tie order in LightRAG depends on a set's
    iteration order) chunks and references are compared as sets, the chunk-dependent counts are
    not compared, and entities, relationships and keywords must still be equal in order.
    """
    hx = _without_processing_extras(lr, hx)
    out: list[str] = []
    for key in ("status", "message"):
        if lr.get(key) != hx.get(key):
            out.append(f"{key}: LightRAG={lr.get(key)!r} hexrag={hx.get(key)!r}")
    if list(lr) != list(hx):
        out.append(f"top-level keys: LightRAG={list(lr)} hexrag={list(hx)}")
    lr_data, hx_data = lr.get("data", {}), hx.get("data", {})
    if list(lr_data) != list(hx_data):
        out.append(f"data keys: LightRAG={list(lr_data)} hexrag={list(hx_data)}")
    for key in ("entities", "relationships"):
        out += _diff_list(key, lr_data.get(key, []), hx_data.get(key, []))
    if exact:
        for key in ("chunks", "references"):
            out += _diff_list(key, lr_data.get(key, []), hx_data.get(key, []))
        lr_meta, hx_meta = lr.get("metadata", {}), hx.get("metadata", {})
        if lr_meta != hx_meta:
            out.append(f"metadata: LightRAG={_short(lr_meta, 600)} hexrag={_short(hx_meta, 600)}")
    else:
        lr_ids = {c.get("chunk_id") for c in lr_data.get("chunks", [])}
        hx_ids = {c.get("chunk_id") for c in hx_data.get("chunks", [])}
        if lr_ids != hx_ids:
            out.append(
                f"chunk ids (as sets): only LightRAG={sorted(lr_ids - hx_ids)[:5]} "
                f"only hexrag={sorted(hx_ids - lr_ids)[:5]} ({len(lr_ids)} vs {len(hx_ids)})"
            )
        lr_refs = {r.get("file_path") for r in lr_data.get("references", [])}
        hx_refs = {r.get("file_path") for r in hx_data.get("references", [])}
        if lr_refs != hx_refs:
            out.append(
                f"reference paths (as sets): LightRAG={sorted(lr_refs)} hexrag={sorted(hx_refs)}"
            )
        lr_meta = dict(lr.get("metadata", {}))
        hx_meta = dict(hx.get("metadata", {}))
        for meta in (lr_meta, hx_meta):
            info = meta.get("processing_info")
            if isinstance(info, dict):
                meta["processing_info"] = {
                    k: v
                    for k, v in info.items()
                    if k not in ("final_chunks_count", "merged_chunks_count")
                }
        if lr_meta != hx_meta:
            out.append(f"metadata: LightRAG={_short(lr_meta, 600)} hexrag={_short(hx_meta, 600)}")
    return out


def diff_context_as_sets(lr: str, hx: str) -> list[str]:
    """Context comparison for VECTOR picking: KG sections exact, chunk lines as sets."""

    def split(ctx: str) -> tuple[str, set[str], set[str]]:
        head, _, tail = ctx.partition("Document Chunks")
        chunk_part, _sep, ref_part = tail.partition("Reference Document List")
        chunks = {
            line.split('"content": ', 1)[-1]
            for line in chunk_part.split("\n")
            if line.startswith('{"reference_id"')
        }
        refs = {line.split("] ", 1)[-1] for line in ref_part.split("\n") if line.startswith("[")}
        return head, chunks, refs

    a, b = split(lr), split(hx)
    out: list[str] = []
    if a[0] != b[0]:
        out += diff_context(a[0], b[0])
    if a[1] != b[1]:
        out.append(f"context chunk lines differ as sets ({len(a[1])} vs {len(b[1])})")
    if a[2] != b[2]:
        out.append(f"context reference paths differ as sets: {sorted(a[2] ^ b[2])[:5]}")
    return out


# --------------------------------------------------------------------------------------
# Parity suite wiring
# --------------------------------------------------------------------------------------

PARITY_DATASETS: dict[str, DatasetSpec] = {
    # Zipf hubs, several products per entity, multi-chunk evidence: the main shape.
    "zipf1k": DatasetSpec(n_entities=1000, seed=7),
    # Many small products (entities in > 75 documents: file_path placeholder), short chunks,
    # flatter popularity, more legacy relation vectors.
    "flat300": DatasetSpec(
        n_entities=300,
        seed=17,
        n_products=60,
        chunks_per_entity=1.2,
        relations_per_chunk=8,
        zipf_s=0.7,
        chunk_words=(60, 200),
        legacy_relation_fraction=0.1,
    ),
}
"""Datasets of the parity suite, small enough for CI (2 cores, < 2 minutes)."""

PARITY_DATASETS["ties300"] = DatasetSpec(
    # Exact cosine ties everywhere: duplicated descriptions, templated texts, and the plain
    # hashing embedder (PARITY_EMBEDDERS), whose small-integer vectors tie often. LightRAG's
    # NanoVectorDB order among equal scores must be reproduced, not avoided.
    n_entities=300,
    seed=29,
    n_products=12,
    chunks_per_entity=0.8,
    relations_per_chunk=10,
    chunk_words=(40, 120),
    duplicate_description_fraction=0.3,
)

PARITY_QUERIES: dict[str, int] = {"zipf1k": 9, "flat300": 5, "ties300": 6}
"""Number of :func:`keyword_queries` per parity dataset."""

PARITY_EMBEDDERS: dict[str, str] = {"zipf1k": "jitter", "flat300": "jitter", "ties300": "hashing"}
"""The embedder of each parity dataset: ``jitter`` (:class:`ParityEmbedder`, no exact ties)
or ``hashing`` (hexrag's plain ``HashingEmbedder``: exact ties, the NanoVectorDB order)."""


def require_lightrag() -> None:
    """Skip the calling test module without lightrag-hku (``pip install -e '.[parity]'``).

    With ``HEXRAG_REQUIRE_PARITY=1`` (or ``HEXRAG_REQUIRE_BACKENDS=1``) its absence fails
    instead, so CI cannot silently skip the suite.
    """
    import os

    import pytest

    try:
        import lightrag  # noqa: F401
    except ImportError:
        reason = "the LightRAG parity suite needs lightrag-hku 1.5.7: pip install -e '.[parity]'"
        if "1" in (
            os.environ.get("HEXRAG_REQUIRE_PARITY"),
            os.environ.get("HEXRAG_REQUIRE_BACKENDS"),
        ):
            pytest.fail(reason + " (required by HEXRAG_REQUIRE_PARITY/BACKENDS)", pytrace=False)
        pytest.skip(reason, allow_module_level=True)


class ParityEmbedder:
    """hexrag's ``HashingEmbedder`` plus a small deterministic per-text jitter.

    ``HashingEmbedder`` sums ±1 word features, so templated texts often get exactly the same
    cosine with a query. hexrag reproduces NanoVectorDB's order among equal scores on LightRAG
    working directories (``docs/compat.md``; the ``ties300`` dataset tests exactly that with the
    plain ``HashingEmbedder``); the other datasets use this embedder so that they test the
    pipeline with ties out of the way, as real embedding models produce no exact ties: each
    text's vector gets a Gaussian jitter (about 2% of its length) seeded by the text's MD5,
    then is L2-normalised. Same text, same vector, in every process; both engines use this
    one object.
    """

    def __init__(self, dim: int = 384, *, jitter: float = 0.02) -> None:
        from hexrag.adapters.memory import HashingEmbedder

        self._inner = HashingEmbedder(dim)
        self._jitter = jitter / math.sqrt(dim)
        self.calls: list[list[str]] = []

    @property
    def dim(self) -> int:
        """Vector length."""
        return self._inner.dim

    @property
    def model_name(self) -> str:
        """A stable model name."""
        return f"{self._inner.model_name}+jitter"

    def embed_one(self, text: str) -> np.ndarray:
        """The vector of one text (not recorded in :attr:`calls`)."""
        v = self._inner.embed_one(text).astype(np.float64)
        seed = int.from_bytes(hashlib.md5(text.encode("utf-8")).digest()[:8], "little")
        v += self._jitter * np.random.default_rng(seed).standard_normal(v.shape[0])
        return (v / np.linalg.norm(v)).astype(np.float32)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32, one row per text."""
        self.calls.append(list(texts))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i] = self.embed_one(t)
        return out


_PARITY_EMBEDDER: ParityEmbedder | None = None


def parity_embed(texts: Sequence[str]) -> np.ndarray:
    """:class:`ParityEmbedder` (384-d) as a plain callable, for ``--embedder
    hexrag.devtools.lightrag_data:parity_embed`` (a server process embedding as the tests do)."""
    global _PARITY_EMBEDDER
    if _PARITY_EMBEDDER is None:
        _PARITY_EMBEDDER = ParityEmbedder(384)
    return np.stack([_PARITY_EMBEDDER.embed_one(t) for t in texts]) if texts else np.zeros(
        (0, 384), np.float32
    )


def parity_embedder(dim: int = 384, *, kind: str = "jitter") -> Any:
    """The deterministic embedder both sides use: :class:`ParityEmbedder` (``jitter``) or
    hexrag's plain ``HashingEmbedder`` (``hashing``; see :data:`PARITY_EMBEDDERS`)."""
    if kind == "jitter":
        return ParityEmbedder(dim)
    if kind == "hashing":
        from hexrag.adapters.memory import HashingEmbedder

        return HashingEmbedder(dim)
    raise ValueError(f"unknown parity embedder {kind!r}: jitter or hashing")


def parity_settings(kg_chunk_pick_method: str = "WEIGHT", **overrides: Any) -> Any:
    """hexrag ``EngineSettings`` equal to :func:`open_lightrag`'s LightRAG configuration,
    with hexrag's deliberate improvements switched off (``docs/compat.md``)."""
    from hexrag.core.model import EngineSettings

    fields: dict[str, Any] = {
        "kg_chunk_pick_method": kg_chunk_pick_method,
        "related_chunk_number": 5,
        "cosine_threshold": 0.2,
        "min_rerank_score": 0.0,
        "enable_content_headings": True,
        "summary_language": "English",
        "user_prompt_prefix": "",
        # LightRAG looks relations up by entity pair in every mode.
        "relation_lookup": {"local": "pair", "global": "pair", "hybrid": "pair", "mix": "pair"},
    }
    fields.update(overrides)
    return EngineSettings(**fields)


async def open_hexrag(
    path: Path | str,
    embedder: Embedder | _AsyncEmbedder,
    *,
    kg_chunk_pick_method: str = "WEIGHT",
    settings: Any = None,
) -> Any:
    """hexrag's ``QueryEngine`` on a LightRAG working directory, with parity settings."""
    from hexrag.adapters.workdir import load_workdir
    from hexrag.bootstrap import compose_engine

    if settings is None:
        settings = parity_settings(kg_chunk_pick_method)
    stores = load_workdir(
        Path(path), embedder_dim=embedder.dim, cosine_threshold=settings.cosine_threshold
    )
    return compose_engine(
        stores, embedder=embedder, settings=settings, store_cache=False  # type: ignore[arg-type]
    )


def hexrag_query_param(mode: str, q: KeywordQuery, **overrides: Any) -> Any:
    """hexrag's ``QueryParam`` with exactly the fields of :func:`lightrag_query_param`."""
    from hexrag.core.model import QueryParam

    return QueryParam(**{**query_param_fields(mode, q), **overrides})


async def hexrag_query_data(engine: Any, mode: str, q: KeywordQuery) -> dict[str, Any]:
    """hexrag's ``query_data`` for ``q`` in ``mode``."""
    result: dict[str, Any] = await engine.query_data(q.query, hexrag_query_param(mode, q))
    return result


async def hexrag_context(engine: Any, mode: str, q: KeywordQuery) -> str:
    """hexrag's context string (``query`` with ``only_need_context=True``)."""
    result = await engine.query(q.query, hexrag_query_param(mode, q, only_need_context=True))
    return str(result)
