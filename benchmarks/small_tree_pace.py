"""Stumps and 4-leaf trees at higher learning rates: pace or objective? (issue 9, exploratory).

``misspecified_trees.py`` found stochrank far below LambdaMART with stumps and 4-leaf trees on the generated
data (−0.03 … −0.17 NDCG@5), but at learning rate 0.05 every fit of both methods ran to the 600-tree cap, so
the objective was not separated from its pace (a Newton leaf of ``stochrank.ndcg`` moves at about half the
pace of ``lambdarank``'s at the same rate). Here both methods train at learning rates 0.2 and 0.4 and each
chooses its rate on validation.

Rows (≤ 600 trees, early stopping 60 rounds on validation NDCG@5, 1 thread; "Quality levers"' generated data,
2 data folds × seeds 0, 1): the booster's LambdaMART and ``stochrank.ndcg(k=5)``'s defaults, each at learning
rate 0.2 and 0.4; trees: stumps (LightGBM ``num_leaves`` 2, XGBoost ``max_depth`` 1) and 4 leaves
(``num_leaves`` 4, ``max_depth`` 2). The plan, written before any fit (2026-11-29 04:51 UTC): per (trees,
booster) cell each method's rate is the one with the higher mean validation NDCG@5 over the cell's fits (test
never used); primary, chosen stochrank minus chosen LambdaMART, paired t over the test queries, Holm over the
four cells. If no cell is significantly negative, the losses of ``misspecified_trees.py`` are the budget's;
a cell that stays significantly negative with its chosen fits below the cap ("trees kept < 600 in most
fits") is the objective's; a cell whose chosen fits still reach the cap is inconclusive. Nothing here becomes
API. After the fits were seen, a stricter sense of "below the cap" was added to the table, not to the
reading: a fit whose best iteration is 540 or later ran all 600 rounds (early stopping could not end it).

    nice -n 15 python benchmarks/small_tree_pace.py --boosters lightgbm   # one booster's fits (cached)
    nice -n 15 python benchmarks/small_tree_pace.py                       # both; writes RESULTS.md
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from misspecified_trees import PATIENCE, ROUNDS, SYNTHETIC_FOLDS, SYNTHETIC_SEEDS, TREES, family_section
from quality_levers import (
    BUDGET_ROWS,
    ROWS,
    TREE,
    Row,
    booster_table,
    lambdamart,
    p_text,
    row_runs,
    seed_mean_test,
)

from stochrank.bench.results import markdown_table
from stochrank.bench.stats import holm, paired_t

RATE = 0.2
TABLE_ROWS = [
    ROWS[0],
    ROWS[1],
    Row("LambdaMART at twice the learning rate", lambdamart, lr_factor=2.0),
    BUDGET_ROWS[3],  # the defaults at twice the learning rate
]
METHODS = {"LambdaMART": (0, 2), "stochrank": (1, 3)}  # the table rows of each method's two rates
FOLDS, SEEDS = SYNTHETIC_FOLDS, SYNTHETIC_SEEDS


@dataclass(frozen=True)
class Choice:
    """A method's rate in one cell, chosen on mean validation NDCG@5, and what its fits kept."""

    rate: float
    test: np.ndarray  # per query, seeds averaged, folds concatenated
    trees: list[int]  # kept by each (fold, seed) fit

    def share(self, condition: Callable[[int], bool]) -> float:
        """The share of the fits whose kept trees meet ``condition``."""
        return float(np.mean([condition(t) for t in self.trees]))


def ran_all_rounds(trees: int) -> bool:
    """True when early stopping could not end the fit before the cap (best iteration ≥ ROUNDS − PATIENCE)."""
    return trees >= ROUNDS - PATIENCE


def chosen(booster: str, trees: str, method: str) -> Choice:
    """The method's rate with the higher mean vali NDCG@5 over the cell's fits (test never used)."""
    best: tuple[float, Choice] | None = None
    for index in METHODS[method]:
        row = TABLE_ROWS[index]
        runs = row_runs(
            row, booster, "synthetic", FOLDS, SEEDS, RATE, ROUNDS, PATIENCE, TREES[trees][booster]
        )
        vali = float(np.mean([r["vali"] for r in runs.values()]))
        if best is None or vali > best[0]:
            test = seed_mean_test(runs, FOLDS, SEEDS)
            best = (vali, Choice(RATE * row.lr_factor, test, [r["trees"] for r in runs.values()]))
    assert best is not None
    return best[1]


def reading(significant_loss: bool, choices: tuple[Choice, Choice]) -> str:
    """The plan's reading: a significant loss with most chosen fits under the tree cap is the objective's."""
    if not significant_loss:
        return "no significant loss"
    below_cap = all(c.share(lambda t: t < ROUNDS) > 0.5 for c in choices)
    return "the objective's" if below_cap else "inconclusive"


def verdict_table(boosters: list[str]) -> str:
    """The plan's primary family: chosen stochrank minus chosen LambdaMART per cell, Holm over the cells."""
    cells = [(trees, b) for trees in TREES for b in boosters]
    found = [(chosen(b, trees, "LambdaMART"), chosen(b, trees, "stochrank")) for trees, b in cells]
    p = [paired_t(sr_.test, lm.test) for lm, sr_ in found]
    rows = []
    for (trees, booster), (lm, sr_), p_raw, p_holm in zip(cells, found, p, holm(p), strict=True):
        delta = float(np.mean(sr_.test - lm.test))
        rows.append([
            trees, booster,
            *(f"{c.rate:g} ({np.mean(c.trees):.0f} trees; {c.share(ran_all_rounds):.0%} ran all rounds)"
              for c in (lm, sr_)),
            f"{delta:+.4f}", p_text(p_raw), p_text(p_holm), reading(delta < 0 and p_holm < 0.05, (lm, sr_)),
        ])  # fmt: skip
    headers = ["trees", "booster", "LambdaMART's rate", "stochrank's rate", "stochrank − LambdaMART", "p (t)",
               "Holm p", "plan's reading"]  # fmt: skip
    return markdown_table(headers, rows, "llllrrrl") + (
        f"\n\nplan's reading: a loss significant after Holm whose chosen fits keep fewer than {ROUNDS} trees "
        "in most fits (both methods) is the objective's. ran all rounds (added after the fits were seen, not "
        f"in the plan): fits whose best iteration is {ROUNDS - PATIENCE} or later, so that early stopping "
        f"({PATIENCE} rounds) could not end them before the {ROUNDS}-tree cap; read so, only the XGBoost "
        "stump cell has most stochrank fits ending before the cap."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boosters", nargs="+", default=["lightgbm", "xgboost"], choices=sorted(TREE))
    args = parser.parse_args()
    start = time.perf_counter()
    tables = [
        booster_table(b, "synthetic", FOLDS, SEEDS, RATE, ROUNDS, PATIENCE, TABLE_ROWS, TREES[trees][b])
        for trees in TREES
        for b in args.boosters
    ]
    family = (
        "**The plan's family** (each method's rate chosen per cell on validation; p paired t, Holm over the "
        "cells):"
    )
    family_section(
        __doc__, "Quality levers: small trees at higher learning rates (issue 9, exploratory)",
        "small_tree_pace", family, verdict_table(args.boosters), tables, args.boosters, start,
    )  # fmt: skip


if __name__ == "__main__":
    main()
