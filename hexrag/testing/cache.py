"""Contract tests for :class:`hexrag.ports.Cache`.

A cache that declares :class:`~hexrag.ports.cache.CacheTraits` (``traits``) is held to what it
declares: every entry read back must carry each declared stamped key, and the rest of it must
equal what was written (:meth:`~hexrag.ports.cache.CacheTraits.view`).
"""

from __future__ import annotations

from typing import Any

import pytest

from hexrag.core.reference.oracle import json_roundtrip
from hexrag.ports import Cache, ScansCache
from hexrag.ports.cache import cache_traits_of
from hexrag.testing._guard import ContractGuard
from hexrag.testing.scan import check_resume_after_writes, check_scan_basics, collect

_ENTRIES: dict[str, dict[str, Any]] = {
    "hybrid:keywords:abc": {
        "return": '{"high_level_keywords": ["x"], "low_level_keywords": []}',
        "cache_type": "keywords",
        "original_prompt": "What is 中文? 🚀",
        "mode": "hybrid",
    },
    "mix:query:def": {
        "return": "answer with \"quotes\" and \\ backslash, 100% _x_",
        "nested": {"list": [1, 2.5, None, True, "é"], "empty": {}},
        "none": None,
        "int": 3,
    },
    "key with spaces/é:'\"%_*?[]": {"return": ""},
}


class CacheContract(ContractGuard):
    """Subclass in a ``Test*`` class and override the ``cache`` fixture.

    The fixture yields a **fresh, empty** cache. With ``isolates_namespaces`` on (default),
    also override ``other_namespace_cache``: a cache on the *same* backend with another
    namespace, to check that ``clear`` removes nothing else.
    """

    isolates_namespaces: bool = True
    """``other_namespace_cache`` is provided; clear() of one namespace spares the other."""

    @pytest.fixture
    def cache(self) -> Cache:
        """Override: yield a fresh, empty Cache."""
        raise NotImplementedError("override the cache fixture")

    @pytest.fixture
    def other_namespace_cache(self) -> Cache:
        """Override (when isolates_namespaces): a second namespace on the same backend."""
        raise NotImplementedError(
            "override other_namespace_cache, or set isolates_namespaces = False"
        )

    @staticmethod
    async def _get(cache: Cache, keys: list[str]) -> list[dict[str, Any] | None]:
        """``get_many`` as the cache declares its entries (stamped keys checked present)."""
        return _seen(cache, await cache.get_many(keys))

    async def test_missing_keys(self, cache: Cache) -> None:
        """Entries in request order, None for a missing key."""
        assert isinstance(cache, Cache)
        assert await cache.get_many(["nope", "nope"]) == [None, None]
        assert await cache.get_many([]) == []

    async def test_round_trip_in_request_order(self, cache: Cache) -> None:
        """Values are JSON objects; they come back equal (JSON semantics), in request order."""
        await cache.set_many(_ENTRIES)
        keys = [*reversed(list(_ENTRIES)), "missing", "mix:query:def"]
        got = await self._get(cache, keys)
        assert got == [json_roundtrip(_ENTRIES[k]) if k in _ENTRIES else None for k in keys]

    async def test_set_many_replaces(self, cache: Cache) -> None:
        """Store entries (replacing existing keys)."""
        await cache.set_many(_ENTRIES)
        await cache.set_many({"mix:query:def": {"return": "new"}})
        assert await self._get(cache, ["mix:query:def"]) == [{"return": "new"}]
        assert (await self._get(cache, ["hybrid:keywords:abc"]))[0] == _ENTRIES[
            "hybrid:keywords:abc"
        ]

    async def test_json_semantics(self, cache: Cache) -> None:
        """Tuples come back as lists (JSON)."""
        await cache.set_many({"t": {"tuple": (1, "a"), "f": 1.5}})
        assert await self._get(cache, ["t"]) == [{"tuple": [1, "a"], "f": 1.5}]

    async def test_delete_many(self, cache: Cache) -> None:
        """Remove keys; unknown keys are ignored."""
        await cache.set_many(_ENTRIES)
        first = next(iter(_ENTRIES))
        await cache.delete_many([first, "unknown", first])
        got = await cache.get_many(list(_ENTRIES))
        assert got[0] is None and all(g is not None for g in got[1:])
        await cache.delete_many([])

    async def test_clear(self, cache: Cache) -> None:
        """Remove every entry of this cache's namespace."""
        await cache.set_many(_ENTRIES)
        await cache.clear()
        assert await cache.get_many(list(_ENTRIES)) == [None] * len(_ENTRIES)
        await cache.set_many({"after": {"v": 1}})
        assert await self._get(cache, ["after"]) == [{"v": 1}]

    async def test_clear_spares_other_namespaces(
        self, cache: Cache, request: pytest.FixtureRequest
    ) -> None:
        """clear() removes nothing else; namespaces do not see each other's keys."""
        if not self.isolates_namespaces:
            pytest.skip("isolates_namespaces is off")
        other: Cache = request.getfixturevalue("other_namespace_cache")
        await cache.set_many({"k": {"v": "mine"}})
        await other.set_many({"k": {"v": "theirs"}, "only-other": {"v": 2}})
        assert await self._get(cache, ["k", "only-other"]) == [{"v": "mine"}, None]
        await cache.clear()
        assert await self._get(other, ["k", "only-other"]) == [{"v": "theirs"}, {"v": 2}]

    # ---- scan (hexrag.ports.scan) --------------------------------------------------------

    async def test_scan_lists_every_entry(self, cache: Cache) -> None:
        """``scan_entries`` pages list every ``(key, value)`` once, values as ``get_many``
        returns them; an empty cache's scan ends with no entry; a bad limit is InvalidQuery."""
        assert isinstance(cache, ScansCache), "Cache must offer scan_entries"
        # empty pages with a cursor are allowed (a Redis SCAN over a shared server); the
        # scan of an empty cache must end with no item
        assert (await collect(cache.scan_entries, limit=5))[0] == []
        entries = {**_ENTRIES, **{f"scan:{i:03d}": {"return": str(i)} for i in range(12)}}
        await cache.set_many(entries)
        await check_scan_basics(cache.scan_entries, lambda kv: kv[0], set(entries))
        items, _ = await collect(cache.scan_entries, limit=4)
        for (key, _), value in zip(items, _seen(cache, [v for _, v in items]), strict=True):
            assert value == json_roundtrip(entries[key]), key

    async def test_scan_resumes_after_writes(self, cache: Cache) -> None:
        """A scan resumed after writes lists every entry present for the whole scan once."""
        assert isinstance(cache, ScansCache)
        entries = {f"scan:{i:03d}": {"return": str(i)} for i in range(12)}
        await cache.set_many(entries)

        async def write(seen: set[Any]) -> tuple[set[Any], set[Any]]:
            gone = {next(iter(seen)), *sorted(k for k in entries if k not in seen)[:2]}
            await cache.delete_many(sorted(gone))
            await cache.set_many({"scan:new": {"return": "new"}})
            return {"scan:new"}, gone

        await check_resume_after_writes(cache.scan_entries, lambda kv: kv[0], set(entries), write)


def _seen(cache: Cache, entries: list[dict[str, Any] | None]) -> list[dict[str, Any] | None]:
    """Entries without the cache's declared stamped keys, each checked present first."""
    traits = cache_traits_of(cache)
    for entry in entries:
        if entry is not None:
            missing = traits.stamped_keys - set(entry)
            assert not missing, f"declared stamped keys {sorted(missing)} not read back"
    return [traits.view(e) for e in entries]
