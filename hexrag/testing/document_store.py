"""Contract tests for :class:`hexrag.ports.DocumentStore` (status rows and fragments)."""

from __future__ import annotations

import pytest

from hexrag.core.documents import DocRecord, Fragment
from hexrag.ports import DocumentStore
from hexrag.testing._guard import ContractGuard
from hexrag.testing.scan import collect

_ODD = "Ünïcode 中文 🚀 'q\"\\%_*?[x]"


def _frag(
    kind: str, src: str, tgt: str, chunk: str, seq: int, pos: int, **data: object
) -> Fragment:
    return Fragment(
        kind=kind, src=src, tgt=tgt, chunk_id=chunk, doc_id=f"doc-{seq}", seq=seq, pos=pos,  # type: ignore[arg-type]
        data={"description": f"{src}/{tgt}@{chunk}#{pos}", "source_id": chunk,
              "timestamp": 1_700_000_000 + pos, "weight": 1.5, "nothing": None, **data},
        metadata={"product_id": f"p{seq}", "category_id": "crm", "tags": ["a", "b"]},
    )


def _corpus() -> list[Fragment]:
    return [
        _frag("entity", "Alice", "", "c1", 1, 0, entity_type="person"),
        _frag("entity", "Bob", "", "c1", 1, 1, entity_type="person"),
        _frag("relation", "Alice", "Bob", "c1", 1, 2, keywords="knows"),
        _frag("entity", "Alice", "", "c2", 1, 3),
        _frag("relation", "Bob", _ODD, "c2", 1, 4),
        _frag("entity", _ODD, "", "c3", 2, 0),
        _frag("entity", "Carol", "", "c3", 2, 1),
        _frag("relation", "Alice", "Carol", "c3", 2, 2),
    ]


def _key(f: Fragment) -> tuple[int, int, str]:
    return (f.seq, f.pos, f.chunk_id)


