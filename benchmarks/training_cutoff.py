"""A deeper default training cut-off for stochrank.ndcg(k), chosen on validation data (issue 9).

Should ``stochrank.ndcg(k)`` train, by default, on the smoothed NDCG at cut-off 2k while being judged,
early-stopped and named at k? On the generated data at ≤ 1,200 trees the cut-off 10 gained +0.0038 test NDCG@5
over 5 on both boosters ("the 600-tree cap"); on MQ2008 it was within noise. A default has to be chosen on
validation data over every dataset of issue 9's item 4, so this script puts the two cut-offs side by side on
each, both boosters, at tree caps stochrank's fits do not reach, with the booster's LambdaMART for context.

Cells (dataset × booster; learning rate 0.05, LightGBM 31 leaves / XGBoost depth 6, early stopping 60 on
vali NDCG@5 with worst ties and queries without a relevant document skipped, one thread per fit):
MQ2008 (official folds 1-5 × seeds 0-2, ≤ 600 trees: "Quality levers"' cached fits, at most 171 trees
kept), CatBoost's query-wise data (linear gain for the objective, the metric and LambdaMART) and
LightGBM's ranking example (rotated folds 1-5 × seeds 0-2, ≤ 1,200 trees), and the generated data
(``nonlinear_mslr``, 2,000 / 1,000 / 2,000 queries per data fold, data folds 1-2 × seeds 0-1, ≤ 1,200
trees: "the 600-tree cap"'s cached fits). Rows: LambdaMART, ``stochrank.ndcg(k=5)`` and
``stochrank.ndcg(k=10)`` judged at 5 (each with the dataset's gain).

Rule, written before any fit (stop 45's plan): 2k becomes the default if its mean validation
NDCG@5 (over folds × seeds) is at least k's in at least 7 of the 8 cells (one-sided sign test p = 0.035);
test NDCG@5 is reported and never used for the choice.

    nice -n 15 python benchmarks/training_cutoff.py                       # RESULTS.md (*)
    nice -n 15 python benchmarks/training_cutoff.py --boosters xgboost    # one booster's fits; no verdict
    nice -n 15 python benchmarks/training_cutoff.py --quick               # smoke: fold 1, 1 seed, 50 trees

* The section's run (198674a) trained only the 180 fits on the two small bundled datasets (~4 min as two
  per-booster processes on 2 cores), its MQ2008 and generated-data fits cached by "Quality levers" and
  ``tree_budget.py``; issue 12's objective repr (8f2d63c) moved every stochrank fit's cache key, so a run
  now retrains those too (about 2 h more; the MRR fits retrained so reproduced every figure).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from _common import write_results_section
from quality_levers import (
    BUILTIN_LAMBDAMART,
    LEARNING_RATE,
    SYNTHETIC_SIZES,
    Row,
    cached_fits_footer,
    dataset_gain,
    lambdamart,
    lever_arguments,
    p_text,
    row_runs,
    seed_mean_test,
    sr,
)
from scipy.stats import binom

from stochrank.bench.results import markdown_table, section_header
from stochrank.bench.stats import minimum_detectable_difference, paired_t

K = 5
DEEPER = 2 * K
PATIENCE = 60
NEEDED = 7  # cells of 8 where the deeper cut-off's vali must be at least k's


@dataclass(frozen=True)
class Cell:
    """One dataset's folds, seeds, tree cap and patience (the booster is the other coordinate of a cell)."""

    dataset: str
    folds: list[int]
    seeds: list[int]
    rounds: int
    patience: int = PATIENCE


CELLS = [
    Cell("mq2008", [1, 2, 3, 4, 5], [0, 1, 2], 600),
    Cell("catboost-querywise", [1, 2, 3, 4, 5], [0, 1, 2], 1200),
    Cell("lightgbm-example", [1, 2, 3, 4, 5], [0, 1, 2], 1200),
    Cell("synthetic", [1, 2], [0, 1], 1200),
]
QUICK_CELLS = [Cell(c.dataset, [1], [0], 50, 10) for c in CELLS]  # --quick: 50 trees, patience 10


