"""Fine-tuning the booster's own LambdaMART with stochrank: does a warm start pay? (issue 9, exploratory)

Hypothesis. From all-zero scores stochrank's estimate is spread thin (every document of a query is tied, the
smoothed top-k metric moves little), while LambdaMART's pairwise lambdas give every misordered pair a pull;
near a good model the direct estimate may be what pays. Here the booster's LambdaMART model, early-stopped at
its best validation value, is the start (LightGBM ``init_score`` / XGBoost ``base_margin`` on the training,
validation and test rows), and training continues. Arms, per (dataset, booster, target):

* **A** the booster's LambdaMART (``lambdarank`` / ``rank:ndcg``; deterministic, trained once per fold): at
  most 600 trees, early stopping after 60 rounds on the target's validation value. Its test values must
  equal the cached LambdaMART fits of ``quality_levers.py`` / ``direct_targets.py`` (checked; the run stops
  otherwise): this script's trainer is theirs plus a start.
* **B** control: A continued with the same LambdaMART from A's scores, a fresh patience of 60, at most 600
  further trees, kept only where its best validation value is above A's (else B = A). LambdaMART is
  deterministic here, so B replays the trees A discarded: B is A trained on further, until 60 rounds pass
  without a new best of its own (it can gain only where A's early stop came too soon or A reached the cap),
  the extra trees C gets, without the objective change. C is a new path per seed, kept where it beats A on
  validation, so C's validation figures are at least A's by construction and are not evidence; test is.
* **C** A continued with the target's stochrank constructor at its defaults (``ndcg(k=5)``, ``mrr()``,
  ``err(k=10, max_grade=top grade)``, ``ndcg(k=1)``; seed = booster seed), same rules as B.
* **D** C with ``sigma = 0.3``: from a non-zero start the noise scale is no longer scale-free.

Fixed settings of "Quality levers" (learning rate 0.05, LightGBM 31 leaves / XGBoost depth 6, worst-case
ties, queries without a relevant document skipped, one thread). Primary (stop 48's plan, written before any
fit): the generated data (2 data folds x seeds 0, 1), NDCG@5, both boosters: the fine-tune helps on a
booster if C - A > 0 with Holm p < 0.05 over the two boosters and C - B > 0 with paired t p < 0.05.
Secondary: MQ2008 (5 folds x seeds 0-2), NDCG@5 on both boosters and MRR, ERR@10, NDCG@1 on LightGBM
(claim 2's baseline, ``lambdarank``, aims at NDCG). Test values per query, seeds averaged.

    nice -n 15 python benchmarks/warm_start.py                     # RESULTS.md (both boosters)
    nice -n 15 python benchmarks/warm_start.py --boosters xgboost  # its fits; no write
    nice -n 15 python benchmarks/warm_start.py --quick             # smoke: MQ2008 fold 1, 1 seed; no write
"""

from __future__ import annotations

import argparse
import functools
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from _common import cached_record, write_results_section
from direct_targets import LAMBDAMART, top_grade
from quality_levers import (
    BUILTIN_LAMBDAMART,
    CACHE,
    CACHE_VERSION,
    LEARNING_RATE,
    SYNTHETIC_SIZES,
    TREE,
    dataset_gain,
    fit,
    load,
    p_text,
    seed_mean_test,
)

import stochrank
from stochrank.bench.results import markdown_table, section_header
from stochrank.bench.stats import holm, minimum_detectable_difference, paired_randomization, paired_t
from stochrank.bench.target import Target
from stochrank.bench.trainers import FitSettings, FoldData, empty_queries

FloatArray = npt.NDArray[np.float64]
ROUNDS, PATIENCE = 600, 60
ARMS = ("A", "B", "C", "D")
ARM_NAMES = {
    "A": "A: LambdaMART (the booster's own)",
    "B": "B: A + LambdaMART continued (control)",
    "C": "C: A + stochrank continued (defaults)",
    "D": "D: A + stochrank continued, sigma = 0.3",
}


@dataclass(frozen=True)
class Cell:
    """A dataset, booster and target with its folds and seeds."""

    dataset: str
    booster: str
    metric: str
    folds: tuple[int, ...]
    seeds: tuple[int, ...]


