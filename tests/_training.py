"""Shared protocol for the MQ2008 integration tests: train, early-stop on vali, pick lr, report.

One protocol for every method, so the comparison is fair by construction:

* the same trees, rounds, early stopping, seeds and learning-rate grid for both objectives;
* early stopping on the fold's ``vali`` split by NDCG@5 (the booster's own ``ndcg@5``), keeping the
  best iteration;
* one learning rate per method, the grid value with the best mean vali NDCG@5 over the five folds
  (and over the seeds a method is run with);
* the reported number is the mean over folds (and seeds) of test NDCG@5 at the best vali iteration.

NDCG@5 is scored with :func:`stochrank.metrics.ndcg` in the boosters' convention (exp gain
``2**r - 1``, ties in input order, IDCG = 0 counts as 1), which is what LightGBM's and XGBoost's own
``ndcg@5`` report.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stochrank.datasets import RankingSplit, load_mq2008
from stochrank.metrics import ndcg as _ndcg

FOLDS = (1, 2, 3, 4, 5)
K = 5


def ndcg_at_5(split: RankingSplit, scores: np.ndarray) -> float:
    """Mean NDCG@5 as LightGBM/XGBoost report it (exp gain, input-order ties, empty query = 1)."""
    return float(_ndcg(split.y, scores, split.group, k=K, gain="exp", ties="input", empty="one"))


@functools.cache
def mq2008(fold: int) -> tuple[RankingSplit, RankingSplit, RankingSplit]:
    """(train, vali, test) of one MQ2008 fold, loaded once per process."""
    return tuple(load_mq2008(fold, split) for split in ("train", "vali", "test"))  # type: ignore[return-value]


@dataclass(frozen=True)
class FoldRun:
    fold: int
    seed: int
    learning_rate: float
    best_iteration: int  # 1-based number of trees kept
    vali: float
    test: float
    seconds: float


@dataclass
class MethodResult:
    """All runs of one method over the learning-rate grid, and the vali-selected learning rate."""

    name: str
    runs: dict[float, list[FoldRun]] = field(default_factory=dict)

    def mean_vali(self, lr: float) -> float:
        return float(np.mean([r.vali for r in self.runs[lr]]))

    @property
    def learning_rate(self) -> float:
        # Ties (exact equality only) go to the smaller learning rate: grid order is ascending.
        return max(sorted(self.runs), key=self.mean_vali)

    @property
    def selected(self) -> list[FoldRun]:
        return self.runs[self.learning_rate]

    def fold_means(self) -> list[tuple[int, float, float, float]]:
        """(fold, mean kept trees, mean vali, mean test) of the selected runs, averaged over seeds."""
        out = []
        for fold in sorted({r.fold for r in self.selected}):
            rs = [r for r in self.selected if r.fold == fold]
            out.append(
                (
                    fold,
                    *(
                        float(np.mean([getattr(r, a) for r in rs]))
                        for a in ("best_iteration", "vali", "test")
                    ),
                )
            )
        return out

    @property
    def mean_test(self) -> float:
        return float(np.mean([r.test for r in self.selected]))

    @property
    def seconds(self) -> float:
        return float(sum(r.seconds for runs in self.runs.values() for r in runs))


# ---------------------------------------------------------------------------------------- LightGBM
def train_lightgbm(fold: int, seed: int, objective: Any, learning_rate: float, params: dict[str, Any], rounds: int,
                   patience: int) -> FoldRun:  # fmt: skip
    """Train ``lgb.train`` on ``fold``'s train split, early-stopped on vali NDCG@5."""
    import lightgbm as lgb

    train, vali, test = mq2008(fold)
    start = time.perf_counter()
    dtrain = lgb.Dataset(train.X, train.y, group=train.group)
    dvali = lgb.Dataset(vali.X, vali.y, group=vali.group, reference=dtrain)
    full = {
        "objective": objective,
        "metric": "ndcg",
        "eval_at": [K],
        "learning_rate": learning_rate,
        "verbosity": -1,
        "seed": seed,
        **params,
    }
    booster = lgb.train(
        full, dtrain, num_boost_round=rounds, valid_sets=[dvali], valid_names=["vali"],
        callbacks=[lgb.early_stopping(patience, first_metric_only=True, verbose=False)],
    )  # fmt: skip
    best = booster.best_iteration or booster.current_iteration()
    vali_score = ndcg_at_5(vali, booster.predict(vali.X, num_iteration=best))
    test_score = ndcg_at_5(test, booster.predict(test.X, num_iteration=best))
    return FoldRun(fold, seed, learning_rate, best, vali_score, test_score, time.perf_counter() - start)


