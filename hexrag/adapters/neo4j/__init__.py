"""Neo4j adapter (official async driver): :class:`Neo4jGraphStore`.

Needs the ``neo4j`` extra (``pip install hexrag[neo4j]``). Every Cypher statement lives in
:mod:`hexrag.adapters.neo4j.cypher`; record conversion in :mod:`hexrag.adapters.neo4j.convert`.
"""

from __future__ import annotations

from hexrag.adapters.neo4j.store import Neo4jGraphStore

__all__ = ["Neo4jGraphStore"]