def cells(boosters: list[str], quick: bool) -> list[Cell]:
    """The primary cells (generated data, NDCG@5) first, then MQ2008's (``quick``: MQ2008 fold 1, seed 0)."""
    folds, seeds = ((1,), (0,)) if quick else ((1, 2, 3, 4, 5), (0, 1, 2))
    out = [] if quick else [Cell("synthetic", b, "ndcg@5", (1, 2), (0, 1)) for b in boosters]
    out += [Cell("mq2008", b, "ndcg@5", folds, seeds) for b in boosters]
    if "lightgbm" in boosters:
        out += [Cell("mq2008", "lightgbm", m, folds, seeds) for m in ("mrr", "err@10", "ndcg@1")]
    return out


def stochrank_objective(cell: Cell, seed: int, sigma: float) -> Any:
    """The target's stochrank constructor at its defaults (but ``sigma``) for the cell's dataset."""
    gain: Any = dataset_gain(cell.dataset)  # "exp" or "linear"
    if cell.metric == "mrr":
        return stochrank.mrr(sigma=sigma, seed=seed)
    if cell.metric == "err@10":
        return stochrank.err(k=10, max_grade=top_grade(cell.dataset), sigma=sigma, seed=seed)
    k = int(cell.metric.removeprefix("ndcg@"))
    return stochrank.ndcg(k=k, gain=gain, sigma=sigma, seed=seed)


@dataclass
class Stage:
    """One training run: validation curve, trees kept and the kept model's scores (start included)."""

    curve: FloatArray
    trees: int
    scores: dict[str, FloatArray]  # "train", "vali", "test"


def train(
    cell: Cell, fold_data: FoldData, objective: Any, seed: int, start: dict[str, FloatArray] | None
) -> Stage:
    """Train on one booster from ``start`` (None: zero scores), early-stopped on the cell's target.

    Without a start this is :func:`stochrank.bench.trainers.train_lightgbm` / ``train_xgboost`` at the fixed
    settings (checked against their cached fits); a start enters as LightGBM's ``init_score`` / XGBoost's
    ``base_margin`` on every split, so the objective, the validation metric and the predictions all see it.
    """
    # LambdaMART's parameters here are those of the exp gain (quality_levers.fit adds the linear gain's).
    assert dataset_gain(cell.dataset) == "exp", "the warm start runs on exp-gain datasets only"
    target = Target.parse(cell.metric, gain=dataset_gain(cell.dataset), max_grade=fold_data.max_grade)
    settings = FitSettings(
        ROUNDS,
        PATIENCE,
        target.k,
        threads=1,
        ties="worst",
        empty="skip",
        metric=target.metric,
        gain=target.gain,
        max_grade=fold_data.max_grade,
    )
    splits = {"train": fold_data.train, "vali": fold_data.vali, "test": fold_data.test}
    params = {**TREE[cell.booster], "learning_rate": LEARNING_RATE}
    trainer = _train_lightgbm if cell.booster == "lightgbm" else _train_xgboost
    stage = trainer(params, splits, objective, seed, settings, start)
    # The start must enter the metric the booster early-stops on as it enters the kept scores (XGBoost's
    # history keeps 6 decimals).
    vali = float(np.nanmean(target.per_query(fold_data.vali, stage.scores["vali"])))
    if not np.isclose(vali, stage.curve[stage.trees - 1], rtol=0, atol=1e-6):
        raise RuntimeError(
            f"vali {vali} of the kept scores is not the curve's {stage.curve[stage.trees - 1]}"
        )
    return stage


def _train_lightgbm(
    params: dict[str, Any],
    splits: dict[str, Any],
    objective: Any,
    seed: int,
    settings: FitSettings,
    start: dict[str, FloatArray] | None,
) -> Stage:
    import lightgbm as lgb

    params = {
        **params,
        "objective": objective,
        "metric": "None",
        "verbose": -1,
        "num_threads": 1,
        "seed": seed,
    }
    train = lgb.Dataset(
        splits["train"].X,
        splits["train"].y,
        group=splits["train"].group,
        init_score=start["train"] if start else None,
    )
    vali = lgb.Dataset(
        splits["vali"].X,
        splits["vali"].y,
        group=splits["vali"].group,
        reference=train,
        init_score=start["vali"] if start else None,
    )
    history: dict[str, Any] = {}
    trees_after: list[int] = []  # see train_lightgbm: an iteration may store no tree

    def count_trees(env: Any) -> None:
        trees_after.append(env.model.num_trees())

    count_trees.order = 5  # type: ignore[attr-defined]
    model = lgb.train(
        params,
        train,
        settings.max_rounds,
        valid_sets=[vali],
        valid_names=["vali"],
        feval=settings.feval(),
        callbacks=[
            count_trees,
            lgb.early_stopping(settings.patience, verbose=False),
            lgb.record_evaluation(history),
        ],
    )
    kept = trees_after[model.best_iteration - 1]

    def predict(name: str) -> FloatArray:
        own = splits[name]
        # No tree yet: LightGBM reads num_iteration=0 as "every tree".
        grown = model.predict(own.X, num_iteration=kept) if kept else np.zeros(own.y.size)
        return (start[name] if start else 0.0) + np.asarray(grown, dtype=np.float64)

    scores = {name: predict(name) for name in splits}
    return Stage(
        np.asarray(history["vali"][settings.feval().name], dtype=np.float64), model.best_iteration, scores
    )


