"""Stumps and 4-leaf trees: does the training objective matter more with small trees? (issue 9, exploratory).

"The generated data's Bayes rankings" shows that with 31-leaf / depth-6 trees at fixed settings LambdaMART and
stochrank close 96-98 % of the gap from a random order to a per-document reference score. Stumps cannot
represent that score (they make an additive model: no x1 x2 term, no product with the topic's view), so with
them the objective decides which errors the model keeps: where optimising the metric itself should pay, if
anywhere. 4-leaf trees can only approximate it, with many of them.

Rows (the fixed settings of "Quality levers": learning rate 0.05, ≤ 600 trees, early stopping 60 rounds on
validation NDCG@5; its generated data, 2 data folds × 2 seeds, 4,000 test queries, and MQ2008's 5 folds × 3
seeds): LambdaMART, ``stochrank.ndcg(k=5)``'s defaults and its training cut-off 10. Trees: stumps
(LightGBM ``num_leaves`` 2, XGBoost ``max_depth`` 1) and 4 leaves (``num_leaves`` 4, ``max_depth`` 2). The
plan, written before any fit (2026-11-29 02:35 UTC): primary, the defaults minus LambdaMART on the generated
data in the four (trees, booster) cells, paired t, Holm over the four; the objective matters under
misspecification if a cell is significant after Holm. The cut-off row and MQ2008 are secondary
(uncorrected). Nothing here becomes API.

    nice -n 15 python benchmarks/misspecified_trees.py --boosters lightgbm   # one booster's fits (cached)
    nice -n 15 python benchmarks/misspecified_trees.py                       # both; writes RESULTS.md
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
from _common import write_results_section
from quality_levers import (
    BUDGET_ROWS,
    LEARNING_RATE,
    ROWS,
    TREE,
    booster_table,
    cached_fits_footer,
    load,
    p_text,
    row_runs,
    seed_mean_test,
)
from synthetic_ceiling import RANKINGS, REFERENCE, per_query

from stochrank.bench.results import markdown_table, section_header
from stochrank.bench.stats import holm, paired_t

TABLE_ROWS = [ROWS[0], ROWS[1], BUDGET_ROWS[4]]
TREES: dict[str, dict[str, dict[str, Any]]] = {
    "stumps": {"lightgbm": {"num_leaves": 2}, "xgboost": {"max_depth": 1}},
    "4 leaves": {"lightgbm": {"num_leaves": 4}, "xgboost": {"max_depth": 2}},
}
ROUNDS, PATIENCE = 600, 60
SYNTHETIC_FOLDS, SYNTHETIC_SEEDS = [1, 2], [0, 1]
MQ2008_FOLDS, MQ2008_SEEDS = [1, 2, 3, 4, 5], [0, 1, 2]
DATA = [("synthetic", SYNTHETIC_FOLDS, SYNTHETIC_SEEDS), ("mq2008", MQ2008_FOLDS, MQ2008_SEEDS)]


def synthetic_test(row_index: int, booster: str, tree: dict[str, Any]) -> np.ndarray:
    """Per-query test NDCG@5 of a table row on the generated data (cached fits, seeds averaged)."""
    runs = row_runs(
        TABLE_ROWS[row_index], booster, "synthetic", SYNTHETIC_FOLDS, SYNTHETIC_SEEDS, LEARNING_RATE, ROUNDS,
        PATIENCE, tree,
    )  # fmt: skip
    return seed_mean_test(runs, SYNTHETIC_FOLDS, SYNTHETIC_SEEDS)


def verdict_table(boosters: list[str]) -> str:
    """The plan's primary family: the defaults minus LambdaMART per (trees, booster), Holm over the cells."""
    reference = np.concatenate(
        [
            per_query(test, RANKINGS[REFERENCE](test))
            for test in (load("synthetic", f).test for f in SYNTHETIC_FOLDS)
        ]
    )
    cells = [(name, b) for name in TREES for b in boosters]
    found = []
    for name, booster in cells:
        lambdamart, defaults = (synthetic_test(i, booster, TREES[name][booster]) for i in (0, 1))
        found.append((defaults - lambdamart, paired_t(defaults, lambdamart), lambdamart, defaults))
    adjusted = holm([p for _, p, _, _ in found])
    rows = []
    for (name, booster), (delta, p, lambdamart, defaults), p_holm in zip(cells, found, adjusted, strict=True):
        rows.append([
            name, booster, f"{np.mean(lambdamart - reference):+.4f}", f"{np.mean(defaults - reference):+.4f}",
            f"{delta.mean():+.4f}", p_text(p), p_text(p_holm), "yes" if p_holm < 0.05 else "no",
        ])  # fmt: skip
    headers = ["trees", "booster", "LambdaMART − ref.", "defaults − ref.", "defaults − LambdaMART", "p (t)",
               "Holm p", "significant"]  # fmt: skip
    return markdown_table(headers, rows, "llrrrrrl")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boosters", nargs="+", default=["lightgbm", "xgboost"], choices=sorted(TREE))
    args = parser.parse_args()
    start = time.perf_counter()
    tables = [
        booster_table(b, dataset, folds, seeds, LEARNING_RATE, ROUNDS, PATIENCE, TABLE_ROWS, trees[b])
        for trees in TREES.values()
        for dataset, folds, seeds in DATA
        for b in args.boosters
    ]
    family = (
        "**The plan's family** (generated data; ref.: the per-document shrunk-view score of \"The generated "
        "data's Bayes rankings\", on the same test queries; p paired t, Holm over the cells):"
    )
    family_section(
        __doc__, "Quality levers: stumps and 4-leaf trees (issue 9, exploratory)", "misspecified_trees",
        family, verdict_table(args.boosters), tables, args.boosters, start,
    )  # fmt: skip


def family_section(
    doc: str,
    title: str,
    section: str,
    family: str,
    verdict: str,
    tables: list[str],
    boosters: list[str],
    start: float,
) -> None:
    """Print a small-tree script's verdict; with both boosters, write its RESULTS section.

    The section is ``title``, the protocol (the third paragraph of the script's ``doc``), ``family`` and
    ``verdict``, the per-booster ``tables`` and the cached-fits footer timed from ``start``.
    """
    print(verdict)
    if sorted(boosters) != sorted(TREE):
        print("One booster's fits are cached; run with both boosters to write RESULTS.md.")
        return
    protocol = " ".join(doc.split("\n\n")[2].split()).replace("``", "`")
    footer = cached_fits_footer((time.perf_counter() - start) / 60)
    body = "\n\n".join([section_header(title), protocol, family, verdict, *tables, footer])
    write_results_section(section, body)


if __name__ == "__main__":
    main()
