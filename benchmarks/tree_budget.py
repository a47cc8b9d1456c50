"""The 600-tree cap at learning rate 0.05 on the generated data: the same rows at ≤ 1,200 trees (issue 9).

At learning rate 0.05 with ≤ 600 trees stochrank's defaults keep 589 (LightGBM) / 598 (XGBoost) trees on
the generated data: the cap binds. Their gap to LambdaMART there, and the gain row and feature subsampling
gives them ("the tree learner's randomisation"), may then be the cap's rather than what the trees learn. At
twice the learning rate the subsampling gain was not significant, but rate and cap changed together. Here
the rate stays 0.05 and the cap doubles.

Rows (both boosters; the generated nonlinear data, 2 data folds × 2 seeds; LightGBM 31 leaves / XGBoost
depth 6; early stopping 60 on validation NDCG@5): LambdaMART and stochrank's defaults, each plain and with
row and feature subsampling 0.8, at ≤ 1,200 trees, printed beside the same rows at ≤ 600 trees (the
cached fits of "Quality levers" and ``tree_randomisation.py``; the cut-off rows' were retrained here, same
cache keys and scores), with the equal-treatment pair tables at
both caps and, per booster, each difference at both caps with the paired test of its change. Exploratory:
the rows and the reading were written down before any of the 1,200-tree fits; no verdict rule. A
second plan, written after the first rows' results and before its own fits, added the training cut-offs
k = 10 and k = 20 (judged at 5; "Quality levers"' rows, whose gain at ≤ 600 trees might be the cap's too).

    nice -n 15 python benchmarks/tree_budget.py          # RESULTS.md
    nice -n 15 python benchmarks/tree_budget.py --quick  # smoke: fold 1, 1 seed, 50 / 100 trees; no write
"""

from __future__ import annotations

import time

import numpy as np
from _common import write_results_section
from quality_levers import (
    LEARNING_RATE,
    ROWS,
    SYNTHETIC_SIZES,
    Row,
    booster_table,
    cached_fits_footer,
    lever_arguments,
    lever_settings,
    p_text,
    row_runs,
    seed_mean_test,
)
from tree_randomisation import SUBSAMPLING, pair_table

from stochrank.bench.results import markdown_table, section_header
from stochrank.bench.stats import paired_t

# LambdaMART, the defaults, each with subsampling 0.8 (the rows of tree_randomisation.py, same cache keys),
# and the deeper training cut-offs of "Quality levers" (k = 10 and 20, judged at 5; added by a second plan)
BUDGET_ROWS = [ROWS[0], ROWS[1], SUBSAMPLING[1], SUBSAMPLING[2], ROWS[6], ROWS[7]]


# (what, row a, row b): the difference a - b whose change from the first cap to the second is tested
CONTRASTS = [
    ("stochrank − LambdaMART", ROWS[1], ROWS[0]),
    ("subsampling's gain for LambdaMART", SUBSAMPLING[1], ROWS[0]),
    ("subsampling's gain for stochrank", SUBSAMPLING[2], ROWS[1]),
    ("stochrank − LambdaMART, both subsampled", SUBSAMPLING[2], SUBSAMPLING[1]),
    ("cut-off k = 10's gain for stochrank", ROWS[6], ROWS[1]),
    ("cut-off k = 20's gain for stochrank", ROWS[7], ROWS[1]),
]


def change_table(
    booster: str, folds: list[int], seeds: list[int], caps: tuple[int, int], patience: int
) -> str:
    """Each contrast at both caps and its change between them, with the paired t p-value of the change."""

    def test(row: Row, rounds: int) -> np.ndarray:
        runs = row_runs(row, booster, "synthetic", folds, seeds, LEARNING_RATE, rounds, patience)
        return seed_mean_test(runs, folds, seeds)

    lines = []
    for what, a, b in CONTRASTS:
        first, second = (test(a, rounds) - test(b, rounds) for rounds in caps)
        lines.append([what, f"{first.mean():+.4f}", p_text(paired_t(first, np.zeros_like(first))),
                      f"{second.mean():+.4f}", p_text(paired_t(second, np.zeros_like(second))),
                      f"{np.mean(second - first):+.4f}", p_text(paired_t(second, first))])  # fmt: skip
    headers = ["difference (test NDCG@5)", f"≤ {caps[0]} trees", "p t", f"≤ {caps[1]} trees", "p t",
               "change", "p t of the change"]  # fmt: skip
    return (
        f"**synthetic, {booster}, learning rate {LEARNING_RATE}: each difference at ≤ {caps[0]} and "
        f"≤ {caps[1]} trees, and its change (paired per query)**\n\n"
        + markdown_table(headers, lines, "lrrrrrr")
    )


def main() -> None:
    args = lever_arguments(__doc__)
    settings = lever_settings(args)
    folds, seeds, patience = settings["budget_folds"], settings["budget_seeds"], settings["patience"]
    caps = (settings["rounds"], 2 * settings["rounds"])
    start = time.perf_counter()
    tables = []
    for booster in args.boosters:
        tables += [
            booster_table(booster, "synthetic", folds, seeds, LEARNING_RATE, rounds, patience, BUDGET_ROWS)
            for rounds in caps
        ]
        tables += [
            pair_table("synthetic", booster, [SUBSAMPLING], folds, seeds, LEARNING_RATE, rounds, patience)
            for rounds in caps
        ]
        tables.append(change_table(booster, folds, seeds, caps, patience))
    minutes = (time.perf_counter() - start) / 60
    protocol = (
        f"Learning rate {LEARNING_RATE}, LightGBM 31 leaves / XGBoost depth 6, early stopping {patience} "
        f"rounds on vali NDCG@5, ≤ {caps[0]} and ≤ {caps[1]} trees; SYNTHETIC (`nonlinear_mslr`, "
        f"{' / '.join(map(str, SYNTHETIC_SIZES))} train / vali / test queries) data folds "
        f"{', '.join(map(str, folds))} × seeds {', '.join(map(str, seeds))}; 1 thread per fit; test NDCG@5 "
        "per query, seeds averaged; p-values two-sided, paired t / sign-flip randomization, not corrected "
        f'for the number of rows. The ≤ {caps[0]}-tree fits are those of "Quality levers" and "the tree '
        "learner's randomisation\" (same cache keys; the cut-off rows' were retrained by this script, with "
        '"Quality levers"\' scores). Subsampling: LightGBM `bagging_fraction` = '
        "`feature_fraction` = 0.8 with `bagging_freq` 1; XGBoost `subsample` = `colsample_bytree` = 0.8."
    )
    body = "\n\n".join(
        [
            section_header(
                "Quality levers: the 600-tree cap at learning rate 0.05 (issue 9, fixed settings)"
            ),
            protocol,
            *tables,
            cached_fits_footer(minutes),
        ]
    )
    print("\n" + body)
    if not args.quick:
        write_results_section("tree_budget", body)


if __name__ == "__main__":
    main()