# ----------------------------------------------------------------------------------------- XGBoost
def train_xgboost(fold: int, seed: int, objective: Any, learning_rate: float, params: dict[str, Any], rounds: int,
                  patience: int) -> FoldRun:  # fmt: skip
    """Train ``xgb.train`` on ``fold``'s train split, early-stopped on vali NDCG@5.

    ``objective`` is an XGBoost objective name (``"rank:ndcg"``) or a stochrank objective, which is
    passed as ``obj=`` with ``base_score=0``.
    """
    import xgboost as xgb

    train, vali, test = mq2008(fold)
    start = time.perf_counter()
    dtrain = xgb.DMatrix(train.X, train.y, group=train.group)
    dvali = xgb.DMatrix(vali.X, vali.y, group=vali.group)
    full = {"eval_metric": f"ndcg@{K}", "learning_rate": learning_rate, "seed": seed, **params}
    obj: Callable[..., Any] | None = None
    if isinstance(objective, str):
        full["objective"] = objective
    else:
        obj = objective
        full["base_score"] = 0.0
    booster = xgb.train(
        full, dtrain, num_boost_round=rounds, evals=[(dvali, "vali")], obj=obj,
        early_stopping_rounds=patience, verbose_eval=False,
    )  # fmt: skip
    best = booster.best_iteration + 1
    vali_score = ndcg_at_5(
        vali, booster.predict(xgb.DMatrix(vali.X), iteration_range=(0, best), output_margin=True)
    )
    test_score = ndcg_at_5(
        test, booster.predict(xgb.DMatrix(test.X), iteration_range=(0, best), output_margin=True)
    )
    return FoldRun(fold, seed, learning_rate, best, vali_score, test_score, time.perf_counter() - start)


# ---------------------------------------------------------------------------------------- protocol
def run_method(name: str, train: Callable[..., FoldRun], objective: Callable[[int], Any] | str,
               learning_rates: Sequence[float], params: dict[str, Any], rounds: int, patience: int,
               seeds: Sequence[int] = (0,), folds: Sequence[int] = FOLDS) -> MethodResult:  # fmt: skip
    """Every (learning rate, fold, seed) run of one method.

    ``objective`` is a booster objective name or a factory ``seed -> objective`` (a fresh stochrank
    objective per run, so no state is shared between runs). ``seed`` also goes to the booster.
    """
    result = MethodResult(name)
    for lr in sorted(learning_rates):
        result.runs[lr] = [
            train(
                fold,
                seed,
                objective if isinstance(objective, str) else objective(seed),
                lr,
                params,
                rounds,
                patience,
            )
            for fold in folds
            for seed in seeds
        ]
    return result


def report(title: str, methods: Sequence[MethodResult]) -> str:
    """Per-fold table of the selected runs (means over seeds) and the vali means over the lr grid."""
    lines = [title]
    for m in methods:
        grid = ", ".join(f"lr={lr:g}: {m.mean_vali(lr):.4f}" for lr in sorted(m.runs))
        seeds = sorted({r.seed for r in m.selected})
        lines.append(
            f"  {m.name}: mean vali NDCG@5 by lr [{grid}] -> lr={m.learning_rate:g}; "
            f"seeds {seeds}; {m.seconds:.0f}s of training"
        )
    width = max(24, *(len(m.name) for m in methods))
    lines.append("  fold" + "".join(f" | {m.name:^{width}}" for m in methods))
    lines.append("      " + "".join(f" | {'trees':>{width - 16}} {'vali':>7} {'test':>7}" for _ in methods))
    per_method = [m.fold_means() for m in methods]
    for row in zip(*per_method):
        line = f"  {row[0][0]:>4}"
        for _, trees, vali, test in row:
            line += f" | {trees:>{width - 16}.0f} {vali:>7.4f} {test:>7.4f}"
        lines.append(line)
    line = "  mean"
    for m in methods:
        line += f" | {'':>{width - 16}} {np.mean([r.vali for r in m.selected]):>7.4f} {m.mean_test:>7.4f}"
    lines.append(line)
    return "\n".join(lines)