def rows(dataset: str) -> list[Row]:
    """LambdaMART, stochrank.ndcg(k=5) and ndcg(k=10) with the dataset's gain (the cached rows' keys)."""
    gain = dataset_gain(dataset)
    return [
        Row("LambdaMART (the booster's own)", lambdamart),
        Row(f"stochrank.ndcg(k={K}) (training cut-off k)", sr(gain=gain)),
        Row(f"stochrank.ndcg(k={DEEPER}) judged @{K} (training cut-off 2k)", sr(k=DEEPER, gain=gain)),
    ]


@dataclass
class CellResult:
    """Per row of a cell: its fits, keyed (fold, seed), and per-query test values.

    Test values are seeds averaged and folds pooled. Rows 0, 1 and 2 are the LambdaMART row, the reference
    stochrank row and the stochrank row under test.
    """

    cell: Cell
    booster: str
    names: list[str]
    runs: list[dict[tuple[int, int], dict[str, Any]]]
    test: list[np.ndarray]

    def vali(self, i: int) -> float:
        return float(np.mean([r["vali"] for r in self.runs[i].values()]))

    def vali_gain(self) -> float:
        """Mean validation value of the row under test minus the reference's (plan 1's rule's number)."""
        return self.vali(2) - self.vali(1)

    def fits_not_worse(self) -> int:
        """The (fold, seed) fits where the row under test validates at least as high as the reference."""
        return sum(self.runs[2][key]["vali"] >= self.runs[1][key]["vali"] for key in self.runs[1])


def run_cell(cell: Cell, booster: str, cell_rows: list[Row], metric: str = f"ndcg@{K}") -> CellResult:
    """Every fit of ``cell_rows`` in one (dataset, booster) cell, early-stopped and judged on ``metric``."""
    runs, test = [], []
    for row in cell_rows:
        fits = row_runs(
            row, booster, cell.dataset, cell.folds, cell.seeds, LEARNING_RATE, cell.rounds, cell.patience,
            metric=metric,
        )  # fmt: skip
        runs.append(fits)
        test.append(seed_mean_test(fits, cell.folds, cell.seeds))
        vali = np.mean([r["vali"] for r in fits.values()])
        print(f"{booster:9s} {cell.dataset:19s} {row.name:52s} vali {vali:.4f}", flush=True)
    return CellResult(cell, booster, [row.name for row in cell_rows], runs, test)


def versus(q: np.ndarray, ref: np.ndarray) -> str:
    """Mean per-query difference q - ref with its paired t p-value ("—" for the row itself)."""
    return "—" if q is ref else f"{np.mean(q - ref):+.4f} (p {p_text(paired_t(q, ref))})"


def cell_table(result: CellResult, label: str = f"NDCG@{K}", reference: str = "cut-off k") -> str:
    """One cell's rows: vali, test, trees kept, test differences with p and MDD.

    ``label`` names the target, ``reference`` row 1 (the stochrank row the others are compared with).
    """
    cell = result.cell
    base, compared_with = result.test[0], result.test[1]
    lines = []
    for i, name in enumerate(result.names):
        q, fits = result.test[i], list(result.runs[i].values())
        trees = [r["trees"] for r in fits]
        at_cap = sum(t == cell.rounds for t in trees)
        seconds = np.mean([r["seconds"] for r in fits])
        kept = f"{np.mean(trees):.0f} / {max(trees)}"
        lines.append([name, f"{result.vali(i):.4f}", f"{q.mean():.4f}", kept, str(at_cap), f"{seconds:.1f}",
                      versus(q, base), versus(q, compared_with) if i else "",
                      "—" if q is base else f"{minimum_detectable_difference(q, base):.4f}"])  # fmt: skip
    headers = ["row", f"vali {label}", f"test {label}", "trees mean / max", "fits at the cap", "fit s",
               "Δ test vs LambdaMART", f"Δ test vs {reference}",
               "MDD vs LambdaMART"]  # fmt: skip
    title = (
        f"**{cell.dataset}, {result.booster} (LambdaMART = `{BUILTIN_LAMBDAMART[result.booster]}`), "
        f"{dataset_gain(cell.dataset)} gain, folds {', '.join(map(str, cell.folds))} × seeds "
        f"{', '.join(map(str, cell.seeds))}, ≤ {cell.rounds} trees ({compared_with.size} test queries)**"
    )
    return f"{title}\n\n" + markdown_table(headers, lines, "lrrrrrrrr")


