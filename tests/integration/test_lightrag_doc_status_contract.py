"""``LightRAGPgDocumentStore`` (status rows in LightRAG's ``LIGHTRAG_DOC_STATUS``, fragments
beside them) against the whole DocumentStore contract, on a throwaway pgserver."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from hexrag.adapters.postgres.lightrag_doc_status import LightRAGPgDocumentStore
from hexrag.testing import DocumentStoreContract
from tests.services.postgres import pg_dsn, pg_pool, pg_schema  # noqa: F401

pytestmark = pytest.mark.backend("postgres")

#: LightRAG 1.5.7's DDL of the table (``postgres_impl.TABLES``), as LightRAG creates it.
_DDL = """CREATE TABLE IF NOT EXISTS LIGHTRAG_DOC_STATUS (
    workspace varchar(255) NOT NULL, id varchar(255) NOT NULL,
    content_summary varchar(255) NULL, content_length int4 NULL, chunks_count int4 NULL,
    status varchar(64) NULL, file_path TEXT NULL, chunks_list JSONB NULL DEFAULT '[]'::jsonb,
    track_id varchar(255) NULL, metadata JSONB NULL DEFAULT '{}'::jsonb, error_msg TEXT NULL,
    content_hash TEXT NULL, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT LIGHTRAG_DOC_STATUS_PK PRIMARY KEY (workspace, id))"""


class TestLightRAGPgDocumentStoreContract(DocumentStoreContract):
    """Every document-store sentence; one LightRAG workspace per test."""

    @pytest.fixture
    async def document_store(
        self, pg_pool: Any, pg_schema: str  # noqa: F811
    ) -> LightRAGPgDocumentStore:
        await pg_pool.execute(_DDL)
        return LightRAGPgDocumentStore(pg_pool, workspace="ws" + uuid.uuid4().hex[:8],
                                       schema=pg_schema)
