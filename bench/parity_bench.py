"""Context-build latency: LightRAG 1.5.7 vs hexrag on the same working directories.

For each size (about 1k, 10k and 100k entities, twice as many relations) the script builds a
seeded dataset (``hexrag.devtools.lightrag_data``), writes it once into a genuine LightRAG
working directory (cached in ``bench/data/``), and then, in one run:

* times LightRAG's ``aquery_data`` and hexrag's ``query_data`` (context build only: no LLM,
  no rerank, keywords supplied) for every mode, under both chunk pick methods (``VECTOR``,
  LightRAG's default, and ``WEIGHT``, its fastest), median over the queries; by default each
  side runs a mode's queries in a block, blocks alternating (``--order interleaved``: every
  query on both sides back to back, see ``_latency_job``);
* times the *floor* of each mode: the exact top-k vector searches the mode needs (numpy over
  the loaded matrices, query vectors precomputed) plus tokenising hexrag's final context once;
* measures load time (LightRAG ``LightRAG(...)`` + ``initialize_storages()`` vs hexrag
  ``load_workdir``) and peak RSS;
* checks that both sides returned the same results (WEIGHT exactly, VECTOR as sets);

and prints one table of ratios. Each (side, pick method) runs in its own worker process, so
load time and peak memory are measured on a fresh interpreter.

Usage::

    python bench/parity_bench.py                       # 1k, 10k, 100k
    python bench/parity_bench.py --sizes 1k,10k --queries 10
    python bench/parity_bench.py --sizes 100k --profile /tmp/hexrag-profile.txt

Not run in CI. Needs the ``parity`` extra (lightrag-hku 1.5.7) and ``pyinstrument`` for
``--profile``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from hexrag.devtools.lightrag_data import (  # noqa: E402
    GENERATOR_VERSION,
    DatasetSpec,
    KeywordQuery,
    LightRAGDir,
    diff_context,
    diff_context_as_sets,
    diff_query_data,
    generate_dataset,
    hexrag_context,
    hexrag_query_data,
    keyword_queries,
    lightrag_context,
    lightrag_query_data,
    open_hexrag,
    open_lightrag,
    parity_embedder,
    write_lightrag_workdir,
)

MODES = ("local", "global", "hybrid", "mix", "naive")
PICKS = ("VECTOR", "WEIGHT")
SIZES = {"1k": 1_000, "10k": 10_000, "100k": 100_000}
SEED = 42
DIM = 384
DATA_DIR = REPO / "bench" / "data"


def _spec(size: str) -> DatasetSpec:
    return DatasetSpec(n_entities=SIZES[size], seed=SEED)


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --------------------------------------------------------------------------------------
# Data preparation (main process)
# --------------------------------------------------------------------------------------


def ensure_workdir(size: str, data_dir: Path) -> LightRAGDir:
    """The cached LightRAG working directory of ``size`` (generated on first use)."""
    spec = _spec(size)
    wd = LightRAGDir(data_dir, spec.label)
    marker = wd.path / ".hexrag-bench-complete"
    stamp = json.dumps({"spec": repr(spec), "dim": DIM, "generator": GENERATOR_VERSION})
    if marker.exists() and marker.read_text() == stamp:
        return wd
    t0 = time.perf_counter()
    print(f"[{size}] generating {spec.label} ...", flush=True)
    ds = generate_dataset(spec)
    print(f"[{size}] {ds.stats()} ({time.perf_counter() - t0:.1f}s)", flush=True)
    # A worker process writes it: LightRAG keeps process-wide shared state per workspace.
    cmd = [sys.executable, __file__, "--write", size, "--data-dir", str(data_dir)]
    subprocess.run(cmd, check=True)
    marker.write_text(stamp)
    print(f"[{size}] written to {wd.path} in {time.perf_counter() - t0:.1f}s", flush=True)
    return wd


def _write_worker(size: str, data_dir: Path) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / ".gitignore").write_text("*\n")
    ds = generate_dataset(_spec(size))
    embedder = parity_embedder(DIM)
    asyncio.run(write_lightrag_workdir(ds, data_dir, embedder, workspace=ds.spec.label))


# --------------------------------------------------------------------------------------
# Workers (one process per side and pick method)
# --------------------------------------------------------------------------------------


async def _timed(coro: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    result = await coro
    return time.perf_counter() - t0, result


def _queries(job: dict[str, Any]) -> list[KeywordQuery]:
    return [
        KeywordQuery(
            query=q["query"],
            hl_keywords=tuple(q["hl_keywords"]),
            ll_keywords=tuple(q["ll_keywords"]),
            params=tuple((k, v) for k, v in q["params"]),
            label=q["label"],
        )
        for q in job["queries"]
    ]


def _cold(engine: Any) -> None:
    """Forget every memo cache of hexrag's engine (token counts, heading paths, split source
    ids; LightRAG has no such caches), so each query is timed cold: never with work left over
    from the same text in an earlier query or mode."""
    engine.clear_memo_caches()


async def _memory_job(job: dict[str, Any]) -> dict[str, Any]:
    """Load one side alone (fresh process): load time, RSS after load, peak RSS."""
    side, size = job["side"], job["size"]
    wd = LightRAGDir(Path(job["root"]), job["workspace"])
    queries = _queries(job)[:3]
    embedder = parity_embedder(DIM)
    gc.collect()
    rss0 = _rss_mb()
    run: Callable[[Any, str, KeywordQuery], Awaitable[dict[str, Any]]]
    if side == "lightrag":
        load_s, handle = await _timed(open_lightrag(wd, embedder, kg_chunk_pick_method="WEIGHT"))
        run = lightrag_query_data
    else:
        load_s, handle = await _timed(open_hexrag(wd.path, embedder, kg_chunk_pick_method="WEIGHT"))
        run = hexrag_query_data
    rss_loaded = _rss_mb()
    for mode in MODES:
        for q in queries:
            await run(handle, mode, q)
    out = {
        "side": side,
        "size": size,
        "load_s": load_s,
        "rss_before_load_mb": rss0,
        "rss_loaded_mb": rss_loaded,
        "peak_rss_mb": _peak_mb(),
    }
    if side == "lightrag":
        await handle.finalize_storages()
    return out


def _schedule(order: str, repeat: int, n: int) -> list[tuple[str, int]]:
    """The (side, query index) runs of one repeat, in order (see :func:`_latency_job`)."""
    first, second = ("lightrag", "hexrag") if repeat % 2 == 0 else ("hexrag", "lightrag")
    if order == "blocked":
        return [(side, qi) for side in (first, second) for qi in range(n)]
    out = []
    for qi in range(n):
        pair = ("lightrag", "hexrag") if (qi + repeat) % 2 == 0 else ("hexrag", "lightrag")
        out += [(side, qi) for side in pair]
    return out


async def _latency_job(job: dict[str, Any]) -> dict[str, Any]:
    """Both sides loaded in one process; every query timed on both.

    ``order="blocked"`` (the default): per mode, each side runs all the queries in a block,
    as a service answering only its own queries would; the blocks alternate (LightRAG then
    hexrag on even repeats, hexrag then LightRAG on odd ones) so both sides see the same
    machine drift. ``order="interleaved"``: every query runs on both sides back to back
    (LightRAG first on even queries, hexrag first on odd ones); each side then runs right after
    the other, in its leftovers: evicted CPU caches, and OpenBLAS worker threads that spin for
    about 0.1 s after LightRAG's mat-vecs and hold the second core. ``gc.freeze()`` after
    loading keeps either side's heap from being scanned by collections the other triggers.
    """
    pick, size = job["pick"], job["size"]
    order = job.get("order", "blocked")
    wd = LightRAGDir(Path(job["root"]), job["workspace"])
    queries = _queries(job)
    embedder = parity_embedder(DIM)
    rag = await open_lightrag(wd, embedder, kg_chunk_pick_method=pick)
    engine = await open_hexrag(wd.path, embedder, kg_chunk_pick_method=pick)
    gc.collect()
    gc.freeze()
    exact = pick == "WEIGHT"
    lat: dict[str, dict[str, list[float]]] = {"lightrag": {}, "hexrag": {}}
    bad, total = 0, 0
    notes: list[str] = []

    for mode in MODES:
        await lightrag_query_data(rag, mode, queries[0])  # warm-up
        await hexrag_query_data(engine, mode, queries[0])
        n = len(queries)
        runs: dict[str, list[list[float]]] = {side: [[] for _ in range(n)] for side in lat}
        data: dict[str, list[Any]] = {side: [None] * n for side in lat}
        if job.get("warm"):
            # steady state: memo caches kept, and each query's text seen once before
            for q in queries:
                await lightrag_query_data(rag, mode, q)
                await hexrag_query_data(engine, mode, q)
        for r in range(job["repeat"]):
            for side, qi in _schedule(order, r, n):
                q = queries[qi]
                if side == "lightrag":
                    call = lightrag_query_data(rag, mode, q)
                else:
                    if not job.get("warm"):
                        _cold(engine)
                    call = hexrag_query_data(engine, mode, q)
                dt, data[side][qi] = await _timed(call)
                runs[side][qi].append(dt)
        for side in lat:
            lat[side][mode] = [statistics.median(v) for v in runs[side]]
        if job["check"]:
            for qi, q in enumerate(queries):
                total += 1
                lr_ctx = await lightrag_context(rag, mode, q)
                hx_ctx = await hexrag_context(engine, mode, q)
                diffs = diff_query_data(data["lightrag"][qi], data["hexrag"][qi], exact=exact)
                diffs += (
                    diff_context(lr_ctx, hx_ctx) if exact else diff_context_as_sets(lr_ctx, hx_ctx)
                )
                if diffs:
                    bad += 1
                    if len(notes) < 3:
                        notes.append(f"{mode} {q.label}: {diffs[0][:300]}")
        embedder.calls.clear()
    out: dict[str, Any] = {
        "pick": pick,
        "size": size,
        "latency": lat,
        "parity": {"bad": bad, "total": total, "notes": notes},
    }
    await rag.finalize_storages()
    del rag
    gc.unfreeze()
    gc.collect()
    if job.get("floor"):
        out["floor"] = await _floor(wd, embedder, queries, engine, pick)
    if job.get("profile"):
        out["profile"] = await _profile(engine, queries, job["profile"], size, pick)
    return out


async def _floor(
    wd: LightRAGDir, embedder: Any, queries: list[KeywordQuery], engine: Any, pick: str
) -> dict[str, list[float]]:
    """Per mode: exact top-k searches (numpy, precomputed query vectors) + one tokenisation."""
    import numpy as np

    from hexrag.adapters.workdir.nanovdb import read_nano_vdb

    mats = {
        ns: read_nano_vdb(wd.path / f"vdb_{ns}.json").matrix
        for ns in ("entities", "relationships", "chunks")
    }
    tok = engine.tokenizer

    def top_k(matrix: Any, vec: Any, k: int) -> Any:
        scores = matrix @ vec
        k = min(k, len(scores))
        idx = np.argpartition(-scores, k - 1)[:k]
        return idx[np.argsort(-scores[idx], kind="stable")]

    need = {
        "local": ("ll",),
        "global": ("hl",),
        "hybrid": ("ll", "hl"),
        "mix": ("ll", "hl", "query"),
        "naive": ("query",),
    }
    ns_of = {"ll": "entities", "hl": "relationships", "query": "chunks"}
    out: dict[str, list[float]] = {}
    for mode in MODES:
        times = []
        for q in queries:
            params = q.param_dict()
            texts = {
                "ll": ", ".join(q.ll_keywords),
                "hl": ", ".join(q.hl_keywords),
                "query": q.query,
            }
            vecs = {k: embedder.embed_one(t) for k, t in texts.items()}
            ctx = await hexrag_context(engine, mode, q)
            t0 = time.perf_counter()
            for kind in need[mode]:
                if kind != "query" and not texts[kind]:
                    continue
                k = params.get("chunk_top_k", 20) if kind == "query" else params.get("top_k", 40)
                top_k(mats[ns_of[kind]], vecs[kind], k)
            tok.encode(ctx)
            times.append(time.perf_counter() - t0)
        out[mode] = times
    return out


async def _profile(
    engine: Any, queries: list[KeywordQuery], path: str, size: str, pick: str
) -> str:
    from pyinstrument import Profiler

    sections = []
    for mode in ("hybrid", "mix", "local", "global"):
        profiler = Profiler(interval=0.0005, async_mode="enabled")
        profiler.start()
        for _ in range(3):
            for q in queries:
                _cold(engine)
                await hexrag_query_data(engine, mode, q)
        profiler.stop()
        sections.append(
            f"===== hexrag {mode} @ {size}, pick={pick}, {3 * len(queries)} queries =====\n"
            + profiler.output_text(unicode=False, color=False, show_all=False)
        )
    text = "\n".join(sections)
    Path(path).write_text(text)
    return path


def _worker_main(job_path: str, out_path: str) -> None:
    job = json.loads(Path(job_path).read_text())
    result = asyncio.run(_memory_job(job) if job["kind"] == "memory" else _latency_job(job))
    Path(out_path).write_text(json.dumps(result, ensure_ascii=False))


# --------------------------------------------------------------------------------------
# Orchestration and report
# --------------------------------------------------------------------------------------


def _run_worker(job: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        jp, op = Path(tmp) / "job.json", Path(tmp) / "out.json"
        jp.write_text(json.dumps(job, ensure_ascii=False))
        subprocess.run([sys.executable, __file__, "--worker", str(jp), str(op)], check=True)
        result: dict[str, Any] = json.loads(op.read_text())
        return result


def _median_ms(values: list[float]) -> float:
    return 1000 * statistics.median(values) if values else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", default="1k,10k,100k", help="comma-separated: 1k,10k,100k")
    ap.add_argument("--queries", type=int, default=12, help="queries per mode (median over them)")
    ap.add_argument(
        "--repeat",
        type=int,
        default=2,
        help="timed runs per query (median); with --order blocked, the blocks alternate",
    )
    ap.add_argument(
        "--order",
        choices=("blocked", "interleaved"),
        default="blocked",
        help="blocked: per mode, each side runs all queries in a block, blocks alternating "
        "(default); interleaved: every query on both sides back to back",
    )
    ap.add_argument("--data-dir", default=str(DATA_DIR), help="cache of generated workdirs")
    ap.add_argument("--no-check", action="store_true", help="skip the result comparison")
    ap.add_argument(
        "--warm",
        action="store_true",
        help="steady state: keep hexrag's memo caches and run each query once before timing "
        "(default: cold, caches cleared before every timed query)",
    )
    ap.add_argument(
        "--profile",
        nargs="?",
        const="/tmp/hexrag-profile.txt",
        default=None,
        help="profile hexrag (pyinstrument) at the largest size into this file",
    )
    ap.add_argument("--json", default=None, help="also write all measurements to this file")
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--write", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.worker:
        _worker_main(*args.worker)
        return
    if args.write:
        _write_worker(args.write, Path(args.data_dir))
        return

    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    for s in sizes:
        if s not in SIZES:
            ap.error(f"unknown size {s!r}; choose from {list(SIZES)}")
    data_dir = Path(args.data_dir)
    dirs = {s: ensure_workdir(s, data_dir) for s in sizes}

    all_results: dict[str, Any] = {}
    for s in sizes:
        ds = generate_dataset(_spec(s))
        queries = [
            {
                "query": q.query,
                "hl_keywords": list(q.hl_keywords),
                "ll_keywords": list(q.ll_keywords),
                "params": [list(p) for p in q.params],
                "label": q.label,
            }
            for q in keyword_queries(ds, args.queries, seed=1, no_match=False)
        ]
        del ds
        base = {
            "size": s,
            "root": str(dirs[s].root),
            "workspace": dirs[s].workspace,
            "queries": queries,
        }
        for side in ("lightrag", "hexrag"):
            print(f"[{s}] load + memory: {side} ...", flush=True)
            all_results[f"{s}:memory:{side}"] = _run_worker(
                {**base, "kind": "memory", "side": side}
            )
        for pick in PICKS:
            print(f"[{s}] latency, {pick} (both sides, {args.order}) ...", flush=True)
            job = {
                **base,
                "kind": "latency",
                "pick": pick,
                "repeat": args.repeat,
                "order": args.order,
                "warm": args.warm,
                "check": not args.no_check,
                "floor": pick == "WEIGHT",
                "profile": args.profile if pick == "WEIGHT" and s == sizes[-1] else None,
            }
            all_results[f"{s}:latency:{pick}"] = _run_worker(job)
    if args.json:
        Path(args.json).write_text(json.dumps(all_results, ensure_ascii=False))
    print(report(sizes, all_results, check=not args.no_check, warm=args.warm, order=args.order))


def _n_queries(res: dict[str, Any]) -> int:
    for key, value in res.items():
        if ":latency:" in key:
            return len(next(iter(value["latency"]["lightrag"].values())))
    return 0


def report(
    sizes: list[str],
    res: dict[str, Any],
    *,
    check: bool,
    warm: bool = False,
    order: str = "blocked",
) -> str:
    """The Markdown table of medians and ratios (plus load, memory and parity lines)."""
    import os
    import platform

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [
        f"Machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, load average"
        f" {load:.1f} at the end of the run; queries per mode: {_n_queries(res)}.",
        "",
        "Median context-build latency in ms (no LLM, no rerank, keywords supplied) over the"
        " queries; ratio = LightRAG / hexrag, like for like (same chunk pick method, same"
        " process, "
        + (
            "each side's queries in alternating blocks; "
            if order == "blocked"
            else "each query on both sides back to back; "
        )
        + (
            "warm: each query run once untimed first, memo caches kept)."
            if warm
            else "cold: hexrag's memo caches cleared before each query)."
        )
        + "",
        "floor = the exact top-k vector searches of the mode (numpy, query vectors given)"
        " + one tokenisation of hexrag's final context.",
        "",
        "| size | mode | LightRAG VECTOR | hexrag VECTOR | ratio | LightRAG WEIGHT"
        " | hexrag WEIGHT | ratio | floor | hexrag WEIGHT / floor |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in sizes:
        v, w = res[f"{s}:latency:VECTOR"], res[f"{s}:latency:WEIGHT"]
        for mode in MODES:
            a = _median_ms(v["latency"]["lightrag"][mode])
            b = _median_ms(v["latency"]["hexrag"][mode])
            c = _median_ms(w["latency"]["lightrag"][mode])
            d = _median_ms(w["latency"]["hexrag"][mode])
            f = _median_ms(w.get("floor", {}).get(mode, []))
            lines.append(
                f"| {s} | {mode} | {a:.1f} | {b:.2f} | {a / b:.1f}x | {c:.1f} | {d:.2f} | "
                f"{c / d:.1f}x | {f:.2f} | {d / f:.2f}x |"
            )
    lines += [
        "",
        "Load (LightRAG: `LightRAG(...)` + `initialize_storages()`; hexrag: `load_workdir` +"
        " engine) and memory, each side alone in a fresh process:",
        "",
        "| size | LightRAG load (s) | hexrag load (s) | LightRAG RSS after load (MB)"
        " | hexrag RSS after load (MB) | LightRAG peak RSS (MB) | hexrag peak RSS (MB) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for s in sizes:
        lm, hm = res[f"{s}:memory:lightrag"], res[f"{s}:memory:hexrag"]
        lines.append(
            f"| {s} | {lm['load_s']:.2f} | {hm['load_s']:.2f} | {lm['rss_loaded_mb']:.0f} | "
            f"{hm['rss_loaded_mb']:.0f} | {lm['peak_rss_mb']:.0f} | {hm['peak_rss_mb']:.0f} |"
        )
    if check:
        lines.append("")
        for s in sizes:
            for pick in PICKS:
                par = res[f"{s}:latency:{pick}"]["parity"]
                how = "exact" if pick == "WEIGHT" else "chunks as sets"
                lines.append(
                    f"parity {s} {pick} ({how}): {par['total'] - par['bad']}/{par['total']}"
                    " identical"
                )
                lines += [f"  - {n}" for n in par["notes"]]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
