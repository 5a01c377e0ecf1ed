"""The shared contract corpus: small, fixed, and full of the cases that break stores.

Every builder is deterministic (seeded numpy, fixed strings), so a backend that fails a contract
test can reproduce the exact input. Nasty cases covered:

* ``None`` and missing fields next to empty strings (which must stay ``""``);
* whole-id matching: ``chunk-1`` vs ``chunk-10`` vs ``xchunk-1``;
* ``source_id`` forms: ``<SEP>`` strings, PostgreSQL array text ``{chunk-a,chunk-b}``, quoted
  array elements ``{"chunk a","x\\"y"}``, lists;
* seed 001: 21 relations between ``Airtable`` and ``n8n`` with different ``source_id`` values,
  exactly one of which carries :data:`SEED_001_CHUNK`;
* entities in several products (multi-segment encoded ``file_path``) and records/chunks with
  first-class ``product_id`` / ``category_id`` metadata, including first-class metadata that
  contradicts the ``file_path``;
* non-ASCII names and values (é, 中文, emoji), quotes, ``%``, ``_``, backslashes and
  ``"or 1==1`` in ids, names, scope values and texts (filter-injection probes);
* ids whose code-point order differs from a locale collation (``"B" < "Z" < "a"``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hexrag.core.ingest.ids import relation_id
from hexrag.core.model import Chunk, Entity, QueryScope, Relation, VectorRecord

__all__ = [
    "MULTI_PRODUCT_FILE_PATH",
    "NASTY_IDS",
    "NASTY_STRINGS",
    "P1_FILE_PATH",
    "SCOPES",
    "SEED_001_CARRIER",
    "SEED_001_CHUNK",
    "SEED_001_PAIR",
    "SEP",
    "GraphOp",
    "as_float32",
    "chunks",
    "entities",
    "query_vectors",
    "random_graph_ops",
    "random_vector_records",
    "relations",
    "seed001_relations",
    "seeded_vectors",
    "vector_records",
]

SEP = "<SEP>"
P1_FILE_PATH = "product_id:p1:category:crm:source:x"
MULTI_PRODUCT_FILE_PATH = (
    "product_id:p1:category:crm:source:x<SEP>product_id:p2:category:erp:source:y"
)

NASTY_STRINGS: tuple[str, ...] = (
    "café déjà vu",
    "中文内容",
    "rocket 🚀 launch",
    "O'Brien said \"hi\"",
    "100% of _all_ rows",
    "back\\slash \\\\ double",
    '"or 1==1',
    "' OR '1'='1",
    "semi; DROP TABLE x; --",
    "line\nbreak\ttab",
    "{braces,comma}",
    "$1 {{x}} %s",
    "a:b:c",
)

NASTY_IDS: tuple[str, ...] = (
    "chunk-1",
    "chunk-10",
    "chunk-2",
    "xchunk-1",
    "B",
    "Z",
    "a",
    "é",
    "中文",
    "🚀",
    "id'quote",
    'id"dq',
    "id\\bs",
    "100%",
    "_under",
    '"or 1==1',
    "a b c",
    relation_id("Airtable", "n8n"),
)

SEED_001_CHUNK = "chunk-feb9c55ac0e8d1c68fdca8ac3c8593c0"
SEED_001_PAIR = ("Airtable", "n8n")
SEED_001_CARRIER = "rel-an-13"
"""The only one of the 21 seed-001 relations whose ``source_id`` names :data:`SEED_001_CHUNK`."""

_SCOPE_PROFILES: tuple[dict[str, Any], ...] = (
    {},
    {"file_path": P1_FILE_PATH},
    {"file_path": MULTI_PRODUCT_FILE_PATH},
    {"metadata": {"product_id": "p2", "category_id": "erp"}},
    {"metadata": {"product_id": ["p1", "p3"]}},
    # first-class metadata wins over the file_path
    {"metadata": {"product_id": "p2"}, "file_path": P1_FILE_PATH},
    {"full_doc_id": "doc-1"},
    {"full_doc_id": "doc-2", "file_path": "product_id:p3:category:crm:source:z"},
    {"file_path": "plain/path/file.md"},
    {"metadata": {"category_id": "crm"}},
    {"metadata": {"product_id": 'p"or 1==1'}},
    {"metadata": {"product_id": "p%"}},
    {"metadata": {"product_id": "p_"}},
    {"metadata": {"product_id": "p'q\\x"}},
    {"metadata": {"product_id": "产品-é"}},
    {"file_path": "product_id:p1:category:crm:source:naïve 中文 🚀.md"},
)

_SOURCE_IDS: tuple[Any, ...] = (
    None,
    "chunk-1",
    "chunk-1<SEP>chunk-10",
    "{chunk-a,chunk-b}",
    '{"chunk a","x\\"y",chunk-10}',
    ["chunk-2", "xchunk-1"],
)

_EXTRA_METADATA: tuple[dict[str, Any], ...] = (
    {},
    {"note": None, "nested": {"k": [1, 2.5, "é", None]}, "flag": True},
    {"heading": "Intro 中文", "parent_headings": ["Root", "O'Brien \"Q\""]},
)

SCOPES: tuple[QueryScope | None, ...] = (
    None,
    QueryScope(),
    QueryScope(product_id="p1"),
    QueryScope(product_id=["p2", "p3"]),
    QueryScope(product_id="p1", category_id="crm"),
    QueryScope(category_id="erp"),
    QueryScope(doc_ids="doc-1"),
    QueryScope(product_id='p"or 1==1'),
    QueryScope(product_id="p%"),
    QueryScope(product_id="p_"),
    QueryScope(product_id="p'q\\x"),
    QueryScope(product_id="产品-é"),
    QueryScope(product_id="nope"),
)
"""Scopes the vector-index contract queries with (``None`` and empty included)."""


def _unit_gaussian(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    m = rng.standard_normal((n, dim)).astype(np.float32)
    # Raw (not normalised) vectors of varied length: the port must not assume unit input.
    m *= rng.uniform(0.5, 3.0, size=(n, 1)).astype(np.float32)
    return m


def vector_records(dim: int = 16, *, seed: int = 7, n_extra: int = 14) -> list[VectorRecord]:
    """The fixed vector corpus: every nasty id, every scope profile, every ``source_id`` form.

    ``len(NASTY_IDS) + n_extra`` records with seeded random (unnormalised) float32 vectors.
    """
    rng = np.random.default_rng(seed)
    ids = [*NASTY_IDS, *(f"rec-{i:03d}" for i in range(n_extra))]
    vectors = _unit_gaussian(rng, len(ids), dim)
    out: list[VectorRecord] = []
    for i, rid in enumerate(ids):
        profile = _SCOPE_PROFILES[i % len(_SCOPE_PROFILES)]
        metadata = {**_EXTRA_METADATA[i % len(_EXTRA_METADATA)], **profile.get("metadata", {})}
        text = NASTY_STRINGS[i % len(NASTY_STRINGS)]
        out.append(
            VectorRecord(
                id=rid,
                vector=vectors[i],
                entity_name=None if i % 4 == 3 else f"{text} #{i}",
                src_id=None if i % 3 else "Airtable",
                tgt_id=None if i % 3 else f"n8n {text}",
                content=None if i % 5 == 4 else f"{text} content {i}",
                source_id=_SOURCE_IDS[i % len(_SOURCE_IDS)],
                file_path=profile.get("file_path"),
                full_doc_id=profile.get("full_doc_id"),
                created_at=None if i % 2 else 1_700_000_000 + i,
                metadata=metadata,
            )
        )
    return out


def query_vectors(dim: int = 16, *, seed: int = 11, n: int = 4) -> list[np.ndarray]:
    """Seeded, unnormalised float32 query vectors."""
    return list(_unit_gaussian(np.random.default_rng(seed), n, dim))


def random_vector_records(
    rng: np.random.Generator, n: int, dim: int, *, id_prefix: str = "r"
) -> list[VectorRecord]:
    """Random records with random scope profiles (for property tests)."""
    vectors = _unit_gaussian(rng, n, dim)
    out = []
    for i in range(n):
        profile = _SCOPE_PROFILES[int(rng.integers(len(_SCOPE_PROFILES)))]
        out.append(
            VectorRecord(
                id=f"{id_prefix}{int(rng.integers(0, 3 * n))}",
                vector=vectors[i],
                content=f"text {i}",
                file_path=profile.get("file_path"),
                full_doc_id=profile.get("full_doc_id"),
                metadata=dict(profile.get("metadata", {})),
            )
        )
    return out


# --------------------------------------------------------------------------------------
# Chunks
# --------------------------------------------------------------------------------------


def chunks() -> list[Chunk]:
    """Chunks with first-class scope metadata, ``None`` fields, JSON metadata and nasty ids."""
    return [
        Chunk(
            id="chunk-1",
            content="Airtable connects to n8n through webhooks.",
            tokens=8,
            full_doc_id="doc-1",
            chunk_order_index=0,
            file_path=P1_FILE_PATH,
            metadata={
                "product_id": "p1",
                "category_id": "crm",
                "heading": "Intro",
                "parent_headings": ["Root", "Sub é"],
                "llm_cache_list": [],
                "create_time": 1_700_000_000,
            },
        ),
        Chunk(
            id="chunk-10",
            content=" | ".join(NASTY_STRINGS),
            tokens=None,
            full_doc_id=None,
            chunk_order_index=None,
            file_path=None,
            metadata={
                "note": None,
                "nested": {"a": [1, 2.5, None, "中文"], "b": {"c": False}},
                "flag": False,
                "quote": 'O\'Brien "or 1==1" \\ %_',
            },
        ),
        Chunk(id="xchunk-1", content="", tokens=0, full_doc_id="doc-2", chunk_order_index=3),
        # One row a chunk: id, content, tokens, full_doc_id, chunk_order_index, file_path,
        # metadata.
        Chunk("chunk-a", "Multi-product chunk.", 3, "doc-3", 1, MULTI_PRODUCT_FILE_PATH,
              {"product_id": ["p1", "p2"], "category_id": ["crm", "erp"]}),
        Chunk("chunk-b", "Category-only chunk.", 3, "doc-3", 2, "plain/file.md",
              {"category_id": "erp"}),
        Chunk(SEED_001_CHUNK, "n8n's Airtable node reads and writes records.", 9, "doc-4", 0,
              "product_id:p2:category:erp:source:y"),
        Chunk("chunk-é-中文-🚀", "Non-ASCII id 中文 🚀", 4, "doc-é", 0,
              "product_id:产品-é:category:crm:source:naïve 中文 🚀.md", {"product_id": "产品-é"}),
        Chunk("chunk-'q\"\\%_", "Quote id", 2, "doc'q", 5, None,
              {"product_id": 'p"or 1==1', "category_id": "p%"}),
    ]


# --------------------------------------------------------------------------------------
# Graph
# --------------------------------------------------------------------------------------


def entities() -> list[Entity]:
    """Graph nodes: several products, ``None`` vs ``""`` descriptions, nasty names."""
    return [
        Entity(
            name="Airtable",
            entity_type="organization",
            description="Airtable is a spreadsheet-database hybrid.",
            source_id="chunk-a<SEP>chunk-b",
            file_path=MULTI_PRODUCT_FILE_PATH,
            created_at=1_700_000_000,
            properties={"rank_hint": 3, "aliases": ["AT", "air"], "score": 0.25},
        ),
        Entity(
            name="n8n",
            entity_type="software",
            description="n8n is a workflow automation tool.",
            source_id="chunk-1",
            file_path=P1_FILE_PATH,
        ),
        Entity(
            name="Café Déjà", entity_type="place", description="", source_id="{chunk-a,chunk-b}"
        ),
        Entity(name="中文实体", entity_type=None, description=None, source_id=None),
        Entity(name="Rocket 🚀", entity_type="thing", description="Self-loop owner 🚀"),
        Entity(
            name="O'Brien \"Q\"",
            entity_type="person",
            description='He said "or 1==1" -- 100% _sure_ \\ back',
            source_id='{"chunk a","x\\"y"}',
            properties={"flag": True},
        ),
        Entity(name="100%_match", description="percent and underscore"),
        Entity(name="back\\slash\\name", description="back\\slash"),
        Entity(name='"or 1==1', description="injection probe"),
        Entity(name="B"),
        Entity(name="a"),
    ]


def seed001_relations(chunk_for_carrier: str = SEED_001_CHUNK) -> list[Relation]:
    """Seed 001: 21 relations between ``Airtable`` and ``n8n`` (both orientations).

    Only :data:`SEED_001_CARRIER` names ``chunk_for_carrier`` (together with ``chunk-ops-10``);
    two decoys name ids that merely contain it (``x<id>`` and ``<id>0``). The others name
    ``chunk-an-NN`` ids, ``chunk-1`` / ``chunk-10`` / ``xchunk-1``, array text, quoted array
    elements, or nothing.
    """
    special: dict[int, Any] = {
        1: "chunk-an-01<SEP>chunk-1",
        2: "{chunk-an-02,chunk-10}",
        3: '{"chunk-an-03","chunk a"}',
        4: None,
        5: "xchunk-1",
        13: f"{{{chunk_for_carrier},chunk-ops-10}}",
        19: f"x{chunk_for_carrier}",
        20: f"chunk-an-20<SEP>{chunk_for_carrier}0",
    }
    out = []
    for i in range(21):
        src, tgt = SEED_001_PAIR if i % 2 == 0 else SEED_001_PAIR[::-1]
        out.append(
            Relation(
                id=f"rel-an-{i:02d}",
                src_id=src,
                tgt_id=tgt,
                description=(
                    None if i == 4 else f"Airtable and n8n relation {i} {NASTY_STRINGS[i % 13]}"
                ),
                keywords=None if i % 7 == 6 else f"integration,kw{i}",
                weight=None if i in (4, 9) else 1.0 + i / 2,
                source_id=special.get(i, f"chunk-an-{i:02d}"),
                file_path=MULTI_PRODUCT_FILE_PATH if i % 3 == 0 else None,
                created_at=None if i % 2 else 1_700_000_100 + i,
                properties={"rel_type": "USES"} if i % 5 == 0 else {},
            )
        )
    return out


def relations() -> list[Relation]:
    """The full relation corpus: seed 001's 21 edges plus self-loops and nasty endpoints."""
    return [
        *seed001_relations(),
        Relation(
            id=relation_id("Café Déjà", "中文实体"),
            src_id="中文实体",
            tgt_id="Café Déjà",
            description="non-ASCII pair",
            keywords="é,中文",
            weight=2.0,
            source_id="chunk-é-中文-🚀",
        ),
        Relation(
            id="rel-self",
            src_id="Rocket 🚀",
            tgt_id="Rocket 🚀",
            description="self-loop",
            weight=1.0,
            source_id="chunk-10",
        ),
        Relation(
            id="rel-self-2",
            src_id="Rocket 🚀",
            tgt_id="Rocket 🚀",
            description="second self-loop",
            source_id="chunk-1<SEP>chunk-10",
        ),
        Relation(
            id="rel-quote",
            src_id="O'Brien \"Q\"",
            tgt_id='"or 1==1',
            description="quote pair 100% _x_",
            keywords="'; --",
            weight=0.5,
            source_id='{"chunk a","x\\"y"}',
            properties={"confidence": 0.5, "tags": ["a", "b"]},
        ),
        Relation(
            id="rel-bs",
            src_id="back\\slash\\name",
            tgt_id="100%_match",
            description="backslash pair",
            source_id="chunk-'q\"\\%_",
        ),
        Relation(id="rel-Ba", src_id="B", tgt_id="a", source_id="chunk-2"),
        Relation(id="rel-a-Airtable", src_id="a", tgt_id="Airtable", source_id="chunk-1"),
        Relation(id="rel-n8n-rocket", src_id="n8n", tgt_id="Rocket 🚀", source_id="chunk-b"),
        # An endpoint that is never upserted as a node: created without properties.
        Relation(id="rel-ghost", src_id="Airtable", tgt_id="ghost-node", source_id="chunk-b"),
    ]


