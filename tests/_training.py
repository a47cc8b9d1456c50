"""Shared protocol for the MQ2008 integration tests: fixed settings, early stopping on vali, lr pick, report.

Every fit is :mod:`stochrank.bench.trainers`' (the benchmark's), at fixed settings instead of a random
search. One protocol for every method, so the comparison is fair by construction:

* the same trees, rounds, early stopping, seeds and learning-rate grid for both objectives;
* early stopping on the fold's ``vali`` split by NDCG@5 in the boosters' convention (what LightGBM's and
  XGBoost's own ``ndcg@5`` report), keeping the best iteration;
* one learning rate per method, the grid value with the best mean vali NDCG@5 over the five folds
  (and over the seeds a method is run with);
* the reported number is the mean over folds (and seeds) of test NDCG@5 at the best vali iteration.

NDCG@5 is scored with :func:`stochrank.metrics.ndcg` in the boosters' convention (exp gain
``2**r - 1``, ties in input order, IDCG = 0 counts as 1), for early stopping too.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stochrank.bench.methods import Recipe
from stochrank.bench.protocol import load_fold
from stochrank.bench.trainers import TRAINERS, FitSettings
from stochrank.datasets import RankingSplit
from stochrank.metrics import ndcg as _ndcg

FOLDS = (1, 2, 3, 4, 5)
K = 5


def ndcg_at_5(split: RankingSplit, scores: np.ndarray) -> float:
    """Mean NDCG@5 as LightGBM/XGBoost report it (exp gain, input-order ties, empty query = 1)."""
    return float(_ndcg(split.y, scores, split.group, k=K, gain="exp", ties="input", empty="one"))


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


# ----------------------------------------------------------------------------------------- training
def fit(
    booster: str,
    fold: int,
    seed: int,
    objective: Any,
    learning_rate: float,
    params: dict[str, Any],
    rounds: int,
    patience: int,
) -> FoldRun:
    """Train ``booster`` (``"lightgbm"``, ``"xgboost"``) on ``fold``'s train split with the bench's trainer.

    One thread; at most ``rounds`` trees, early-stopped after ``patience`` rounds without a better vali
    NDCG@5 in the boosters' convention, the best iteration kept. ``objective`` is a booster objective name
    (``"lambdarank"``, ``"rank:ndcg"``) or a stochrank objective (XGBoost: ``obj=`` with ``base_score=0``).
    """
    builtin = isinstance(objective, str)
    recipe = Recipe({"objective": objective}) if builtin else Recipe({}, objective=objective)
    settings = FitSettings(rounds, patience, K, threads=1, ties="input", empty="one")
    data = load_fold("mq2008", fold, None, None, None)
    start = time.perf_counter()
    result = TRAINERS[booster](recipe, {**params, "learning_rate": learning_rate}, data, seed, settings)
    seconds = time.perf_counter() - start
    vali = ndcg_at_5(data.vali, result.vali_scores)
    # The booster early-stopped on the metric reported here (XGBoost logs custom metrics with 6 decimals).
    assert math.isclose(result.curve[result.best_iteration - 1], vali, rel_tol=0.0, abs_tol=1e-6)
    test = ndcg_at_5(data.test, result.test_scores)
    return FoldRun(fold, seed, learning_rate, result.best_iteration, vali, test, seconds)


# ---------------------------------------------------------------------------------------- protocol
def run_method(
    name: str,
    booster: str,
    objective: Callable[[int], Any] | str,
    learning_rates: Sequence[float],
    params: dict[str, Any],
    rounds: int,
    patience: int,
    seeds: Sequence[int] = (0,),
    folds: Sequence[int] = FOLDS,
) -> MethodResult:
    """Return every (learning rate, fold, seed) run of one method on ``booster`` (see :func:`fit`).

    ``objective`` is a booster objective name or a factory ``seed -> objective`` (a fresh stochrank
    objective per run, so no state is shared between runs). ``seed`` also goes to the booster.
    """
    result = MethodResult(name)
    for lr in sorted(learning_rates):
        result.runs[lr] = [
            fit(
                booster,
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
    for row in zip(*per_method, strict=True):
        line = f"  {row[0][0]:>4}"
        for _, trees, vali, test in row:
            line += f" | {trees:>{width - 16}.0f} {vali:>7.4f} {test:>7.4f}"
        lines.append(line)
    line = "  mean"
    for m in methods:
        line += f" | {'':>{width - 16}} {np.mean([r.vali for r in m.selected]):>7.4f} {m.mean_test:>7.4f}"
    lines.append(line)
    return "\n".join(lines)
