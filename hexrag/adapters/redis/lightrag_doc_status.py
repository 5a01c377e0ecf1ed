"""Document status rows in LightRAG 1.5.7's ``RedisDocStatusStorage`` keys, in place.

:class:`LightRAGRedisDocumentStore` is the :class:`~hexrag.ports.DocumentStore` of a stack
with ``layout = lightrag`` on Redis. A document's status row is LightRAG's own key,
``[<workspace>_]doc_status:<doc id>`` holding ``json.dumps`` of the row, so LightRAG and
hexrag see the same documents: ``hexrag documents`` lists what LightRAG ingested there,
``hexrag delete`` deletes it, and LightRAG sees what hexrag ingested or copied.

LightRAG keeps a derived *scheduling sidecar* beside the rows, in every write's transaction
(``RedisDocStatusStorage._queue_index_ops``); hexrag keeps it true the same way, in one
``WATCH`` / ``MULTI`` transaction with the rows:

* ``<ns>__sched:status:<status>``: a sorted set per status, score 0, member
  ``"<created_at>|<doc id>"`` (``""`` for a missing or non-string ``created_at``);
* ``<ns>__sched:basename:<file_path>``: the set of ids of the rows that claim that file path
  (not ``metadata.is_duplicate``, a file path other than ``unknown_source`` /
  ``no-file-path``).

(``<ns>`` is ``<workspace>_doc_status``, or ``doc_status`` without a workspace.) LightRAG's
``upsert`` adds ``chunks_list: []`` to a row without one; so does hexrag. A row holds any
JSON, so the rest is stored as written, except hexrag's ``seq``: what LightRAG's row does not
give back (``seq``, a ``chunks_list`` only added for LightRAG) is kept beside it, in hexrag's
hash ``<prefix>:hexrag_doc_side`` (field: the doc id; value: ``{"seq", "own", "added",
"updated_at"}``), applied only while the row still has that ``updated_at`` (every LightRAG
write sets it): a row LightRAG wrote or rewrote reads exactly as LightRAG reads it.
Fragments and the insertion sequence are :class:`RedisDocumentStore`'s, under ``<prefix>``
(one prefix per LightRAG workspace). Rows an earlier hexrag kept there
(``<prefix>:doc_status:<id>``, before it wrote LightRAG's keys) are still read where
LightRAG's keys hold no row of that id, and move to LightRAG's key on their next write.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hexrag.adapters.redis._base import translate_errors
from hexrag.adapters.redis.document_store import RedisDocumentStore
from hexrag.adapters.redis.lightrag_layout import lightrag_key_prefix
from hexrag.domain.documents import DocRecord
from hexrag.domain.errors import BackendError

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["LightRAGRedisDocumentStore"]

_NAMESPACE = "doc_status"
_PLACEHOLDER_PATHS = ("unknown_source", "no-file-path")
_RETRIES = 50


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _member(row: dict[str, Any], doc_id: str) -> str:
    """``RedisDocStatusStorage._zset_member``."""
    created = row.get("created_at")
    return f"{created if isinstance(created, str) else ''}|{doc_id}"


def _basename(row: Any) -> str | None:
    """``RedisDocStatusStorage._basename_of``: the file path a row claims, or ``None``."""
    if not isinstance(row, dict):
        return None
    metadata = row.get("metadata")
    if isinstance(metadata, dict) and metadata.get("is_duplicate"):
        return None
    path = row.get("file_path")
    if not isinstance(path, str) or not path or path in _PLACEHOLDER_PATHS:
        return None
    return path


def _status(row: dict[str, Any]) -> str:
    value = row.get("status")
    return str(value) if value is not None else ""


class LightRAGRedisDocumentStore(RedisDocumentStore):
    """Status rows in LightRAG's ``[<ws>_]doc_status:`` keys with its scheduling sidecar,
    fragments and the sequence in hexrag's keys under ``prefix`` (module docstring)."""

    def __init__(self, client: Redis, *, prefix: str, lightrag_workspace: str = "",
                 owns_client: bool = False) -> None:
        super().__init__(client, workspace=prefix, owns_client=owns_client)
        self._rows = lightrag_key_prefix(_NAMESPACE, lightrag_workspace)
        self._sched = self._rows[:-1] + "__sched"
        self._side = f"{prefix}:hexrag_doc_side"
        self._lightrag_workspace = lightrag_workspace

    @classmethod
    def from_url(  # type: ignore[override]
        cls, url: str, *, prefix: str, lightrag_workspace: str = "", **client_options: Any
    ) -> LightRAGRedisDocumentStore:
        """A store on a new client for ``url``; :meth:`aclose` closes it."""
        return cls._with_new_client(
            url, client_options, prefix=prefix, lightrag_workspace=lightrag_workspace
        )

    @property
    def lightrag_workspace(self) -> str:
        """LightRAG's workspace (``""``: none)."""
        return self._lightrag_workspace

    def _row_key(self, doc_id: str) -> str:
        return self._rows + doc_id

    def _index_ops(self, pipe: Any, doc_id: str, old: dict[str, Any] | None,
                   new: dict[str, Any] | None) -> None:
        """``RedisDocStatusStorage._queue_index_ops``."""
        if old is not None and _status(old):
            pipe.zrem(f"{self._sched}:status:{_status(old)}", _member(old, doc_id))
        if new is not None and _status(new):
            pipe.zadd(f"{self._sched}:status:{_status(new)}", {_member(new, doc_id): 0})
        before, after = _basename(old), _basename(new)
        if before == after:
            if after is not None:
                pipe.sadd(f"{self._sched}:basename:{after}", doc_id)
            return
        if before is not None:
            pipe.srem(f"{self._sched}:basename:{before}", doc_id)
        if after is not None:
            pipe.sadd(f"{self._sched}:basename:{after}", doc_id)

    async def _transaction(self, ids: list[str], action: str, queue: Any) -> None:
        """``WATCH`` the rows of ``ids``, read them, let ``queue(pipe, old_rows)`` queue the
        writes, commit in one ``MULTI``; retried on a concurrent change."""
        from redis.exceptions import WatchError

        keys = [self._row_key(i) for i in ids]
        with translate_errors(action):
            for _ in range(_RETRIES):
                async with self._client.pipeline(transaction=True) as pipe:
                    try:
                        await pipe.watch(*keys)
                        raw = await pipe.mget(keys)
                        old = [json.loads(v) if v else None for v in raw]
                        pipe.multi()
                        queue(pipe, old)
                        await pipe.execute()
                        return
                    except WatchError:
                        continue
            raise BackendError(f"redis: {action}: the rows kept changing "
                               f"({_RETRIES} attempts)", backend="redis")

    async def upsert_docs(self, docs: Sequence[DocRecord]) -> None:
        """Write LightRAG's rows and their sidecar entries, and beside them what LightRAG's
        row would not give back; one transaction."""
        latest = {d.id: d for d in docs}
        if not latest:
            return
        rows: dict[str, dict[str, Any]] = {}
        sides: dict[str, str] = {}
        for doc_id, d in latest.items():
            written = d.to_json()
            row = {k: v for k, v in written.items() if k != "seq"}
            added = []
            if "chunks_list" not in row:  # RedisDocStatusStorage.upsert adds it
                row["chunks_list"] = []
                added.append("chunks_list")
            rows[doc_id] = row
            own = {"seq": written["seq"]} if "seq" in written else {}
            sides[doc_id] = json.dumps({"seq": d.seq, "own": own, "added": added,
                                        "updated_at": row.get("updated_at")})
        ids = list(rows)

        def queue(pipe: Any, old: list[dict[str, Any] | None]) -> None:
            for doc_id, before in zip(ids, old, strict=True):
                pipe.set(self._row_key(doc_id), json.dumps(rows[doc_id]))
                self._index_ops(pipe, doc_id, before, rows[doc_id])
            pipe.hset(self._side, mapping=sides)
            pipe.delete(*self.keys(ids))  # an earlier hexrag's key of the row, moved here
            self._raise_sequence(pipe, max(d.seq for d in latest.values()))

        await self._transaction(ids, "upsert_docs", queue)

    def _record(self, doc_id: str, raw: Any, side_raw: Any) -> DocRecord:
        row = json.loads(raw)
        side = json.loads(side_raw) if side_raw else None
        if isinstance(side, dict) and side.get("updated_at") == row.get("updated_at"):
            for name in side.get("added") or []:
                if row.get(name) == []:
                    row.pop(name, None)
            row.update(side.get("own") or {})
        elif isinstance(side, dict) and side.get("seq"):
            row["seq"] = int(side["seq"])
        return DocRecord.from_json(doc_id, row)

    async def _read(self, ids: list[str], action: str) -> dict[str, DocRecord]:
        if not ids:
            return {}
        with translate_errors(action):
            pipe = self._client.pipeline(transaction=False)
            pipe.mget([self._row_key(i) for i in ids])
            pipe.hmget(self._side, ids)
            raw, side = await pipe.execute()
        return {i: self._record(i, r, s) for i, r, s in zip(ids, raw, side, strict=True)
                if r is not None}

    async def _legacy(self, ids: list[str]) -> dict[str, DocRecord]:
        """Rows an earlier hexrag kept in its own keys (``<prefix>:doc_status:<id>``) for the
        ids LightRAG's keys do not hold: still read, moved to LightRAG's key on the next
        write of the row, removed with it."""
        if not ids:
            return {}
        return {d.id: d for d in await super().get_docs(ids) if d is not None}

    async def get_docs(self, ids: Sequence[str]) -> list[DocRecord | None]:
        """Rows in request order, ``None`` for a missing id (one round trip, two for an id
        only an earlier hexrag's key holds)."""
        wanted = list(dict.fromkeys(ids))
        found = await self._read(wanted, "get_docs")
        found.update(await self._legacy([i for i in wanted if i not in found]))
        return [found.get(i) for i in ids]

    async def _row_ids(self) -> list[str]:
        """Every doc id of LightRAG's rows (``SCAN`` of ``[<ws>_]doc_status:*``)."""
        n = len(self._rows)
        ids: set[str] = set()
        with translate_errors("list_docs"):
            async for batch in self._scan_batches(self._rows + "*"):
                ids.update(_text(k)[n:] for k in batch)
        return sorted(ids)

    async def list_docs(self) -> list[DocRecord]:
        """Every row of the workspace, ordered by hexrag's ``seq`` (0 for LightRAG's rows),
        then id."""
        ids = await self._row_ids()
        out: list[DocRecord] = []
        for start in range(0, len(ids), 1000):
            out += (await self._read(ids[start:start + 1000], "list_docs")).values()
        have = set(ids)
        out += [d for d in await super().list_docs() if d.id not in have]  # an earlier hexrag's
        return sorted(out, key=lambda d: (d.seq, d.id))

    async def delete_docs(self, ids: Sequence[str]) -> None:
        """Remove rows with their sidecar entries (``RedisDocStatusStorage.delete``) and the
        records beside them; one transaction."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return

        def queue(pipe: Any, old: list[dict[str, Any] | None]) -> None:
            for doc_id, before in zip(wanted, old, strict=True):
                if before is None:
                    continue
                pipe.delete(self._row_key(doc_id))
                self._index_ops(pipe, doc_id, before, None)
            pipe.hdel(self._side, *wanted)
            pipe.delete(*self.keys(wanted))  # an earlier hexrag's key of the row

        await self._transaction(wanted, "delete_docs", queue)

    async def clear(self) -> None:
        """Remove every row of the workspace, its sidecar (``RedisDocStatusStorage.drop``),
        and hexrag's records, fragments and sequence beside it."""
        await self._clear("clear", self._rows + "*", f"{self._sched}:status:*",
                          f"{self._sched}:basename:*", f"{self._sched}_rebuild:status:*",
                          f"{self._sched}_rebuild:basename:*")
        with translate_errors("clear"):
            await self._client.delete(self._side)
        await super().clear()