@dataclass(frozen=True, slots=True)
class GraphOp:
    """One write of a random graph workload: ``kind`` names the GraphStore method."""

    kind: str  # "upsert_nodes" | "upsert_edges" | "delete_edges" | "delete_nodes"
    args: tuple[Any, ...]


def random_graph_ops(
    seed: int, *, n_ops: int = 40, with_deletes: bool = True, n_nodes: int = 7
) -> list[GraphOp]:
    """A seeded random workload over a few nodes: multi-edges, self-loops, replaced ids
    (same pair, either orientation) and, optionally, deletes of edges and nodes."""
    rnd = random.Random(seed)
    names = ["B", "a", "é", "中文", "n8n", "Airtable", "x'\"\\%_"][:n_nodes]
    chunk_pool = ["chunk-1", "chunk-10", "xchunk-1", "chunk-a", "chunk-b"]
    pairs: dict[str, tuple[str, str]] = {}
    ops: list[GraphOp] = []
    next_id = 0
    for _ in range(n_ops):
        roll = rnd.random()
        if roll < 0.1:
            batch = tuple(
                Entity(name=rnd.choice(names), description=f"d{rnd.randrange(100)}")
                for _ in range(rnd.randint(1, 3))
            )
            ops.append(GraphOp("upsert_nodes", (batch,)))
        elif roll < 0.75 or not pairs or not with_deletes:
            batch_list: list[Relation] = []
            for _ in range(rnd.randint(1, 4)):
                if pairs and rnd.random() < 0.3:
                    rid = rnd.choice(sorted(pairs))
                    a, b = pairs[rid]
                    if rnd.random() < 0.5:
                        a, b = b, a
                else:
                    rid = f"r{next_id:03d}"
                    next_id += 1
                    a, b = rnd.choice(names), rnd.choice(names)
                    pairs[rid] = (a, b)
                sids = rnd.sample(chunk_pool, rnd.randint(0, 2))
                source: Any = (
                    "<SEP>".join(sids) if rnd.random() < 0.5 else "{" + ",".join(sids) + "}"
                )
                batch_list.append(
                    Relation(id=rid, src_id=a, tgt_id=b, description=f"v{rnd.randrange(99)}",
                             weight=float(rnd.randint(1, 5)), source_id=source)
                )
            ops.append(GraphOp("upsert_edges", (tuple(batch_list),)))
        elif roll < 0.92:
            victims = tuple(rnd.sample(sorted(pairs), min(len(pairs), rnd.randint(1, 2))))
            for v in victims:
                pairs.pop(v, None)
            ops.append(GraphOp("delete_edges", ((*victims, "never-existed"),)))
        else:
            victim = rnd.choice(names)
            for rid, (a, b) in list(pairs.items()):
                if victim in (a, b):
                    del pairs[rid]
            ops.append(GraphOp("delete_nodes", ((victim, "no-such-node"),)))
    return ops


def seeded_vectors(seed: int, n: int, dim: int) -> np.ndarray:
    """Seeded, unnormalised float32 vectors."""
    return _unit_gaussian(np.random.default_rng(seed), n, dim)


def as_float32(vector: np.ndarray | Sequence[float]) -> np.ndarray:
    """``vector`` as a 1-D float32 array."""
    return np.asarray(vector, dtype=np.float32).reshape(-1)