def _train_xgboost(
    params: dict[str, Any],
    splits: dict[str, Any],
    objective: Any,
    seed: int,
    settings: FitSettings,
    start: dict[str, FloatArray] | None,
) -> Stage:
    import xgboost as xgb

    params = {**params, "tree_method": "hist", "nthread": 1, "seed": seed, "disable_default_eval_metric": 1}
    custom = not isinstance(objective, str)
    params.update(objective="rank:ndcg", base_score=0.0) if custom else params.update(objective=objective)

    def dmatrix(name: str, labelled: bool = True) -> xgb.DMatrix:
        split = splits[name]
        margin = start[name] if start else None
        if not labelled:
            return xgb.DMatrix(split.X, nthread=1, base_margin=margin)
        return xgb.DMatrix(split.X, split.y, group=split.group, nthread=1, base_margin=margin)

    history: dict[str, Any] = {}
    model = xgb.train(
        params,
        dmatrix("train"),
        settings.max_rounds,
        evals=[(dmatrix("vali"), "vali")],
        obj=objective if custom else None,
        custom_metric=settings.feval(),
        maximize=True,
        early_stopping_rounds=settings.patience,
        evals_result=history,
        verbose_eval=False,
    )
    best = model.best_iteration + 1
    scores = {
        name: np.asarray(
            model.predict(dmatrix(name, False), iteration_range=(0, best), output_margin=True),
            dtype=np.float64,
        )
        for name in splits
    }
    return Stage(np.asarray(history["vali"][settings.feval().name], dtype=np.float64), best, scores)


@functools.cache  # once per (cell without seeds, fold): B, C and D start from it
def lambdamart_start(dataset: str, booster: str, metric: str, fold: int) -> Stage:
    """Arm A on one fold, checked against the cached LambdaMART fit of the lever scripts."""
    cell = Cell(dataset, booster, metric, (fold,), (0,))
    stage = train(cell, load(dataset, fold), BUILTIN_LAMBDAMART[booster], 0, None)
    cached = lambdamart_fit(cell, fold)
    mine = test_values(cell, fold, stage.scores["test"])
    if cached["trees"] != stage.trees or not np.array_equal(np.asarray(cached["test"]), mine):
        raise RuntimeError(
            f"arm A differs from the cached LambdaMART fit: {dataset} {booster} {metric} {fold}"
        )
    return stage


def lambdamart_fit(cell: Cell, fold: int) -> dict[str, Any]:
    """The lever scripts' cached LambdaMART fit of the cell's booster, dataset and target on ``fold``."""
    data = (cell.dataset, fold)
    return fit(LAMBDAMART, cell.booster, data, 0, LEARNING_RATE, ROUNDS, PATIENCE, metric=cell.metric)


def test_values(cell: Cell, fold: int, scores: FloatArray) -> FloatArray:
    """Per-query test values of the cell's target (queries without a relevant document dropped)."""
    fold_data = load(cell.dataset, fold)
    target = Target.parse(cell.metric, gain=dataset_gain(cell.dataset), max_grade=fold_data.max_grade)
    values = target.per_query(fold_data.test, scores)
    return values[~empty_queries(fold_data.test)]


