"""``hexrag export``, ``hexrag import``, ``hexrag migrate`` and ``hexrag check``: a stack's
records into and out of a backend-neutral archive, from one stack to another, and verified.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from hexrag.cli_common import (
    _STACK_HELP,
    EXIT_FAILURE,
    _Bars,
    _fail,
    _guarded,
    _PageSizeOption,
    _StackArgument,
    _StackOption,
    _the_stack,
    _WorkspaceOption,
)

__all__ = ["check_command", "export_command", "import_command", "migrate_command"]


def export_command(
    first: Annotated[Path | None, typer.Argument(
        metavar="[STACK] DIRECTORY", help=_STACK_HELP + " Then the archive directory to "
        "write.", show_default=False)] = None,
    second: Annotated[Path | None, typer.Argument(hidden=True, show_default=False)] = None,
    stack_option: _StackOption = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace an archive already in DIRECTORY.")
    ] = False,
    page_size: _PageSizeOption = 1000,
    workspace: _WorkspaceOption = None,
) -> None:
    """Write every record of STACK into a backend-neutral archive at DIRECTORY.

    The archive: JSON lines per store, vectors in .npy files (as stored, never re-embedded),
    and manifest.json with counts, SHA-256 checksums, the embedding model and dimension and
    the format version (hexrag.transfer.archive). Memory stays bounded by one page.
    """
    stack, rest = _the_stack(stack_option, first, second)
    if len(rest) != 1:
        _fail("give the archive directory to write: hexrag export --stack STACK DIRECTORY")
    directory = rest[0]

    async def go() -> dict[str, Any]:
        from hexrag.bootstrap import open_copy_source
        from hexrag.transfer import export_stack

        with _Bars() as bars:
            opened = await open_copy_source(stack, progress=bars.say, workspace=workspace)
            try:
                return await export_stack(
                    opened, directory, overwrite=overwrite, page_size=page_size,
                    progress=bars,
                )
            finally:
                await opened.close()

    _echo_counts(f"exported to {directory}", _guarded(lambda: asyncio.run(go())))


def _echo_counts(done: str, manifest: dict[str, Any]) -> None:
    """``<done>: {"section": count, ...}`` from an archive manifest."""
    counts = {k: v["count"] for k, v in manifest["sections"].items()}
    typer.echo(f"{done}: {json.dumps(counts)}")


def import_command(
    directory: Annotated[Path, typer.Argument(help="An archive directory.", show_default=False)],
    stack_argument: _StackArgument = None,
    stack_option: _StackOption = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Import into a stack that already holds data.")
    ] = False,
    allow_model_change: Annotated[
        bool,
        typer.Option(
            "--allow-model-change",
            help="Import although the target embeds queries with another model.",
        ),
    ] = False,
    workspace: _WorkspaceOption = None,
) -> None:
    """Load an archive (hexrag export) into STACK.

    Checksums and counts are verified before anything is written; a vector dimension or
    embedding model that differs from the target's is refused. A LightRAG working directory
    that does not exist yet is created (written atomically at the end).
    """
    stack, _ = _the_stack(stack_option, stack_argument)

    async def go() -> dict[str, Any]:
        from hexrag.bootstrap import open_stack
        from hexrag.transfer import import_archive, read_manifest

        manifest = read_manifest(directory)
        dim = int(manifest["embedding"]["dim"])
        with _Bars() as bars:
            opened = await open_stack(stack, create_dim=dim, progress=bars.say,
                                     workspace=workspace)
            try:
                if opened.model is not None and not allow_model_change:
                    opened.model.adopt(manifest["embedding"].get("model"), dim)
                    await opened.record_model()
                result = await import_archive(
                    directory, opened.stores, overwrite=overwrite,
                    allow_model_change=allow_model_change, progress=bars,
                )
                await opened.commit()
                return result
            finally:
                await opened.aclose()

    _echo_counts(f"imported into {stack}", _guarded(lambda: asyncio.run(go())))


def migrate_command(
    source: Annotated[
        Path, typer.Option("--from", "--stack", help=_STACK_HELP + " The source.",
                           show_default=False)
    ],
    target: Annotated[Path, typer.Option("--to", help=_STACK_HELP, show_default=False)],
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Migrate into a target that already holds data.")
    ] = False,
    state: Annotated[
        Path | None,
        typer.Option(
            help="Resume file (default: next to the target, .hexrag-migrate-*.json).",
            show_default=False,
        ),
    ] = None,
    re_embed: Annotated[
        str | None,
        typer.Option(
            "--re-embed",
            help="Re-embed from the stored content with this model (an embedder spec).",
            show_default=False,
        ),
    ] = None,
    allow_model_change: Annotated[
        bool, typer.Option("--allow-model-change", help="Copy vectors across model names.")
    ] = False,
    verify: Annotated[
        bool, typer.Option("--verify/--no-verify",
                           help="Compare section digests and golden queries.")
    ] = True,
    verify_only: Annotated[
        bool, typer.Option("--verify-only", help="Only compare the two stacks.")
    ] = False,
    queries: Annotated[int, typer.Option(help="Sample queries to compare.", min=0)] = 4,
    page_size: _PageSizeOption = 1000,
    workspace: _WorkspaceOption = None,
    target_workspace: Annotated[
        str | None,
        typer.Option("--target-workspace", help="Workspace of the target (default: "
                     "--workspace).", show_default=False),
    ] = None,
) -> None:
    """Copy every section from one stack to another: vectors as stored (not re-embedded),
    the graph with relation ids, chunks with metadata, the LLM cache, the documents (status
    rows, description fragments) and LightRAG's key-value namespaces (full_docs,
    full_entities, full_relations, entity_chunks, relation_chunks). A section the source
    holds and the target cannot store is refused before anything is written.

    Page by page with bounded memory and a progress bar per store; resumable (re-running
    continues after the last page written and never duplicates); refuses a non-empty target
    (--overwrite) and a dimension or model mismatch (--re-embed MODEL recomputes vectors from
    the stored text, no LLM involved). Ends with a verification (exit 1 on any difference):
    per-section digests (counts and content checksums, vectors by their float32 bytes) and
    golden queries searched exactly on both stacks, compared tie-aware, then identical
    /query/data results in every mode. `hexrag check A --against B` verifies an existing pair.
    A LightRAG working directory source is read page by page (its vector files are never
    loaded whole); the verification then loads it to query it (--no-verify skips that). A
    LightRAG working directory target is written atomically at the end (an interruption
    leaves it as it was; re-running starts over).
    """
    import hashlib

    state_file = state
    if state_file is None:
        digest = hashlib.sha1(f"{source.resolve()}|{target.resolve()}".encode()).hexdigest()[:10]
        state_file = target.resolve().parent / f".hexrag-migrate-{digest}.json"

    async def go() -> dict[str, Any] | None:
        from hexrag.adapters.memory import HashingEmbedder
        from hexrag.bootstrap import compose_engine, open_copy_source, open_stack
        from hexrag.embedders import aresolve_embedder
        from hexrag.manifests import normal_spec
        from hexrag.ports.stack import Stack, StackManifest
        from hexrag.transfer.migrate import migrate_stack, sample_queries, verify_migration

        with _Bars() as bars:
            src: Stack = await open_copy_source(source, progress=bars.say, workspace=workspace)
            try:
                probe = HashingEmbedder(src.dim)
                model = await aresolve_embedder(re_embed) if re_embed else None
                dim = model.dim if model is not None else src.dim
                dst = await open_stack(target, create_dim=dim, progress=bars.say,
                                       workspace=target_workspace or workspace)
                try:
                    is_workdir = dst.workdir_stack is not None
                    if not verify_only and dst.model is not None:
                        if model is not None:  # the target's model changes: the only way
                            await dst.model.replace(StackManifest(
                                embedding_model=model.model_name, embedding_dim=model.dim,
                                embedder=normal_spec(re_embed, model),
                                layout=dst.model.current.layout,
                                workspace=dst.model.current.workspace,
                            ))
                            dst.stores.embedding_model = model.model_name
                        elif src.embedding_model is not None:
                            dst.model.adopt(src.embedding_model, src.dim)
                            await dst.record_model()
                    if not verify_only:
                        if is_workdir:
                            state_file.unlink(missing_ok=True)  # an in-memory target starts over
                        await migrate_stack(
                            src, dst.stores, state_path=state_file,
                            identity={"from": str(source), "to": str(target)},
                            page_size=page_size, overwrite=overwrite,
                            allow_model_change=allow_model_change, re_embed=model,
                            progress=bars,
                        )
                        await dst.commit()
                        state_file.unlink(missing_ok=True)
                    if not (verify or verify_only) or model is not None:
                        return None
                    if src.scan_only:  # a streamed directory cannot answer queries: load it
                        await src.close()
                        src = await open_copy_source(source, progress=bars.say,
                                                     workspace=workspace, streaming=False)
                    # no cache: both sides must compute every answer
                    engines = [
                        compose_engine(s, embedder=probe, store_cache=False)
                        for s in (src, dst.stores)
                    ]
                    sample = (await sample_queries(src, queries)) if queries else []
                    return await verify_migration(
                        src, dst.stores, engines[0], engines[1], queries=sample
                    )
                finally:
                    await dst.aclose()
            finally:
                await src.close()

    report = _guarded(lambda: asyncio.run(go()))
    if report is None:
        typer.echo(f"migrated {source} -> {target}")
        return
    typer.echo(json.dumps(report, indent=2))
    if not report["ok"]:
        raise typer.Exit(EXIT_FAILURE)


def check_command(
    stack_argument: _StackArgument = None,
    stack_option: _StackOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    page_size: _PageSizeOption = 1000,
    workspace: _WorkspaceOption = None,
    against: Annotated[Path | None, typer.Option(
        "--against", help="A second stack: verify it holds exactly what STACK holds "
        "(per-section digests, golden queries searched exactly on both, compared tie-aware; "
        "exit 1 if not).", show_default=False)] = None,
    against_workspace: Annotated[str | None, typer.Option(
        "--against-workspace", help="Workspace of the --against stack (default: --workspace).",
        show_default=False)] = None,
    queries: Annotated[int, typer.Option(help="Golden queries for --against.", min=0)] = 4,
) -> None:
    """Report drift between the stores of STACK; exit 0 only when it is clean.

    With --against B: compare STACK and B instead (e.g. both ends of a migration): every
    section's record count and content checksum, and golden queries answered identically
    (exit 1 on any difference).

    Relation vectors without a graph edge and edges without a vector, entity vectors without a
    node, source ids that name no stored chunk, chunk vectors without text and chunks without
    a vector, vectors of the wrong dimension or norm 0; warnings: chunks nothing references,
    chunks whose metadata proves no product (scope). Vector dimension and model per store.
    A working directory's files are each read first: a damaged one is reported by name.
    """
    stack, _ = _the_stack(stack_option, stack_argument)
    if against is not None:
        from hexrag.check_pair import check_against

        pair = _guarded(lambda: asyncio.run(check_against(
            stack, against, workspace=workspace, second_workspace=against_workspace,
            queries=queries, page_size=page_size)))
        typer.echo(json.dumps(pair, indent=2, ensure_ascii=False))
        if not pair["ok"]:
            raise typer.Exit(EXIT_FAILURE)
        return

    async def go() -> Any:
        from hexrag.adapters.workdir.validate import validate_workdir
        from hexrag.bootstrap import open_stack
        from hexrag.transfer import CheckReport, check_stack

        if stack.suffix.lower() != ".toml":  # every file of a working directory, read once
            damaged = await asyncio.to_thread(
                validate_workdir, stack / workspace if workspace else stack)
            if damaged:
                return CheckReport(files=damaged)
        with _Bars() as bars:
            opened = await open_stack(stack, progress=bars.say, workspace=workspace,
                                      read_only=True)
            try:
                return await check_stack(opened.stores, page_size=page_size, progress=bars)
            finally:
                await opened.aclose()

    report = _guarded(lambda: asyncio.run(go()))
    body = report.to_json()
    if as_json:
        typer.echo(json.dumps(body, indent=2, ensure_ascii=False))
    else:
        typer.echo("clean" if report.clean else "NOT clean")
        for name, problem in body["files"].items():
            typer.echo(f"  error: damaged file {name}: {problem}")
        for group in ("errors", "warnings"):
            for name, count in body[group].items():
                if count:
                    sample = ", ".join(body["samples"].get(name, [])[:3])
                    typer.echo(f"  {group[:-1]}: {name} = {count}  (e.g. {sample})")
        for name, info in body["stores"].items():
            typer.echo(f"  {name}: {json.dumps(info)}")
    if not report.clean:
        raise typer.Exit(EXIT_FAILURE)

