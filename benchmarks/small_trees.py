"""Small trees in every method's space, chosen on validation: does stochrank beat LambdaMART? (issue 9).

Seen first (post hoc; the secondary MQ2008 rows of ``misspecified_trees.py``, a test-selected, unpaired
reading): with 4-leaf trees at fixed settings stochrank tested above LambdaMART on MQ2008 on both boosters,
and above the bench's tuned LambdaMART, whose search never tries trees that small (``num_leaves`` ≥ 8, depth
6-10). Here small trees are in the space of every method alike and each method's grid point is chosen on
validation data.

Grid, the same for every method: trees (LightGBM ``num_leaves`` 2, 4, 8; XGBoost ``max_depth`` 1, 2, 3) ×
learning rate (0.05, 0.1, 0.2); ≤ 600 trees, early stopping 60 rounds on validation NDCG@5 (worst-case ties,
queries without a relevant document skipped), 1 thread. Methods: the booster's LambdaMART,
``stochrank.ndcg(k=5)``'s defaults, and ``stochrank.ndcg(k=10)`` judged at 5. Data: MQ2008 (5 official folds),
CatBoost's query-wise data and LightGBM's ranking example (5 rotated folds each, their gains); seeds 0, 1. Per
fold and method the grid point with the best mean validation NDCG@5 over the seeds is kept; its seed-mean test
NDCG@5 per query is compared. The plan, written before any fit (2026-11-29 03:01 UTC): primary, the defaults
minus LambdaMART on MQ2008 on each booster, paired t, Holm over the two (a win: Holm p < 0.05 and a positive
difference); the cut-off row and the two small sets are secondary (uncorrected). Exploratory: not the bench's
30-configuration protocol, and nothing becomes a default.

    nice -n 15 python benchmarks/small_trees.py --boosters lightgbm   # one booster's fits (cached)
    nice -n 15 python benchmarks/small_trees.py                       # both; writes RESULTS.md
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import write_results_section
from quality_levers import ROWS, TREE, Row, p_text, row_runs, sr

from stochrank.bench.results import markdown_table, section_header
from stochrank.bench.stats import holm, minimum_detectable_difference, paired_t

METHODS = [ROWS[0], ROWS[1], Row("stochrank.ndcg(k=10) judged @5", sr(k=10))]
TREES = {"lightgbm": ("num_leaves", (2, 4, 8)), "xgboost": ("max_depth", (1, 2, 3))}
RATES = (0.05, 0.1, 0.2)
DATASETS = ("mq2008", "catboost-querywise", "lightgbm-example")
FOLDS, SEEDS = [1, 2, 3, 4, 5], [0, 1]
ROUNDS, PATIENCE = 600, 60


def selected(row: Row, booster: str, dataset: str) -> tuple[np.ndarray, list[str], int]:
    """Per-query test NDCG@5 of the grid point chosen on validation in each fold, the choices, and the
    most trees any chosen fit kept."""
    key, sizes = TREES[booster]
    tests, choices, trees = [], [], 0
    for fold in FOLDS:
        best: tuple[float, np.ndarray, str, int] | None = None
        for size in sizes:
            for lr in RATES:
                runs = row_runs(row, booster, dataset, [fold], SEEDS, lr, ROUNDS, PATIENCE, {key: size})
                vali = float(np.mean([runs[fold, s]["vali"] for s in SEEDS]))
                if best is None or vali > best[0]:
                    test = np.mean([runs[fold, s]["test"] for s in SEEDS], axis=0)
                    kept = max(runs[fold, s]["trees"] for s in SEEDS)
                    best = (vali, test, f"{size}/{lr:g}", kept)
        assert best is not None
        tests.append(best[1])
        choices.append(best[2])
        trees = max(trees, best[3])
    return np.concatenate(tests), choices, trees


def dataset_rows(booster: str, dataset: str) -> list[list[str]]:
    """One table row per method on one (booster, dataset): test, Δ vs LambdaMART, choices per fold."""
    results = {row.name: selected(row, booster, dataset) for row in METHODS}
    base = results[METHODS[0].name][0]
    rows = []
    for row in METHODS:
        test, choices, trees = results[row.name]
        delta = "—" if test is base else f"{np.mean(test - base):+.4f} (p {p_text(paired_t(test, base))})"
        mdd = "—" if test is base else f"{minimum_detectable_difference(test, base):.4f}"
        rows.append([dataset, row.name, f"{test.mean():.4f}", delta, mdd, ", ".join(choices), str(trees)])
    return rows


def primary(boosters: list[str]) -> str:
    """The plan's family: the defaults minus LambdaMART on MQ2008 per booster, Holm over the boosters."""
    found = []
    for booster in boosters:
        base = selected(METHODS[0], booster, "mq2008")[0]
        ours = selected(METHODS[1], booster, "mq2008")[0]
        found.append((booster, ours - base, paired_t(ours, base)))
    adjusted = holm([p for _, _, p in found])
    lines = [
        f"{booster}: {delta.mean():+.4f} (p {p_text(p)}, Holm {p_text(p_holm)}): "
        + ("**win**" if p_holm < 0.05 and delta.mean() > 0 else "no win")
        for (booster, delta, p), p_holm in zip(found, adjusted, strict=True)
    ]
    return (
        "**The plan's family** (MQ2008, `stochrank.ndcg(k=5)` defaults − LambdaMART): "
        + "; ".join(lines)
        + "."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boosters", nargs="+", default=["lightgbm", "xgboost"], choices=sorted(TREE))
    args = parser.parse_args()
    start = time.perf_counter()
    tables = []
    for booster in args.boosters:
        key, sizes = TREES[booster]
        rows = [line for dataset in DATASETS for line in dataset_rows(booster, dataset)]
        headers = ["dataset", "method", "test NDCG@5", "Δ vs LambdaMART", "MDD",
                   f"chosen {key} / learning rate, folds 1-5", "most trees kept"]  # fmt: skip
        title = f"**{booster}, {key} in {sizes} × learning rate in {RATES}, seeds {SEEDS}**"
        tables.append(f"{title}\n\n" + markdown_table(headers, rows, "llrrrlr"))
    verdict = primary(args.boosters)
    print("\n\n".join([verdict, *tables]))
    if sorted(args.boosters) != sorted(TREE):
        print("One booster's fits are cached; run with both boosters to write RESULTS.md.")
        return
    body = "\n\n".join([
        section_header("Quality levers: small trees in every method's space (issue 9, exploratory)"),
        " ".join(" ".join(__doc__.split("\n\n")[i].split()) for i in (1, 2)).replace("``", "`"),
        verdict,
        *tables,
        f"Wall time of this call {(time.perf_counter() - start) / 60:.0f} min (fits cached in "
        "`bench_runs/levers` are not retrained); most trees kept: the largest best iteration among the "
        "chosen fits (the cap is 600).",
    ])  # fmt: skip
    write_results_section("small_trees", body)


if __name__ == "__main__":
    main()
