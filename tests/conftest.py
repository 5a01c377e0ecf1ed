"""Test-suite plumbing: detailed assertion messages inside the contract suite (hexrag.testing).

gRPC's fork handlers are switched off for the whole test process. The Milvus tests leave
gRPC threads running (pymilvus talks to Milvus Lite over gRPC), and the PostgreSQL fixtures
then start ``pg_ctl`` as the ``pgserver`` user, which CPython can only do with a real
``fork()`` (no ``vfork`` when the uid changes). gRPC's ``pthread_atfork`` child handler can
crash that child before it reaches ``exec`` (measured: 3 of 1,500 such forks died with
SIGABRT while gRPC threads were busy, 0 of 4,500 with the handlers off; CI once lost a
fixture to a SIGSEGV this way). Nothing in the tests forks a child that uses gRPC, so the
handlers have nothing to protect here. It must be set before gRPC is first imported.
"""

import os

import pytest

os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")

pytest.register_assert_rewrite("hexrag.testing")