def arm_fit(cell: Cell, arm: str, fold: int, seed: int) -> dict[str, Any]:
    """One arm's fit on a fold and seed (cached): vali, trees added, kept or not, per-query test, seconds."""
    base_key = [
        CACHE_VERSION,
        stochrank.__version__,
        cell.dataset,
        SYNTHETIC_SIZES,
        fold,
        cell.booster,
        TREE[cell.booster],
        LEARNING_RATE,
        ROUNDS,
        PATIENCE,
        cell.metric,
    ]
    if arm in ("A", "B"):
        seed = 0  # LambdaMART is deterministic here: one fit per fold serves every seed
        spec: str = BUILTIN_LAMBDAMART[cell.booster]
    else:
        objective = stochrank_objective(cell, seed, 1.0 if arm == "C" else 0.3)
        spec = repr(objective)

    def compute() -> dict[str, Any]:
        begin = time.perf_counter()
        start = lambdamart_start(cell.dataset, cell.booster, cell.metric, fold)
        start_vali = float(start.curve[start.trees - 1])
        if arm == "A":
            return {
                "vali": start_vali,
                "trees": 0,
                "kept": False,
                "test": test_values(cell, fold, start.scores["test"]).tolist(),
                "seconds": time.perf_counter() - begin,
            }
        rerun = BUILTIN_LAMBDAMART[cell.booster] if arm == "B" else objective
        stage = train(cell, load(cell.dataset, fold), rerun, seed, start.scores)
        best_vali = float(stage.curve[stage.trees - 1])
        kept = best_vali > start_vali
        scores = stage.scores["test"] if kept else start.scores["test"]
        return {
            "vali": best_vali if kept else start_vali,
            "trees": stage.trees if kept else 0,
            "kept": kept,
            "test": test_values(cell, fold, scores).tolist(),
            "seconds": time.perf_counter() - begin,
        }

    return cached_record(CACHE, ["warm_start", *base_key, arm, spec, seed], compute)


def run_cell(cell: Cell) -> dict[str, dict[tuple[int, int], dict[str, Any]]]:
    """Every arm's fits in a cell, printed as they come."""
    runs: dict[str, dict[tuple[int, int], dict[str, Any]]] = {}
    for arm in ARMS:
        runs[arm] = {(f, s): arm_fit(cell, arm, f, s) for f in cell.folds for s in cell.seeds}
        vali = np.mean([r["vali"] for r in runs[arm].values()])
        print(
            f"{cell.dataset:9s} {cell.booster:8s} {cell.metric:7s} {ARM_NAMES[arm]:45s} vali {vali:.4f}",
            flush=True,
        )
    return runs


def per_query(runs: dict[tuple[int, int], dict[str, Any]], cell: Cell) -> FloatArray:
    """Test values per query, seeds averaged, folds concatenated."""
    return seed_mean_test(runs, list(cell.folds), list(cell.seeds))


def versus(q: FloatArray, ref: FloatArray) -> str:
    """Mean difference with paired t / randomization p-values."""
    return f"{np.mean(q - ref):+.4f} ({p_text(paired_t(q, ref))} / {p_text(paired_randomization(q, ref))})"


def cell_table(cell: Cell, runs: dict[str, dict[tuple[int, int], dict[str, Any]]]) -> str:
    """One cell's arms: vali, test, trees added, fits whose continuation was kept, differences, MDD."""
    label = Target.parse(cell.metric, gain="exp", max_grade=4.0).label
    test = {arm: per_query(runs[arm], cell) for arm in ARMS}
    rows = []
    for arm in ARMS:
        # A and B are one deterministic fit per fold, repeated under every seed: count them per fold.
        fits = (
            [runs[arm][f, cell.seeds[0]] for f in cell.folds]
            if arm in ("A", "B")
            else list(runs[arm].values())
        )
        unit = "folds" if arm in ("A", "B") else "fits"
        rows.append(
            [
                ARM_NAMES[arm],
                f"{np.mean([r['vali'] for r in fits]):.4f}",
                f"{test[arm].mean():.4f}",
                f"{np.mean([r['trees'] for r in fits]):.0f}",
                f"{sum(r['kept'] for r in fits)} of {len(fits)} {unit}",
                "—" if arm == "A" else versus(test[arm], test["A"]),
                "—" if arm in ("A", "B") else versus(test[arm], test["B"]),
                "—" if arm == "A" else f"{minimum_detectable_difference(test[arm], test['A']):.4f}",
            ]
        )
    headers = [
        "arm",
        f"vali {label}",
        f"test {label}",
        "trees added",
        "continuation kept",
        "Δ vs A (p t / rand.)",
        "Δ vs B (p t / rand.)",
        "MDD vs A",
    ]
    title = (
        f"**{cell.dataset}, {cell.booster} (LambdaMART = `{BUILTIN_LAMBDAMART[cell.booster]}`), {label}, "
        f"folds {', '.join(map(str, cell.folds))} × seeds {', '.join(map(str, cell.seeds))}**"
    )
    start_trees = [lambdamart_fit(cell, fold)["trees"] for fold in cell.folds]
    caption = f"A kept {', '.join(map(str, start_trees))} of ≤ {ROUNDS} trees (folds in order)."
    return f"{title}\n\n" + markdown_table(headers, rows, "lrrrrrrr") + f"\n\n{caption}"


