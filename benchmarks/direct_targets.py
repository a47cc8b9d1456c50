"""Is a metric its own best training target? MRR, ERR@10 and NDCG@1 aimed directly (issue 9, claim 2).

Trained on ERR@10 directly, stochrank tested lower on ERR@10 than trained on NDCG ("Optimising ERR@10
directly", generated data): it fitted its training queries as well and generalised worse. Tuned on MQ2008,
``stochrank.mrr()``, ``err(k=10)`` and ``ndcg(k=1)`` tie NDCG-aimed LambdaMART on their own metrics. This
script asks the question of each target at fixed settings on every dataset of issue 9's item 4: the cells of
``training_cutoff.py`` (MQ2008, CatBoost's query-wise data, LightGBM's ranking example, the generated data;
LightGBM and XGBoost trees), with early stopping, validation and test on the target (worst-case ties;
queries without a relevant document skipped). Rows per target: the booster's LambdaMART (NDCG-aimed, as in
the bench), an NDCG-aimed stochrank row and the stochrank row aimed at the target:

* ``mrr`` (whole-list MRR, relevant: label > 0): ``stochrank.ndcg(k=5)`` and ``stochrank.mrr()``;
* ``err@10`` (stop probability (2^r - 1) / 2^top grade): ``stochrank.ndcg(k=10)`` and
  ``stochrank.err(k=10, max_grade=<the dataset's top grade>)``;
* ``ndcg@1``: ``stochrank.ndcg(k=5)`` and ``stochrank.ndcg(k=1)``.

NDCG with the dataset's gain throughout. Exploratory (stop 45's plans 2 and 3, written before their fits): no
default changes. The reading: in how many cells the direct row validates at least as high as the NDCG-aimed
stochrank row, and each cell's test differences with paired t p (Holm over the 8 cells for the direct row
against LambdaMART as well).

    nice -n 15 python benchmarks/direct_targets.py --target mrr                      # RESULTS.md
    nice -n 15 python benchmarks/direct_targets.py --target err@10 --boosters xgboost  # its fits; no write
    nice -n 15 python benchmarks/direct_targets.py --target ndcg@1 --quick            # smoke: fold 1, 1 seed
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from _common import write_results_section
from quality_levers import (
    LEARNING_RATE,
    SYNTHETIC_SIZES,
    TREE,
    Row,
    cached_fits_footer,
    dataset_gain,
    lambdamart,
    p_text,
    sr,
)
from training_cutoff import CELLS, PATIENCE, QUICK_CELLS, CellResult, cell_table, run_cell

import stochrank
from stochrank.bench.results import markdown_table, section_header
from stochrank.bench.stats import holm, paired_t
from stochrank.datasets import DATASETS

LAMBDAMART = Row("LambdaMART (the booster's own, NDCG-aimed)", lambdamart)


def top_grade(dataset: str) -> float:
    """The dataset's top relevance grade (the generated data's: 4)."""
    return 4.0 if dataset == "synthetic" else float(DATASETS[dataset].labels[1])


def err10(dataset: str) -> Callable[[int], Any]:
    return lambda seed: stochrank.err(k=10, max_grade=top_grade(dataset), seed=seed)


@dataclass(frozen=True)
class DirectTarget:
    """A target, its RESULTS section, the NDCG-aimed stochrank row's cut-off and the row aimed at it."""

    label: str
    section: str
    description: str
    reference_k: int
    direct_name: str
    direct: Callable[[str], Callable[[int], Any]]  # dataset -> (seed -> objective)

    @property
    def reference(self) -> str:
        """The NDCG-aimed row's short name, e.g. ``ndcg(k=5)``."""
        return f"ndcg(k={self.reference_k})"

    @property
    def direct_short(self) -> str:
        """The direct row's short name, e.g. ``mrr()``."""
        return self.direct_name.split(" ")[0].removeprefix("stochrank.")

    def rows(self, dataset: str) -> list[Row]:
        """LambdaMART, the NDCG-aimed stochrank row and the row aimed at the target, for ``dataset``."""
        k = self.reference_k
        return [
            LAMBDAMART,
            Row(f"stochrank.ndcg(k={k}) (NDCG-aimed)", sr(k=k, gain=dataset_gain(dataset))),
            Row(self.direct_name, self.direct(dataset)),
        ]


TARGETS = {
    "mrr": DirectTarget("MRR", "mrr_target", "whole-list MRR, relevant: label > 0", 5,
                        "stochrank.mrr() (MRR-aimed)", lambda dataset: lambda seed: stochrank.mrr(seed=seed)),
    "err@10": DirectTarget("ERR@10", "err10_target",
                           "ERR@10, stop probability (2^r − 1) / 2^(the dataset's top grade)", 10,
                           "stochrank.err(k=10) (ERR-aimed)", err10),
    "ndcg@1": DirectTarget("NDCG@1", "ndcg1_target", "NDCG@1 with the dataset's gain", 5,
                           "stochrank.ndcg(k=1) (NDCG@1-aimed)",
                           lambda dataset: sr(k=1, gain=dataset_gain(dataset))),
}  # fmt: skip