class DocumentStoreContract(ContractGuard):
    """Subclass in a ``Test*`` class and override the ``document_store`` fixture (a fresh,
    empty store in its own namespace, cleaned up afterwards)."""

    @pytest.fixture
    def document_store(self) -> DocumentStore:
        """Override: yield a fresh, empty DocumentStore."""
        raise NotImplementedError("override the document_store fixture")

    async def test_empty_store(self, document_store: DocumentStore) -> None:
        """An empty store has no rows and no fragments."""
        assert isinstance(document_store, DocumentStore)
        assert await document_store.list_docs() == []
        assert await document_store.get_docs(["doc-1"]) == [None]
        assert await document_store.count_fragments() == 0
        assert await document_store.fragments_of_chunks(["c1"]) == []
        assert await document_store.fragments_about(["Alice"]) == []
        assert await document_store.fragments_of_chunks([]) == []
        assert await document_store.fragments_about([]) == []

    async def test_status_rows_round_trip(self, document_store: DocumentStore) -> None:
        """Every field of a row round-trips; rows are replaced by id, listed by seq then id,
        read in request order with None for a missing id, deleted by id."""
        a = DocRecord(id="doc-a", status="processing", file_path="product_id:p1:source:a.md",
                      content_summary=_ODD, content_length=12, chunks_list=["c1", "c2"],
                      created_at="2026-01-01T00:00:00+00:00", updated_at="x", error_msg=None,
                      metadata={"product_id": "p1", "n": 3, "nested": {"k": [1, None]}}, seq=2)
        b = DocRecord(id=_ODD, status="failed", error_msg="RuntimeError: boom", seq=1)
        await document_store.upsert_docs([a, b])
        assert await document_store.get_docs(["doc-a", "nope", _ODD, "doc-a"]) == [a, None, b, a]
        assert [d.id for d in await document_store.list_docs()] == [_ODD, "doc-a"]
        a.status = "processed"
        await document_store.upsert_docs([a])
        (got,) = await document_store.get_docs(["doc-a"])
        assert got is not None and got.status == "processed" and got.chunks_count == 2
        await document_store.delete_docs(["doc-a", "unknown"])
        assert [d.id for d in await document_store.list_docs()] == [_ODD]

    async def test_sequence_increases(self, document_store: DocumentStore) -> None:
        """Every sequence number is larger than the ones before."""
        seen = [await document_store.next_sequence() for _ in range(5)]
        assert seen == sorted(seen) and len(set(seen)) == 5

    async def test_fragments_by_chunk_and_by_name(self, document_store: DocumentStore) -> None:
        """Fragments round-trip with their data and metadata, sorted by (seq, pos); found by
        chunk, and by entity name (entity fragments of the name and relation fragments with
        the name at either end)."""
        frags = _corpus()
        await document_store.add_fragments(frags)
        assert await document_store.count_fragments() == len(frags)
        by_chunk = await document_store.fragments_of_chunks(["c2", "c1", "zz", "c1"])
        assert by_chunk == sorted([f for f in frags if f.chunk_id in ("c1", "c2")], key=_key)
        about = await document_store.fragments_about(["Bob"])
        assert about == sorted([f for f in frags if "Bob" in f.names], key=_key)
        about = await document_store.fragments_about([_ODD, "Carol", "nobody"])
        assert about == sorted([f for f in frags if {_ODD, "Carol"} & set(f.names)], key=_key)
        assert about[0].data["nothing"] is None
        assert about[0].metadata["tags"] == ["a", "b"]

    async def test_replace_and_delete_by_chunk(self, document_store: DocumentStore) -> None:
        """A fragment with the same (chunk_id, pos) replaces the old one (and its name
        index); deleting a chunk's fragments removes them from every lookup."""
        frags = _corpus()
        await document_store.add_fragments(frags)
        moved = _frag("entity", "Dave", "", "c1", 1, 1)
        await document_store.add_fragments([moved])
        assert await document_store.count_fragments() == len(frags)
        assert await document_store.fragments_about(["Dave"]) == [moved]
        bob = await document_store.fragments_about(["Bob"])
        assert [f.pos for f in bob] == [2, 4]
        await document_store.delete_fragments_of_chunks(["c1", "missing"])
        assert await document_store.fragments_of_chunks(["c1"]) == []
        assert await document_store.fragments_about(["Dave"]) == []
        assert [f.chunk_id for f in await document_store.fragments_about(["Alice"])] == ["c2", "c3"]
        assert await document_store.count_fragments() == len(frags) - 3
        await document_store.delete_fragments_of_chunks(["c2", "c3"])
        assert await document_store.count_fragments() == 0
        assert await document_store.fragments_about(["Alice", "Bob", _ODD, "Carol"]) == []

    async def test_scan_fragments_lists_every_fragment_once(
        self, document_store: DocumentStore
    ) -> None:
        """Following ``scan_fragments`` from ``None`` to ``None`` yields every stored fragment
        exactly once, whatever the page size; a chunk's fragments stay on one page; a page
        holds the fragments of at most ``limit`` chunks; a bad limit is refused."""
        from hexrag.core.errors import InvalidQuery
        from hexrag.ports.scan import scan_all

        # empty pages with a cursor are allowed (a Redis SCAN over a shared server)
        assert (await collect(document_store.scan_fragments, limit=10))[0] == []
        frags = _corpus() + [_frag("entity", f"E{i}", "", f"k{i:02d}", 3, i) for i in range(12)]
        await document_store.add_fragments(frags)
        for limit in (1, 2, 5, 1000):
            got: list[Fragment] = []
            async for page in scan_all(document_store.scan_fragments, limit=limit):
                chunks = [f.chunk_id for f in page.items]
                assert len(set(chunks)) <= limit
                got += page.items
            assert sorted(got, key=_key) == sorted(frags, key=_key), limit
            for chunk in {f.chunk_id for f in frags}:  # never split across pages
                firsts = [i for i, f in enumerate(got) if f.chunk_id == chunk]
                assert firsts == list(range(firsts[0], firsts[0] + len(firsts)))
        await document_store.delete_fragments_of_chunks(["c1"])
        rest: list[Fragment] = []
        async for page in scan_all(document_store.scan_fragments, limit=3):
            rest += page.items
        assert sorted(rest, key=_key) == sorted(
            [f for f in frags if f.chunk_id != "c1"], key=_key)
        for bad in (0, -1, 10**9):
            with pytest.raises(InvalidQuery):
                await document_store.scan_fragments(None, limit=bad)

    async def test_next_sequence_passes_every_stored_seq(
        self, document_store: DocumentStore
    ) -> None:
        """Rows and fragments copied in with their own sequence numbers (a migration, an
        import) move the sequence past them: a later insertion sorts after every one."""
        await document_store.upsert_docs([DocRecord(id="copied", status="processed", seq=41)])
        assert await document_store.next_sequence() > 41
        await document_store.add_fragments([_frag("entity", "Zed", "", "cz", 97, 0)])
        assert await document_store.next_sequence() > 97
        await document_store.upsert_docs([DocRecord(id="old", status="processed", seq=3)])
        first = await document_store.next_sequence()
        assert first > 98 and await document_store.next_sequence() > first  # never back