def rule_table(results: list[CellResult], complete: bool) -> str:
    """The rule's table: each cell's vali difference 2k - k, and the verdict (a full run only)."""
    lines = []
    for r in results:
        gain = r.vali_gain()
        test = r.test[2] - r.test[1]
        lines.append([r.cell.dataset, r.booster, f"{r.vali(1):.4f}", f"{r.vali(2):.4f}", f"{gain:+.4f}",
                      "yes" if gain >= 0 else "no", f"{r.fits_not_worse()} of {len(r.runs[1])}",
                      f"{test.mean():+.4f} (p {p_text(paired_t(r.test[2], r.test[1]))})"])  # fmt: skip
    headers = ["dataset", "booster", f"vali, cut-off {K}", f"vali, cut-off {DEEPER}", "vali Δ",
               "2k ≥ k on vali", "fits with 2k ≥ k", "test Δ (not used)"]  # fmt: skip
    table = markdown_table(headers, lines, "llrrrlrr")
    met = sum(r.vali_gain() >= 0 for r in results)
    if not complete:
        return table + "\n\nVerdict: not assessed (the rule needs both boosters' cells)."
    p = binom.sf(met - 1, len(results), 0.5)
    outcome = "met: 2k becomes the default" if met >= NEEDED else "not met: the default stays k"
    return table + (
        f"\n\nVerdict: 2k ≥ k on validation in {met} of {len(results)} cells (needed {NEEDED}; one-sided "
        f"sign test p = {p:.3f}): the rule is {outcome}."
    )


def main() -> None:
    args = lever_arguments(__doc__)
    cells = QUICK_CELLS if args.quick else CELLS
    start = time.perf_counter()
    results = [run_cell(cell, booster, rows(cell.dataset)) for booster in args.boosters for cell in cells]
    minutes = (time.perf_counter() - start) / 60
    complete = not args.quick and sorted(args.boosters) == ["lightgbm", "xgboost"]
    protocol = (
        f"Learning rate {LEARNING_RATE}, LightGBM 31 leaves / XGBoost depth 6, early stopping {PATIENCE} "
        "rounds on vali NDCG@5 (worst ties, queries without a relevant document skipped), 1 thread per fit; "
        "MQ2008's official folds at ≤ 600 trees (the cap does not bind; \"Quality levers\"' fits), "
        "CatBoost's query-wise data (linear gain for the objectives, the metric and LambdaMART: LightGBM "
        "`label_gain` 0..6, XGBoost `ndcg_exp_gain=False`) and LightGBM's ranking example in their rotated "
        "folds, and "
        f"SYNTHETIC (`nonlinear_mslr`, {' / '.join(map(str, SYNTHETIC_SIZES))} train / vali / test queries "
        'per data fold; "the 600-tree cap"\'s fits) at ≤ 1,200 trees. Test NDCG@5 per query, seeds '
        "averaged, folds pooled; p-values two-sided paired t, not corrected; MDD: 80 % power, two-sided 5 %. "
        f"The rule, written before any fit: the cut-off {DEEPER} becomes `stochrank.ndcg({K})`'s default "
        f"training cut-off if its mean vali NDCG@5 is at least the cut-off {K}'s in at least {NEEDED} of the "
        "8 cells; test is reported, never used for the choice."
    )
    body = "\n\n".join(
        [
            section_header("Quality levers: a deeper default training cut-off (issue 9, validation choice)"),
            protocol,
            rule_table(results, complete),
            *[cell_table(r) for r in results],
            cached_fits_footer(minutes),
        ]
    )
    print("\n" + body)
    if not args.quick:
        write_results_section("training_cutoff", body)


if __name__ == "__main__":
    main()
