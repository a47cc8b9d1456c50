"""MQ2008: stochrank.auc(), map(), precision(10) against LambdaMART and XGBoost rank:map, each on its metric.

Relevant = label >= 1 (``threshold=0``). Five folds, fixed settings, one seed:

* LightGBM trees (31 leaves, min_data_in_leaf 20) for LambdaMART (``lambdarank``, graded labels) and the
  stochrank objectives; XGBoost trees (depth 6) for ``rank:map`` (binary labels, which it requires);
* at most 500 rounds, early stopping on the fold's ``vali`` split by the metric of the column (patience 50),
  best iteration kept; the learning rate of each method and column is picked from {0.05, 0.2} by the mean
  vali metric over the folds;
* test metrics in ``stochrank.metrics``' conventions with ``ties="input"`` and queries without a relevant
  document skipped (AUC is undefined there; MAP and P@10 would count them as 1 or 0 for every method);
* significance: paired t-test over the five folds, and over the pooled test queries (scipy.stats.ttest_rel).

    nice -n 15 python benchmarks/binary_objectives.py            # RESULTS.md section (about 5 minutes)
    python benchmarks/binary_objectives.py --quick                # 1 fold, 1 lr, 60 rounds; RESULTS untouched
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import lightgbm as lgb
import numpy as np
import xgboost as xgb
from _common import write_results_section
from scipy.stats import ttest_rel

import stochrank
from stochrank.bench.results import fmt, markdown_table, section_header
from stochrank.datasets import load_mq2008

K = 10
METRICS = {
    "AUC": lambda y, s, g: stochrank.metrics.auc(y, s, g, ties="input", empty="skip", per_query=True),
    "MAP": lambda y, s, g: stochrank.metrics.map(y, s, g, ties="input", empty="skip", per_query=True),
    f"P@{K}": lambda y, s, g: stochrank.metrics.precision(
        y, s, g, k=K, ties="input", empty="skip", per_query=True
    ),
}
OWN = {
    "AUC": lambda: stochrank.auc(seed=0),
    "MAP": lambda: stochrank.map(seed=0),
    f"P@{K}": lambda: stochrank.precision(K),
}
LGB = {"num_leaves": 31, "min_data_in_leaf": 20, "verbose": -1, "num_threads": 1, "seed": 0, "metric": "None"}
XGB = {"objective": "rank:map", "max_depth": 6, "nthread": 1, "seed": 0, "eval_metric": "map"}


def _mean(values: np.ndarray) -> float:
    return float(np.nanmean(values))


def _feval(metric: str) -> Callable[..., Any]:
    """Early-stopping metric (higher is better) for LightGBM and XGBoost."""

    def lgb_metric(preds: np.ndarray, data: lgb.Dataset) -> tuple[str, float, bool]:
        return metric, _mean(METRICS[metric](data.get_label(), preds, data.get_group())), True

    return lgb_metric


def fit(
    method: str, metric: str, lr: float, fold: dict[str, Any], rounds: int, patience: int
) -> dict[str, Any]:
    """Train one method, early-stopped on vali by ``metric``; return its vali and per-query test values."""
    tr, va, te = fold["train"], fold["vali"], fold["test"]
    start = time.perf_counter()
    if method == "xgb-rank:map":
        binary = {name: (s.y >= 1).astype(np.float64) for name, s in fold.items()}

        def xgb_metric(preds: np.ndarray, data: xgb.DMatrix) -> tuple[str, float]:
            return metric, _mean(METRICS[metric](va.y, preds, va.group))

        dtrain = xgb.DMatrix(tr.X, binary["train"], group=tr.group)
        dvali = xgb.DMatrix(va.X, binary["vali"], group=va.group)
        model = xgb.train(
            {**XGB, "eta": lr, "disable_default_eval_metric": 1}, dtrain, rounds, evals=[(dvali, "vali")],
            custom_metric=xgb_metric, maximize=True, early_stopping_rounds=patience, verbose_eval=False,
        )  # fmt: skip
        best = (0, model.best_iteration + 1)

        def predict(s: Any) -> np.ndarray:
            return np.asarray(model.predict(xgb.DMatrix(s.X), iteration_range=best), dtype=np.float64)
    else:
        objective = "lambdarank" if method == "lgb-lambdarank" else OWN[metric]()
        train = lgb.Dataset(tr.X, tr.y, group=tr.group)
        vali = lgb.Dataset(va.X, va.y, group=va.group, reference=train)
        booster = lgb.train(
            {**LGB, "objective": objective, "learning_rate": lr}, train, rounds, valid_sets=[vali],
            feval=_feval(metric), callbacks=[lgb.early_stopping(patience, verbose=False)],
        )  # fmt: skip

        def predict(s: Any) -> np.ndarray:
            return np.asarray(booster.predict(s.X, num_iteration=booster.best_iteration), dtype=np.float64)

    vali_value = _mean(METRICS[metric](va.y, predict(va), va.group))
    test = METRICS[metric](te.y, predict(te), te.group)
    return {"vali": vali_value, "test": test, "seconds": time.perf_counter() - start}


def main() -> None:
    """Run every fold, method, metric and learning rate; print the tables and refresh RESULTS.md."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--lrs", type=float, nargs="+", default=[0.05, 0.2])
    parser.add_argument("--rounds", type=int, default=500)
    parser.add_argument("--patience", type=int, default=50)
    parser.add_argument(
        "--quick", action="store_true", help="1 fold, 1 learning rate, 60 rounds; no RESULTS.md"
    )
    args = parser.parse_args()
    if args.quick:
        args.folds, args.lrs, args.rounds, args.patience = [1], [0.2], 60, 20
    wall = time.perf_counter()
    folds = {f: {s: load_mq2008(f, s) for s in ("train", "vali", "test")} for f in args.folds}
    methods = {
        metric: [f"stochrank.{OWN[metric]().name}", "lgb-lambdarank", "xgb-rank:map"] for metric in METRICS
    }
    runs: dict[tuple[str, str, float], list[dict[str, Any]]] = {}
    for metric, names in methods.items():
        for name in names:
            for lr in args.lrs:
                method = "own" if name.startswith("stochrank") else name
                runs[(metric, name, lr)] = [
                    fit(method, metric, lr, folds[f], args.rounds, args.patience) for f in args.folds
                ]
            print(f"done: {metric} {name}", flush=True)

    table, tests = [], []
    for metric, names in methods.items():
        best = {
            name: max(
                args.lrs, key=lambda lr, name=name: np.mean([r["vali"] for r in runs[(metric, name, lr)]])
            )
            for name in names
        }
        chosen = {name: runs[(metric, name, best[name])] for name in names}
        fold_means = {name: np.array([_mean(r["test"]) for r in chosen[name]]) for name in names}
        for name in names:
            m = fold_means[name]
            table.append(
                [metric, f"`{name}`", fmt(best[name]), f"{m.mean():.4f} ± {m.std(ddof=int(m.size > 1)):.4f}",
                 fmt(np.mean([r["seconds"] for r in chosen[name]]), 2)]
            )  # fmt: skip
        own = names[0]
        for base in names[1:]:
            delta = fold_means[own] - fold_means[base]
            p_fold = (
                ttest_rel(fold_means[own], fold_means[base]).pvalue if len(args.folds) > 1 else float("nan")
            )
            q_own = np.concatenate([r["test"] for r in chosen[own]])
            q_base = np.concatenate([r["test"] for r in chosen[base]])
            keep = ~np.isnan(q_own)
            p_query = ttest_rel(q_own[keep], q_base[keep]).pvalue
            tests.append(
                [metric, f"`{own}` − `{base}`", f"{delta.mean():+.4f}", f"{p_fold:.3f}",
                 f"{np.mean(q_own[keep] - q_base[keep]):+.4f}", f"{p_query:.3f}", str(int(keep.sum()))]
            )  # fmt: skip
    minutes = (time.perf_counter() - wall) / 60
    body = "\n".join(
        [
            section_header("MQ2008: AUC, MAP and precision@10 objectives (issue 15)"),
            (
                f"Folds {', '.join(map(str, args.folds))}; relevant = label ≥ 1; LightGBM 31 leaves / "
                "min_data_in_leaf 20 (LambdaMART on graded labels, stochrank objectives with their defaults: "
                "sigma 1, Newton leaves), XGBoost rank:map depth 6 on binary labels; "
                f"≤ {args.rounds} rounds, early stopping on vali by the column's metric (patience "
                f"{args.patience}); learning rate per method and metric from "
                f"{{{', '.join(map(fmt, args.lrs))}}} by mean vali; 1 thread, one seed. Test metrics "
                "with ties in input order, queries without a relevant document skipped. Wall time "
                f"{minutes:.1f} min."
            ),
            "",
            markdown_table(
                ["metric", "method", "lr", "test (mean ± sd over folds)", "fit s"], table, "lllrr"
            ),
            "",
            (
                "Paired differences, stochrank objective − baseline: over the fold means (t-test, one pair "
                "per fold) and over the pooled test queries (t-test):"
            ),
            "",
            markdown_table(
                ["metric", "pair", "Δ folds", "p (folds)", "Δ queries", "p (queries)", "queries"],
                tests,
                "llrrrrr",
            ),
        ]
    )
    print("\n" + body)
    if not args.quick:
        write_results_section("binary_objectives", body)


if __name__ == "__main__":
    main()