def summary_table(results: list[CellResult], target: DirectTarget) -> str:
    """Per cell: vali of the three rows, and test direct - NDCG-aimed and direct - LambdaMART with p."""
    label, short, direct = target.label, target.reference, target.direct_short
    p_lambdamart = [paired_t(r.test[2], r.test[0]) for r in results]
    lines = []
    for r, p, adjusted in zip(results, p_lambdamart, holm(p_lambdamart), strict=True):
        versus_lambdamart = f"{np.mean(r.test[2] - r.test[0]):+.4f} (p {p_text(p)}, Holm {p_text(adjusted)})"
        lines.append([r.cell.dataset, r.booster, f"{r.vali(0):.4f}", f"{r.vali(1):.4f}", f"{r.vali(2):.4f}",
                      f"{r.vali_gain():+.4f}", f"{r.fits_not_worse()} of {len(r.runs[1])}",
                      f"{np.mean(r.test[2] - r.test[1]):+.4f} (p {p_text(paired_t(r.test[2], r.test[1]))})",
                      versus_lambdamart])  # fmt: skip
    headers = ["dataset", "booster", f"vali {label}, LambdaMART", f"vali {label}, {short}",
               f"vali {label}, {direct}", f"vali Δ {direct} − {short}", f"fits with {direct} ≥ {short}",
               f"test Δ {direct} − {short}", f"test Δ {direct} − LambdaMART"]  # fmt: skip
    below = sum(r.vali_gain() < 0 for r in results)
    return markdown_table(headers, lines, "llrrrrrrr") + (
        f"\n\n`{direct}` validates below `{short}` in {below} of {len(results)} cells; Holm over the "
        f"{len(results)} cells' `{direct}` − LambdaMART comparisons."
    )


def target_arguments(doc: str) -> argparse.Namespace:
    """Command line of a target script (this one, ``blended_targets.py``): --target, --boosters, --quick."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--target", required=True, choices=sorted(TARGETS))
    parser.add_argument("--boosters", nargs="+", default=["lightgbm", "xgboost"], choices=sorted(TREE))
    parser.add_argument("--quick", action="store_true", help="50 trees, patience 10, fold 1, 1 seed")
    return parser.parse_args()


def target_section(
    args: argparse.Namespace,
    title: str,
    protocol: str,
    rows_of: Callable[[str], list[Row]],
    summary: Callable[[list[CellResult]], str],
    section: str,
) -> None:
    """Train ``rows_of(dataset)`` in every cell of ``args`` on its target and print the section.

    The section is the title, ``protocol``, ``summary`` of the cells' results and a table per cell; only a
    full run over both boosters writes it to RESULTS.md as ``section``.
    """
    target = TARGETS[args.target]
    cells = QUICK_CELLS if args.quick else CELLS
    start = time.perf_counter()
    results = [run_cell(c, b, rows_of(c.dataset), metric=args.target) for b in args.boosters for c in cells]
    minutes = (time.perf_counter() - start) / 60
    body = "\n\n".join(
        [
            section_header(title),
            protocol,
            summary(results),
            *[cell_table(r, target.label, target.reference) for r in results],
            cached_fits_footer(minutes),
        ]
    )
    print("\n" + body)
    if args.quick or sorted(args.boosters) != sorted(TREE):
        print("\n(a smoke or one-booster run: the section is written only by a run over both boosters)")
    else:
        write_results_section(section, body)


def main() -> None:
    args = target_arguments(__doc__)
    target = TARGETS[args.target]
    label = target.label
    sizes = " / ".join(map(str, SYNTHETIC_SIZES))
    protocol = (
        f"Learning rate {LEARNING_RATE}, LightGBM 31 leaves / XGBoost depth 6, early stopping {PATIENCE} "
        f"rounds on vali {label} ({target.description}; worst ties, queries without a relevant "
        'document skipped), 1 thread per fit; the cells of "a deeper default training cut-off": MQ2008\'s '
        "official folds 1-5 × seeds 0-2 at ≤ 600 trees, CatBoost's query-wise data (linear gain for NDCG and "
        "LambdaMART) and LightGBM's ranking example in rotated folds 1-5 × seeds 0-2 at ≤ 1,200 trees, and "
        f"SYNTHETIC (`nonlinear_mslr`, {sizes} train / vali / test queries per data fold) data folds 1-2 × "
        f"seeds 0-1 at ≤ 1,200 trees. Test {label} per query, seeds averaged, folds pooled; p-values "
        "two-sided paired t, not corrected (Holm only where the summary says so); MDD: 80 % power, two-sided "
        "5 %. Exploratory (plan written before any fit): no default changes."
    )
    target_section(
        args,
        f"Quality levers: {label} as its own training target (issue 9, fixed settings)",
        protocol,
        target.rows,
        lambda results: summary_table(results, target),
        target.section,
    )


if __name__ == "__main__":
    main()
