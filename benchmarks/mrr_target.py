"""Is the smoothed MRR a worse training target for MRR than the smoothed NDCG? (issue 9, claim 2)

Trained on ERR@10 directly, stochrank tested lower on ERR@10 than trained on NDCG ("Optimising ERR@10
directly"): it fitted its training queries as well and generalised worse. Tuned on MQ2008,
``stochrank.mrr()`` ties NDCG-aimed LambdaMART on MRR. This script asks the same question of MRR at fixed
settings on every dataset of issue 9's item 4: the cells of ``training_cutoff.py`` (MQ2008, CatBoost's
query-wise data, LightGBM's ranking example, the generated data; LightGBM and XGBoost trees), with early
stopping, validation and test on whole-list MRR (relevant: label > 0; worst-case ties; queries without a
relevant document skipped). Rows: the booster's LambdaMART (NDCG-aimed, as in the bench),
``stochrank.ndcg(k=5)`` (the dataset's gain) and ``stochrank.mrr()``.

Exploratory (stop 45's plan 2, written before any fit): no default changes. The reading: in how many cells
``mrr()`` validates at least as high as ``ndcg(k=5)`` (6 or more of 8 below it would extend the ERR finding
to MRR), and each cell's test differences with paired t p (Holm over the 8 cells for ``mrr()`` against
LambdaMART as well).

    nice -n 15 python benchmarks/mrr_target.py                       # RESULTS.md
    nice -n 15 python benchmarks/mrr_target.py --boosters xgboost    # one booster's cells
    nice -n 15 python benchmarks/mrr_target.py --quick               # smoke: fold 1, 1 seed, 50 trees
"""

from __future__ import annotations

import time

import numpy as np
from _common import write_results_section
from quality_levers import (
    LEARNING_RATE,
    SYNTHETIC_SIZES,
    Row,
    cached_fits_footer,
    dataset_gain,
    lambdamart,
    lever_arguments,
    p_text,
    sr,
)
from training_cutoff import CELLS, PATIENCE, QUICK_CELLS, CellResult, cell_table, run_cell

import stochrank
from stochrank.bench.results import markdown_table, section_header
from stochrank.bench.stats import holm, paired_t

K = 5


def rows(dataset: str) -> list[Row]:
    """LambdaMART, stochrank.ndcg(k=5) with the dataset's gain, stochrank.mrr() (whole list)."""
    return [
        Row("LambdaMART (the booster's own, NDCG-aimed)", lambdamart),
        Row(f"stochrank.ndcg(k={K}) (NDCG-aimed)", sr(gain=dataset_gain(dataset))),
        Row("stochrank.mrr() (MRR-aimed)", lambda seed: stochrank.mrr(seed=seed)),
    ]


def summary_table(results: list[CellResult]) -> str:
    """Per cell: vali MRR of the three rows, and test mrr() - ndcg(5) and mrr() - LambdaMART with p."""
    p_lambdamart = [paired_t(r.test[2], r.test[0]) for r in results]
    holm_p = holm(p_lambdamart)
    lines = []
    for r, p, adjusted in zip(results, p_lambdamart, holm_p, strict=True):
        versus_lambdamart = f"{np.mean(r.test[2] - r.test[0]):+.4f} (p {p_text(p)}, Holm {p_text(adjusted)})"
        lines.append([r.cell.dataset, r.booster, f"{r.vali(0):.4f}", f"{r.vali(1):.4f}", f"{r.vali(2):.4f}",
                      f"{r.vali_gain():+.4f}", f"{r.fits_not_worse()} of {len(r.runs[1])}",
                      f"{np.mean(r.test[2] - r.test[1]):+.4f} (p {p_text(paired_t(r.test[2], r.test[1]))})",
                      versus_lambdamart])  # fmt: skip
    headers = ["dataset", "booster", "vali MRR, LambdaMART", f"vali MRR, ndcg(k={K})", "vali MRR, mrr()",
               f"vali Δ mrr() − ndcg(k={K})", f"fits with mrr() ≥ ndcg(k={K})",
               f"test Δ mrr() − ndcg(k={K})", "test Δ mrr() − LambdaMART"]  # fmt: skip
    below = sum(r.vali_gain() < 0 for r in results)
    return markdown_table(headers, lines, "llrrrrrrr") + (
        f"\n\n`mrr()` validates below `ndcg(k={K})` in {below} of {len(results)} cells; Holm over the "
        f"{len(results)} cells' `mrr()` − LambdaMART comparisons."
    )


def main() -> None:
    args = lever_arguments(__doc__)
    cells = QUICK_CELLS if args.quick else CELLS
    start = time.perf_counter()
    results = [run_cell(c, b, rows(c.dataset), metric="mrr") for b in args.boosters for c in cells]
    minutes = (time.perf_counter() - start) / 60
    protocol = (
        f"Learning rate {LEARNING_RATE}, LightGBM 31 leaves / XGBoost depth 6, early stopping {PATIENCE} "
        "rounds on vali MRR (whole list, relevant: label > 0, worst ties, queries without a relevant "
        'document skipped), 1 thread per fit; the cells of "a deeper default training cut-off": '
        "MQ2008's official folds 1-5 × seeds 0-2 at ≤ 600 trees, CatBoost's query-wise data (linear gain "
        "for `ndcg(k=5)` and LambdaMART) and LightGBM's ranking example in rotated folds 1-5 × seeds 0-2 "
        "at ≤ 1,200 trees, and "
        f"SYNTHETIC (`nonlinear_mslr`, {' / '.join(map(str, SYNTHETIC_SIZES))} train / vali / test queries "
        "per data fold) data folds 1-2 × seeds 0-1 at ≤ 1,200 trees. Test MRR per query, seeds averaged, "
        "folds pooled; p-values two-sided paired t; MDD: 80 % power, two-sided 5 %. Exploratory (plan "
        "written before any fit): no default changes."
    )
    body = "\n\n".join(
        [
            section_header("Quality levers: MRR as its own training target (issue 9, fixed settings)"),
            protocol,
            summary_table(results),
            *[cell_table(r, "MRR", f"ndcg(k={K})") for r in results],
            cached_fits_footer(minutes),
        ]
    )
    print("\n" + body)
    if not args.quick:
        write_results_section("mrr_target", body)


if __name__ == "__main__":
    main()
