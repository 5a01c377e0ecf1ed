"""Read-only commands create nothing on PostgreSQL (issue 21: ``check``, ``documents`` and
``export`` open the optional sections read-only, an absent one reading as empty).

A stack in hexrag's own PostgreSQL layout is migrated from a working directory, then its
optional tables are dropped (documents: ``<ns>_doc_status``, ``<ns>_fragments``,
``<ns>_doc_seq``; the LLM cache and key-value namespaces: ``<ns>_cache``).
``hexrag check``, ``hexrag documents`` and ``hexrag export`` must each still work (no
documents, the core sections intact) and leave the list of relations of the database
unchanged. The same for a LightRAG-layout stack whose hexrag tables beside LightRAG's
(``hexrag_<md5>_doc_status`` ...) were never created: LightRAG's own status rows are listed.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest

from tests.integration.test_cli_serve_answer import workdir  # noqa: F401
from tests.integration.test_cli_transfer import _cli

pytestmark = pytest.mark.backend("postgres")


async def _sql(dsn: str, statement: str) -> list[str]:
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        if not statement.lstrip().upper().startswith("SELECT"):
            await conn.execute(statement)  # simple protocol: several statements allowed
            return []
        return [str(r[0]) for r in await conn.fetch(statement)]
    finally:
        await conn.close()


def _relations(dsn: str) -> list[str]:
    return asyncio.run(_sql(dsn, "SELECT n.nspname || '.' || c.relname FROM pg_class c "
                                 "JOIN pg_namespace n ON n.oid = c.relnamespace "
                                 "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') "
                                 "AND n.nspname NOT LIKE 'pg_toast%' ORDER BY 1"))


def _read_only_commands(stack: Path, out: Path) -> dict[str, str]:
    """Run the three read-only commands; each must succeed. Returns their stdout."""
    got: dict[str, str] = {}
    for name, args in (("check", ("check", str(stack), "--json")),
                       ("documents", ("documents", "--stack", str(stack), "--json")),
                       ("export", ("export", str(stack), str(out)))):
        r = _cli(*args)
        assert r.returncode == 0, (name, r.stdout[-3000:] + r.stderr[-3000:])
        got[name] = r.stdout
    return got


def test_read_only_commands_create_no_table_in_hexrags_layout(
    workdir: Path, tmp_path: Path  # noqa: F811
) -> None:
    from tests.services.postgres import postgres_dsn

    dsn = postgres_dsn()
    ns = "ro" + uuid.uuid4().hex[:8]
    stack = tmp_path / "pg.toml"
    stack.write_text(
        f'vector_index = "{dsn}"\ngraph_store = "{dsn}"\nchunk_store = "{dsn}"\n'
        f'cache = "{dsn}"\nnamespace = "{ns}"\nembedder = "hashing:32"\n', encoding="utf-8")
    r = _cli("migrate", "--from", str(workdir), "--to", str(stack), "--allow-model-change",
             "--no-verify")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    optional = [f"{ns}_doc_status", f"{ns}_fragments", f"{ns}_cache"]
    before_drop = _relations(dsn)
    assert [t for t in optional if f"public.{t}" not in before_drop] == []
    asyncio.run(_sql(dsn, "; ".join(f"DROP TABLE {t}" for t in optional)
                     + f"; DROP SEQUENCE {ns}_doc_seq"))
    before = _relations(dsn)
    assert not [r for r in before if any(r.endswith(t) for t in optional)]
    got = _read_only_commands(stack, tmp_path / "archive")
    assert _relations(dsn) == before
    assert [line for line in got["documents"].splitlines() if line.strip()] == []
    manifest = json.loads((tmp_path / "archive" / "manifest.json").read_text())
    assert manifest  # the export wrote its archive


def test_read_only_commands_create_no_table_beside_lightrags(
    workdir: Path, tmp_path: Path  # noqa: F811
) -> None:
    from hexrag.adapters.postgres.lightrag_doc_status import side_table_prefix
    from hexrag.devtools.lightrag_pg import MODEL_NAME
    from tests.integration.test_transfer_lightrag_kv_layouts import _lightrag_pg_workspace
    from tests.services.postgres import postgres_dsn

    dsn = postgres_dsn()
    ws = "ro" + uuid.uuid4().hex[:8]
    _lightrag_pg_workspace(dsn, ws)  # LightRAG's own tables, created by LightRAG
    stack = tmp_path / "lr.toml"
    stack.write_text(
        f'vector_index = "{dsn}"\ngraph_store = "{dsn}"\nchunk_store = "{dsn}"\n'
        f'cache = "{dsn}"\nlayout = "lightrag"\nworkspace = "{ws}"\n'
        f'lightrag_model_name = "{MODEL_NAME}"\nembedder = "hashing:32"\n', encoding="utf-8")
    r = _cli("migrate", "--from", str(workdir), "--to", str(stack), "--allow-model-change",
             "--no-verify")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    asyncio.run(_sql(dsn, "INSERT INTO LIGHTRAG_DOC_STATUS (workspace, id, content_summary, "
                          "content_length, status, file_path, chunks_list) VALUES "
                          f"('{ws}', 'doc-1', 's', 1, 'processed', 'a.txt', '[]'::jsonb)"))
    wanted = asyncio.run(_sql(dsn, "SELECT id FROM LIGHTRAG_DOC_STATUS WHERE workspace = "
                                   f"'{ws}' ORDER BY id"))
    assert "doc-1" in wanted  # a row LightRAG's shape holds, hexrag's tables beside it gone
    side = side_table_prefix(ws)
    asyncio.run(_sql(dsn, f"DROP TABLE {side}_doc_status; DROP TABLE {side}_fragments; "
                          f"DROP SEQUENCE {side}_doc_seq"))
    before = _relations(dsn)
    got = _read_only_commands(stack, tmp_path / "archive")
    assert _relations(dsn) == before
    listed = [json.loads(line)["id"] for line in got["documents"].splitlines() if line.strip()]
    assert sorted(listed) == wanted
