"""The seeded LightRAG-style dataset: its model (:class:`DatasetSpec`, :class:`Dataset` and
its records), :func:`generate_dataset` and the :func:`keyword_queries` asked of it.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hexrag.devtools.lightrag_data.vocabulary import (
    _ADJ,
    _CONCEPTS,
    _EVENTS,
    _FILLER,
    _FIRST,
    _LAST,
    _LOCATIONS,
    _NOUN,
    _ORG_SUFFIX,
    _SECTIONS,
    _SUFFIX,
    _TECH,
    _TYPE_WEIGHTS,
    _VERBS,
    CATEGORIES,
    ENTITY_TYPES,
    SOURCES,
    THEMES,
)

__all__ = [
    "BASE_EPOCH",
    "GENERATOR_VERSION",
    "GRAPH_FIELD_SEP",
    "MAX_FILE_PATHS",
    "MAX_SOURCE_IDS",
    "Dataset",
    "DatasetSpec",
    "GenChunk",
    "GenEntity",
    "GenRelation",
    "KeywordQuery",
    "generate_dataset",
    "keyword_queries",
]


GRAPH_FIELD_SEP = "<SEP>"
GENERATOR_VERSION = 5  # bump when generate_dataset's output changes (invalidates bench caches)
BASE_EPOCH = 1_717_171_717
MAX_SOURCE_IDS = 200  # LightRAG's max_source_ids_per_entity / _per_relation (KEEP = oldest)
MAX_FILE_PATHS = 75  # LightRAG's DEFAULT_MAX_FILE_PATHS (KEEP + placeholder)



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


#: The word pools of an entity name per type (``random.choice`` from each, in order).
_NAME_POOLS: dict[str, tuple[Sequence[str], ...]] = {
    "person": (_FIRST, _LAST),
    "organization": (_ADJ, _ORG_SUFFIX),
    "product": (_ADJ, _NOUN, _SUFFIX),
    "feature": (
        tuple(theme.title() for theme in THEMES), ("Module", "Add-on", "Wizard", "Policy", "Rules")
    ),
    "technology": (_TECH, _NOUN),
    "component": (_ADJ, _NOUN),
    "location": (_LOCATIONS, ("Data Center", "Office", "Region", "Hub")),
    # randint(2019, 2025) draws as a choice among the seven years
    "event": (_ADJ, _EVENTS, tuple(str(year) for year in range(2019, 2026))),
}
_OTHER_POOLS = (_CONCEPTS, ("Pattern", "Principle", "Model", "Policy"))


class _Names:
    """Unique entity names per type, deterministic for a seeded ``random.Random``."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def _candidate(self, etype: str) -> str:
        # one word from each pool, left to right (the same draws as one choice per word)
        return " ".join(self.rng.choice(pool) for pool in _NAME_POOLS.get(etype, _OTHER_POOLS))

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