def verdict(primary: list[tuple[Cell, dict[str, Any]]]) -> str:
    """The plan's rule on the generated data: C - A (Holm over the boosters) and C - B (paired t)."""
    tests = [
        (cell, per_query(runs["C"], cell), per_query(runs["A"], cell), per_query(runs["B"], cell))
        for cell, runs in primary
    ]
    p_a = [paired_t(c, a) for _, c, a, _ in tests]
    lines = []
    for (cell, c, a, b), adjusted in zip(tests, holm(p_a), strict=True):
        p_b = paired_t(c, b)
        helps = np.mean(c - a) > 0 and adjusted < 0.05 and np.mean(c - b) > 0 and p_b < 0.05
        lines.append(
            [
                cell.booster,
                f"{np.mean(c - a):+.4f} (Holm {p_text(adjusted)})",
                f"{np.mean(c - b):+.4f} (p {p_text(p_b)})",
                "helps" if helps else "does not help",
            ]
        )
    return markdown_table(["booster", "C − A", "C − B", "plan's verdict"], lines, "lrrl")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boosters", nargs="+", default=["lightgbm", "xgboost"], choices=sorted(TREE))
    parser.add_argument("--quick", action="store_true", help="MQ2008 fold 1, 1 seed; nothing written")
    args = parser.parse_args()
    begin = time.perf_counter()
    results = [(cell, run_cell(cell)) for cell in cells(args.boosters, args.quick)]
    minutes = (time.perf_counter() - begin) / 60
    primary = [(cell, runs) for cell, runs in results if cell.dataset == "synthetic"]
    sizes = " / ".join(map(str, SYNTHETIC_SIZES))
    protocol = (
        f"Learning rate {LEARNING_RATE}, LightGBM 31 leaves / XGBoost depth 6, ≤ {ROUNDS} trees per stage, "
        f"early stopping {PATIENCE} rounds on the target's vali value (worst ties, queries without a relevant"
        f" document skipped), 1 thread per fit. SYNTHETIC: `nonlinear_mslr`, {sizes} train / vali / test "
        "queries per data fold. Arms (the module docstring of `benchmarks/warm_start.py`): A the booster's "
        "LambdaMART, early-stopped; B, C, D continue from A's scores (init scores on every split), fresh "
        "patience, a continuation kept only where its best vali is above A's; B LambdaMART again (the "
        "control: deterministic, it replays the trees A discarded, so B is A trained on further), "
        "C the target's stochrank constructor at its defaults, D the same at sigma = 0.3. A and B are one "
        "fit per fold, used for every seed. Test values per query, seeds averaged; p "
        "two-sided, paired t / sign-flip randomization. Plan (written before any fit): on the generated data "
        "the fine-tune helps on a booster if C − A > 0 with Holm p < 0.05 over the boosters and C − B > 0 "
        "with p < 0.05; MQ2008 secondary."
    )
    body = "\n\n".join(
        [
            section_header("Warm start: LambdaMART fine-tuned with stochrank (issue 9, exploratory)"),
            protocol,
            verdict(primary),
            *[cell_table(cell, runs) for cell, runs in results],
            "trees added: mean trees a continuation kept (0 where it was not kept); continuation kept: fits "
            "whose continuation raised vali (C's and D's vali are therefore at least A's by construction); "
            "MDD: the minimum detectable difference against A (80 % power, two-sided 5 %), small here "
            f"because every arm shares A's start. Wall time of this call {minutes:.0f} min (fits cached in "
            "`bench_runs/levers` are not retrained).",
        ]
    )
    print("\n" + body)
    if args.quick or sorted(args.boosters) != sorted(TREE):
        print("\n(a smoke or one-booster run: the section is written only by a run over both boosters)")
    else:
        write_results_section("warm_start", body)


if __name__ == "__main__":
    main()
