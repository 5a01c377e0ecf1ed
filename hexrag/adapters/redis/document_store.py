"""``RedisDocumentStore``: the DocumentStore port on Redis keys."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hexrag.adapters.redis._base import RedisNamespace, translate_errors, validate_name
from hexrag.adapters.redis._scan import scan_page
from hexrag.domain.documents import DocRecord, Fragment
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["RedisDocumentStore"]


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


#: ``SET key ARGV[1]`` unless the key already holds a larger number.
_RAISE = """local c = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > c then redis.call('SET', KEYS[1], ARGV[1]) end
return 0"""


def _sorted(fragments: list[Fragment]) -> list[Fragment]:
    return sorted(fragments, key=lambda f: (f.seq, f.pos, f.chunk_id))


class RedisDocumentStore(RedisNamespace):
    """Status rows as JSON under ``{workspace}:doc_status:{doc_id}`` (LightRAG's record plus
    ``seq``); each chunk's fragments as one JSON list under
    ``{workspace}:hexrag_fragments:{chunk_id}``; a set of chunk ids per entity name under
    ``{workspace}:hexrag_fragment_names:{name}``; the sequence under
    ``{workspace}:hexrag_doc_seq``. Every method is at most three round trips (``MGET`` /
    pipelines), whatever the number of ids; listing and counting ``SCAN`` their namespace.
    """

    def __init__(self, client: Redis, *, workspace: str = "hexrag",
                 owns_client: bool = False) -> None:
        super().__init__(client, workspace=workspace, namespace="doc_status",
                         owns_client=owns_client)
        ws = validate_name(workspace, what="workspace")
        self._frags = RedisNamespace(client, workspace=ws, namespace="hexrag_fragments")
        self._names = f"{ws}:hexrag_fragment_names:"
        self._seq_key = f"{ws}:hexrag_doc_seq"

    @classmethod
    def from_url(cls, url: str, *, workspace: str = "hexrag",
                 **client_options: Any) -> RedisDocumentStore:
        """A store on a new client for ``url``; :meth:`aclose` closes it."""
        return cls._with_new_client(url, client_options, workspace=workspace)

    # -- documents

    async def upsert_docs(self, docs: Sequence[DocRecord]) -> None:
        """Insert or replace status rows (one pipeline: ``MSET``, and the sequence raised
        past the largest ``seq`` written)."""
        mapping = {self.key(d.id): json.dumps(d.to_json(), ensure_ascii=False) for d in docs}
        if not mapping:
            return
        with translate_errors("upsert_docs"):
            pipe = self._client.pipeline(transaction=True)
            pipe.mset(mapping)
            self._raise_sequence(pipe, max(d.seq for d in docs))
            await pipe.execute()

    def _raise_sequence(self, pipe: Any, seq: int) -> None:
        # rows copied in (a migration, an import) carry numbers the sequence never handed
        # out: move it past the largest, so next_sequence stays larger than every stored seq
        if seq > 0:
            pipe.eval(_RAISE, 1, self._seq_key, int(seq))

    async def get_docs(self, ids: Sequence[str]) -> list[DocRecord | None]:
        """Rows in request order (one ``MGET``)."""
        ids = list(ids)
        raw = await self._mget(ids, "get_docs")
        return [None if v is None else DocRecord.from_json(i, json.loads(v))
                for i, v in zip(ids, raw, strict=True)]

    async def list_docs(self) -> list[DocRecord]:
        """Every row (``SCAN`` + ``MGET`` per batch), ordered by ``seq`` then id."""
        out: list[DocRecord] = []
        n = len(self.key(""))
        with translate_errors("list_docs"):
            async for batch in self._scan_batches():
                keys = list(dict.fromkeys(batch))
                values = await self._client.mget(keys)
                out += [DocRecord.from_json(_text(k)[n:], json.loads(v))
                        for k, v in zip(keys, values, strict=True) if v is not None]
        return sorted({d.id: d for d in out}.values(), key=lambda d: (d.seq, d.id))

    async def delete_docs(self, ids: Sequence[str]) -> None:
        """Remove rows (one ``DEL``)."""
        await self._delete(list(ids), "delete_docs")

    async def next_sequence(self) -> int:
        """``INCR`` of the sequence key."""
        with translate_errors("next_sequence"):
            return int(await self._client.incr(self._seq_key))

    # -- fragments

    async def _chunk_fragments(
        self, chunk_ids: list[str], action: str
    ) -> dict[str, list[Fragment]]:
        raw = await self._frags._mget(chunk_ids, action)
        return {c: [Fragment.from_json(f) for f in json.loads(v)]
                for c, v in zip(chunk_ids, raw, strict=True) if v is not None}

    async def add_fragments(self, fragments: Sequence[Fragment]) -> None:
        """Store fragments: one ``MGET`` of the chunks' lists, one pipeline of ``SET`` and
        ``SADD``."""
        new: dict[str, dict[int, Fragment]] = {}
        for f in fragments:
            new.setdefault(f.chunk_id, {})[f.pos] = f
        if not new:
            return
        old = await self._chunk_fragments(list(new), "add_fragments")
        with translate_errors("add_fragments"):
            pipe = self._client.pipeline(transaction=True)
            self._raise_sequence(pipe, max(f.seq for f in fragments))
            for chunk_id, by_pos in new.items():
                merged = {f.pos: f for f in old.get(chunk_id, [])}
                merged.update(by_pos)
                items = [merged[p].to_json() for p in sorted(merged)]
                pipe.set(self._frags.key(chunk_id), json.dumps(items, ensure_ascii=False))
                for name in {n for f in merged.values() for n in f.names}:
                    pipe.sadd(self._names + name, chunk_id)
            await pipe.execute()

    async def fragments_of_chunks(self, chunk_ids: Sequence[str]) -> list[Fragment]:
        """Every fragment of these chunks (one ``MGET``), sorted by ``(seq, pos)``."""
        found = await self._chunk_fragments(list(dict.fromkeys(chunk_ids)),
                                            "fragments_of_chunks")
        return _sorted([f for frags in found.values() for f in frags])

    async def fragments_about(self, names: Sequence[str]) -> list[Fragment]:
        """Every fragment about these names: one pipeline of ``SMEMBERS``, one ``MGET``."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return []
        with translate_errors("fragments_about"):
            pipe = self._client.pipeline(transaction=False)
            for name in wanted:
                pipe.smembers(self._names + name)
            members = await pipe.execute()
        chunk_ids = sorted({_text(c) for m in members for c in m})
        found = await self._chunk_fragments(chunk_ids, "fragments_about")
        keep = set(wanted)
        return _sorted([f for frags in found.values() for f in frags
                        if keep.intersection(f.names)])

    async def delete_fragments_of_chunks(self, chunk_ids: Sequence[str]) -> None:
        """Remove the chunks' fragments: one ``MGET``, one pipeline of ``SREM`` and ``DEL``."""
        wanted = list(dict.fromkeys(chunk_ids))
        found = await self._chunk_fragments(wanted, "delete_fragments_of_chunks")
        if not found:
            return
        with translate_errors("delete_fragments_of_chunks"):
            pipe = self._client.pipeline(transaction=True)
            for chunk_id, frags in found.items():
                for name in {n for f in frags for n in f.names}:
                    pipe.srem(self._names + name, chunk_id)
            pipe.delete(*self._frags.keys(list(found)))
            await pipe.execute()

    async def count_fragments(self) -> int:
        """Number of stored fragments (``SCAN`` + ``MGET`` of the fragment lists)."""
        total = 0
        with translate_errors("count_fragments"):
            seen: set[Any] = set()
            async for batch in self._frags._scan_batches():
                keys = [k for k in dict.fromkeys(batch) if k not in seen]
                seen.update(keys)
                for v in await self._client.mget(keys):
                    if v is not None:
                        total += len(json.loads(v))
        return total

    async def scan_fragments(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Fragment]:
        """A page of fragments: the lists of at most ``limit`` chunks (one ``SCAN`` of the
        fragment keys, one ``MGET``; see :mod:`hexrag.adapters.redis._scan`)."""
        found, nxt = await scan_page(self._frags, cursor, limit, "scan_fragments")
        items = [Fragment.from_json(f) for _chunk, v in found for f in json.loads(v)]
        return Page(items, nxt)

    async def clear(self) -> None:
        """Remove every row, fragment, name set and the sequence of this workspace."""
        await self._clear("clear")
        await self._frags._clear("clear")
        await self._clear("clear", self._names + "*")
        with translate_errors("clear"):
            await self._client.delete(self._seq_key)
