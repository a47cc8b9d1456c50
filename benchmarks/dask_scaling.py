"""Training on a Dask cluster against one process: stochrank.ndcg(k=10) and the boosters' own objectives.

The ~200k × 136 MSLR-shaped synthetic set (``stochrank.datasets.synthetic.mslr_like``), 12 iterations,
63 leaves / depth 6, learning rate 0.1. One process with 2 threads (``LGBMRanker`` /
``stochrank.xgboost.XGBRanker``) against a ``distributed.LocalCluster`` of 2 worker processes with 1
thread each (``lightgbm.dask.DaskLGBMRanker`` / ``stochrank.xgboost.DaskXGBRanker``), the data cut by
``stochrank.dask.partition_by_query`` and placed one partition per worker before the clock starts.
A figure is the wall time of ``fit`` (dataset construction included, cluster start and data placement
excluded); configurations run round-robin, ``--runs`` rounds, medians reported.

    python benchmarks/dask_scaling.py            # RESULTS.md section
    python benchmarks/dask_scaling.py --quick    # smoke run
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
from _common import median, write_results_section

import stochrank
from stochrank.bench.results import fmt, markdown_table, section_header
from stochrank.datasets.synthetic import mslr_like

ITERATIONS = 12
BUILTIN = {"lightgbm": "lambdarank", "xgboost": "rank:ndcg"}


def _placed(client: Any, split: Any) -> tuple[Any, ...]:
    """X, y, qid, group as Dask arrays cut at a query boundary, partition i held by worker i."""
    import dask.array as da

    parts = stochrank.dask.partition_by_query(
        da.from_array(split.X, chunks=(50_000, -1)),
        da.from_array(split.y, chunks=50_000),
        da.from_array(split.qid, chunks=50_000),
        npartitions=2,
    )
    workers = sorted(client.scheduler_info()["workers"])
    rows = np.r_[0, np.cumsum(parts.y.chunks[0])]
    queries = np.r_[0, np.cumsum(parts.group.chunks[0])]
    group = parts.group.compute()

    def placed(a: np.ndarray, bounds: np.ndarray) -> Any:
        pieces = [a[bounds[i] : bounds[i + 1]] for i in range(2)]
        futures = [client.scatter(p, workers=[w]) for p, w in zip(pieces, workers, strict=True)]
        arrays = [
            da.from_delayed(f, shape=p.shape, dtype=p.dtype) for f, p in zip(futures, pieces, strict=True)
        ]
        return da.concatenate(arrays)

    return placed(split.X, rows), placed(split.y, rows), placed(split.qid, rows), placed(group, queries)


def _fits(client: Any, split: Any) -> dict[tuple[str, str, str], Any]:
    """(library, objective, setting) -> a function that trains once."""
    import lightgbm as lgb
    from lightgbm.dask import DaskLGBMRanker

    from stochrank.xgboost import DaskXGBRanker, XGBRanker

    X, y, qid, group = _placed(client, split)
    trees = {"n_estimators": ITERATIONS, "max_depth": 6, "learning_rate": 0.1}
    lgb_params = {**trees, "num_leaves": 63, "verbose": -1}
    xgb_params = {**trees, "tree_method": "hist"}
    objectives = {"stochrank ndcg@10": lambda: stochrank.ndcg(k=10), "built-in": None}
    fits: dict[tuple[str, str, str], Any] = {}
    for name, make in objectives.items():

        def lgb_local(make: Any = make) -> None:
            obj = make() if make else BUILTIN["lightgbm"]
            lgb.LGBMRanker(objective=obj, n_jobs=2, **lgb_params).fit(split.X, split.y, group=split.group)

        def lgb_dask(make: Any = make) -> None:
            obj = make() if make else BUILTIN["lightgbm"]
            DaskLGBMRanker(objective=obj, client=client, **lgb_params).fit(X, y, group=group)

        def xgb_local(make: Any = make) -> None:
            obj = make() if make else BUILTIN["xgboost"]
            XGBRanker(objective=obj, n_jobs=2, **xgb_params).fit(split.X, split.y, qid=split.qid)

        def xgb_dask(make: Any = make) -> None:
            obj = make() if make else BUILTIN["xgboost"]
            ranker = DaskXGBRanker(objective=obj, allow_group_split=True, **xgb_params)
            ranker.client = client
            ranker.fit(X, y, qid=qid)

        fits["lightgbm", name, "1 process × 2 threads"] = lgb_local
        fits["lightgbm", name, "2 workers × 1 thread"] = lgb_dask
        fits["xgboost", name, "1 process × 2 threads"] = xgb_local
        fits["xgboost", name, "2 workers × 1 thread"] = xgb_dask
    return fits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=1667, help="MSLR-shaped queries (~120 docs each)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="smoke run: 200 queries, 1 run, no RESULTS.md")
    args = parser.parse_args()
    if args.quick:
        args.queries, args.runs = 200, 1
    import distributed

    split = mslr_like(args.queries)
    stochrank.ndcg(k=10)(np.zeros(split.y.size), stochrank.protocol.RankingTarget(split.y, split.group))
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        fits = _fits(client, split)
        for fit in fits.values():  # warm-up: imports, Numba's cache on the workers, LightGBM's network
            fit()
        times: dict[tuple[str, str, str], list[float]] = {key: [] for key in fits}
        for _ in range(args.runs):
            for key, fit in fits.items():
                start = time.perf_counter()
                fit()
                times[key].append(time.perf_counter() - start)
    rows = []
    for library in ("lightgbm", "xgboost"):
        for name in ("stochrank ndcg@10", "built-in"):
            local = median(times[library, name, "1 process × 2 threads"])
            dask = median(times[library, name, "2 workers × 1 thread"])
            label = (
                name if name != "built-in" else {"lightgbm": "lambdarank", "xgboost": "rank:ndcg"}[library]
            )
            rows.append([library, label, fmt(local, 2), fmt(dask, 2), fmt(dask / local, 2)])
    table = markdown_table(
        [
            "booster",
            "objective",
            "1 process × 2 threads, s",
            "2 Dask workers × 1 thread, s",
            "Dask ÷ 1 process",
        ],
        rows,
    )
    print(table)
    if args.quick:
        return
    body = (
        section_header("16. Dask: 2 workers against 1 process")
        + f"\n{split.y.size:,} rows × {split.X.shape[1]} features ({args.queries} MSLR-shaped queries), "
        f"{ITERATIONS} iterations, 63 leaves / depth 6, learning rate 0.1; wall time of `fit` (dataset "
        "construction included; cluster start and data placement excluded), medians of "
        f"{args.runs} round-robin runs after one warm-up. `distributed.LocalCluster` of 2 worker processes "
        "with 1 thread each, one query-whole partition per worker (`stochrank.dask.partition_by_query`). "
        "**Indicative only**: the 2 cores of this machine are shared with other work, and both settings "
        "use the same 2 cores, so this measures Dask's overhead, not a scale-out gain.\n\n" + table + "\n"
    )
    write_results_section("dask", body)


if __name__ == "__main__":
    main()
