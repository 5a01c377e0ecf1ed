"""The Prometheus metrics of one app (``GET /metrics``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram

__all__ = ["Metrics"]


class Metrics:
    """Prometheus metrics of one app (own registry, so several apps can live in one process)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.queries = Counter(
            "hexrag_queries_total",
            "Queries served",
            ["endpoint", "mode", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "hexrag_query_latency_seconds",
            "Query latency",
            ["endpoint", "mode"],
            registry=self.registry,
        )
        self.chunk_retrieval = Counter(
            "hexrag_chunk_retrieval_total",
            "Successful queries by whether they returned chunks (success rate = with_chunks/all)",
            ["outcome"],
            registry=self.registry,
        )
        self.missing_chunks = Counter(
            "hexrag_missing_chunks_total",
            "Chunk ids named by the graph or an index but absent from the chunk store",
            registry=self.registry,
        )
        self.cache_hits = Counter(
            "hexrag_answer_cache_hits_total",
            "Answers served from the cache",
            registry=self.registry,
        )
        self.errors = Counter(
            "hexrag_errors_total", "Failed requests by kind", ["kind"], registry=self.registry
        )

    def observe(
        self,
        endpoint: str,
        mode: str,
        raw: Mapping[str, Any] | None,
        seconds: float,
        *,
        cache_hit: bool = False,
    ) -> None:
        """Record one answered query."""
        status = (raw or {}).get("status", "success")
        self.queries.labels(endpoint, mode, status).inc()
        self.latency.labels(endpoint, mode).observe(seconds)
        if cache_hit:
            self.cache_hits.inc()
        info = ((raw or {}).get("metadata") or {}).get("processing_info") or {}
        if info.get("missing_chunk_count"):
            self.missing_chunks.inc(info["missing_chunk_count"])
        if status == "success":
            chunks = ((raw or {}).get("data") or {}).get("chunks") or []
            self.chunk_retrieval.labels("with_chunks" if chunks else "without_chunks").inc()
