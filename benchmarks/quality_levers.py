"""Which settings of stochrank.ndcg(k=5) move ranking quality: one lever at a time (issue 9 item 5).

Fixed settings, the protocol of ``tests/test_training_mq2008.py`` in the report's convention: learning
rate 0.05, LightGBM ``num_leaves=31`` / XGBoost ``max_depth=6`` (other parameters the boosters'
defaults), at most 600 trees, early stopping after 60 rounds on validation NDCG@5 with worst-case ties
and queries without a relevant document skipped (:func:`stochrank.metrics.feval`, as
``python -m stochrank.bench``), best iteration kept; 5 official folds × 3 seeds (objective seed =
booster seed), one thread per fit. Each row changes one setting of the default objective (or, for the
tree-randomisation rows, one booster setting for both methods) and is judged on test NDCG@5, per query,
seeds averaged, folds pooled (564 queries): paired t and sign-flip randomization p-values against the
booster's LambdaMART and against stochrank's defaults, and the minimum detectable difference (MDD, 80 %
power, two-sided 5 %) of the comparison with LambdaMART. Vali is what a user could select on; test is
reported, never used for a choice.

Rows marked "not API" are experiments: ``Newton leaves + SGLB`` adds SGLB's Langevin noise and shrinkage
to Newton leaves with the noise of document d scaled by sqrt(h_d) (so a leaf's noise variance is 1/Σh,
Langevin dynamics with the Newton preconditioner; ``stochrank.ndcg`` refuses ``hessian='newton'`` with
``sglb``, and the row measures whether that refusal costs anything); ``Newton leaves x m`` hands the
booster m times the gradient, so each leaf is m Newton steps (at most m noise scales); ``noise relative to
the query's spread`` smooths query q with sigma_q = sigma * sqrt(1 + (rho * sd_q / sigma)^2), sd_q the
standard deviation of its current scores (the smoothing stays a fixed fraction of the spread once the
scores have spread; sigma_q is held fixed within a call, so the gradient is that of the smoothed metric
at the call's noise scale, not of the composite); ``sigma annealed`` smooths the t-th booster call with
sigma_t = sigma * (1 + (start - 1) * exp(-t / tau)), from ``start`` times sigma down to sigma (Newton leaves
as they are, so the early steps are as large as the early noise).

A second set of tables puts LightGBM's LambdaMART and stochrank on generated nonlinear data
(:func:`stochrank.datasets.synthetic.nonlinear_mslr`) at budgets where the number of trees binds, with the
same learning rate for both, and with leaves of twice the Newton step; the last one does the same on
XGBoost trees. The XGBoost table at depth 10 asks whether XGBoost's minimum leaf weight
``min_child_weight`` (a Hessian sum, default 1) is a lever: the Hessians of ``rank:ndcg`` average 0.016-0.17
per document at the first tree (root cover over documents, by its pair settings), stochrank's 1 by
construction, so the default asks of a ``rank:ndcg`` leaf 6-64 documents' worth of curvature and of a
stochrank leaf one. The last XGBoost table grows XGBoost's trees leaf-wise with LightGBM's 31 leaves
(``grow_policy='lossguide'``, no depth limit), to tell the growth policy from the booster's LambdaMART.

    nice -n 15 python benchmarks/quality_levers.py    # RESULTS.md (~2 h 15 min cold, 2 shared cores)
    nice -n 15 python benchmarks/quality_levers.py --boosters lightgbm --seeds 1 --quick   # smoke, no write

Fits are cached in ``bench_runs/levers``, keyed by the objective (class and repr: settings and seed), the
booster parameters, the data and fold, and ``CACHE_VERSION`` (bump it when stochrank's code changes what
a fit learns), so a re-run only trains what is missing.
"""

from __future__ import annotations

import abc
import argparse
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
from _common import REPO, cached_record, write_results_section

import stochrank
from stochrank.bench.methods import Recipe
from stochrank.bench.protocol import load_fold
from stochrank.bench.results import markdown_table, section_header
from stochrank.bench.stats import minimum_detectable_difference, paired_randomization, paired_t
from stochrank.bench.target import Target
from stochrank.bench.trainers import (
    TRAINERS,
    FitSettings,
    FoldData,
    empty_queries,
    xgboost_hessian_per_document,
)
from stochrank.conventions import offsets_from_sizes
from stochrank.datasets import DATASETS
from stochrank.datasets.synthetic import nonlinear_mslr
from stochrank.objectives.stochastic_rank import StochasticRankObjective
from stochrank.protocol import DatasetInfo

K = 5
LEARNING_RATE = 0.05
TREE = {"lightgbm": {"num_leaves": 31}, "xgboost": {"max_depth": 6}}
ExperimentT = TypeVar("ExperimentT", bound=StochasticRankObjective)


def subsampled(fraction: float) -> dict[str, dict[str, Any]]:
    """Row and feature subsampling at ``fraction`` in each booster's own parameters."""
    return {
        "lightgbm": {"bagging_fraction": fraction, "bagging_freq": 1, "feature_fraction": fraction},
        "xgboost": {"subsample": fraction, "colsample_bytree": fraction},
    }


BUILTIN_LAMBDAMART = {"lightgbm": "lambdarank", "xgboost": "rank:ndcg"}
CACHE = REPO / "bench_runs" / "levers"
CACHE_VERSION = 1


def lambdamart(seed: int) -> None:
    """Stands for the booster's own LambdaMART objective in :data:`ROWS` (deterministic: no seed)."""


class NewtonSGLB(StochasticRankObjective):
    """Newton leaves with SGLB (noise of document d times sqrt(h_d)); the experiment row, not the API."""

    def __init__(self, target: Any, smoothing: Any, sglb: Any = None) -> None:
        super().__init__(target, smoothing, None)
        self._sglb = sglb


class ScaledStep(StochasticRankObjective):
    """Newton leaves times ``factor`` (the gradient scaled, the Hessian not); the experiment rows."""

    factor = 2.0

    def _ascent(self, scores: Any, info: Any, encoding: Any, call: int) -> Any:
        ascent = super()._ascent(scores, info, encoding, call)
        return ascent._replace(gradient=ascent.gradient * self.factor)


def ascent_at_noise_factor(ascent_at_sigma: Callable[..., Any], scores: Any, info: Any, encoding: Any,
                           call: int, c: Any) -> Any:  # fmt: skip
    """The ascent (gradient and curvature) at noise ``c * sigma`` from ``ascent_at_sigma``, the one at sigma.

    Noise c * sigma on scores f is noise sigma on f / c: the gradient in f is the one in f / c divided by c,
    the curvature divided by c^2. ``c`` is one number or an array aligned with ``scores``.
    """
    ascent = ascent_at_sigma(scores / c, info, encoding, call)
    return ascent._replace(gradient=ascent.gradient / c, curvature=ascent.curvature / (c * c))


class NoiseScaled(StochasticRankObjective):
    """Noise ``c * sigma`` for a factor ``c`` the subclass gives (per document or one for all); the rows."""

    @abc.abstractmethod
    def _noise_factor(self, scores: Any, info: Any, call: int) -> Any:
        """The factor c: an array aligned with ``scores`` or one number."""

    def _ascent(self, scores: Any, info: Any, encoding: Any, call: int) -> Any:
        c = self._noise_factor(scores, info, call)
        return ascent_at_noise_factor(super()._ascent, scores, info, encoding, call, c)


class SpreadScaledNoise(NoiseScaled):
    """Noise of query q scaled to sigma * sqrt(1 + (rho * sd_q / sigma)^2); the experiment rows."""

    rho = 0.3

    def _noise_factor(self, scores: Any, info: Any, call: int) -> Any:
        sizes = np.diff(info.offsets)
        starts = info.offsets[:-1]
        mean = np.add.reduceat(scores, starts) / sizes
        spread = np.sqrt(np.maximum(np.add.reduceat(scores * scores, starts) / sizes - mean * mean, 0.0))
        return np.repeat(np.sqrt(1.0 + (self.rho * spread / self.smoothing.sigma) ** 2), sizes)


class AnnealedNoise(NoiseScaled):
    """Noise sigma * (1 + (start - 1) * exp(-call / tau)) at the call-th booster call; the experiment rows."""

    start = 3.0
    tau = 50.0

    def _noise_factor(self, scores: Any, info: Any, call: int) -> Any:
        return 1.0 + (self.start - 1.0) * np.exp(-call / self.tau)


def variant(cls: type[ExperimentT], k: int = K, **setting: float) -> Callable[[int], ExperimentT]:
    """``seed -> ndcg(k)`` built as ``cls`` with ``setting`` (e.g. ``factor=2.0``; judged at K).

    A class per setting, named by it (``ScaledStep2``, ``SpreadScaledNoise0.3``: the fit cache keys on the
    name): LightGBM deep-copies the objective, which rebuilds it from its configuration, not its attributes.
    """
    named = type(cls.__name__ + "".join(f"{v:g}" for v in setting.values()), (cls,), setting)

    def build(seed: int) -> ExperimentT:
        base = stochrank.ndcg(k=k, seed=seed)
        return named(base.target, base.smoothing, None)  # type: ignore[no-any-return]

    return build


def newton_sglb(temperature: float) -> Callable[[int], NewtonSGLB]:
    def build(seed: int) -> NewtonSGLB:
        base = stochrank.ndcg(k=K, seed=seed)
        sglb = stochrank.SGLB(temperature=temperature, learning_rate=LEARNING_RATE)
        return NewtonSGLB(base.target, base.smoothing, sglb)

    return build


@dataclass(frozen=True)
class Row:
    """One lever: a name, the objective factory (seed -> objective; :func:`lambdamart`), booster params."""

    name: str
    objective: Callable[[int], Any]
    params: dict[str, dict[str, Any]] = field(default_factory=dict)  # per booster
    lr_factor: float = 1.0  # times the table's learning rate


def sr(**settings: Any) -> Callable[[int], Any]:
    """``seed -> stochrank.ndcg(k=5, seed=seed, **settings)`` (settings may override k)."""
    return lambda seed: stochrank.ndcg(**{"k": K, **settings}, seed=seed)


ROWS = [
    Row("LambdaMART (the booster's own)", lambdamart),
    Row("stochrank.ndcg(k=5) defaults (Newton leaves, μ = 0, 1 draw)", sr()),
    Row("hessian='unit' (mean gradients, mean removal, SFA 1)", sr(hessian="unit")),
    Row("sigma = 0.3 (Newton: same trajectory up to scale)", sr(sigma=0.3)),
    Row("mu = 0.5 (relevance-shifted smoothing)", sr(mu=0.5)),
    Row("n_samples = 4 (less Monte-Carlo noise)", sr(n_samples=4)),
    Row("training cut-off k = 10 (judged @5)", sr(k=10)),
    Row("training cut-off k = 20 (judged @5)", sr(k=20)),
    Row("noise relative to the query's spread, rho = 0.3 (not API)", variant(SpreadScaledNoise, rho=0.3)),
    Row("SGLB T = 1e4 (unit Hessian)", sr(sglb=stochrank.SGLB(temperature=1e4, learning_rate=LEARNING_RATE))),
    Row("SGLB T = 1e5 (unit Hessian)", sr(sglb=stochrank.SGLB(temperature=1e5, learning_rate=LEARNING_RATE))),
    Row("Newton leaves + SGLB T = 1e5 (not API)", newton_sglb(1e5)),
    Row("Newton leaves + SGLB T = 3e4 (not API)", newton_sglb(3e4)),
    Row("Newton leaves x 1.5 (not API)", variant(ScaledStep, factor=1.5)),
    Row("Newton leaves x 2 (not API)", variant(ScaledStep, factor=2.0)),
    Row("Newton leaves x 3 (not API)", variant(ScaledStep, factor=3.0)),
    Row("Newton leaves x 2, training cut-off k = 10 (not API)", variant(ScaledStep, k=10, factor=2.0)),
    Row("LambdaMART + row/feature subsampling 0.8", lambdamart, subsampled(0.8)),
    Row("defaults + row/feature subsampling 0.8", sr(), subsampled(0.8)),
    Row("LambdaMART + row/feature subsampling 0.6", lambdamart, subsampled(0.6)),
    Row("defaults + row/feature subsampling 0.6", sr(), subsampled(0.6)),
    Row("Newton leaves + SGLB T = 1e5 + subsampling 0.8 (not API)", newton_sglb(1e5), subsampled(0.8)),
    Row("sigma annealed from 3 sigma, tau = 50 calls (not API)", variant(AnnealedNoise, start=3.0, tau=50.0)),
]

# Where the tree budget binds: the same learning rate for LambdaMART and stochrank, ≤ 600 trees.
BUDGET_ROWS = [
    ROWS[0],
    ROWS[1],
    Row("Newton leaves x 2 (not API)", variant(ScaledStep, factor=2.0)),
    Row("defaults at twice the learning rate", sr(), lr_factor=2.0),
    Row("training cut-off k = 10 (judged @5)", sr(k=10)),
    Row("training cut-off k = 20 (judged @5)", sr(k=20)),
    Row("Newton leaves x 2, training cut-off k = 10 (not API)", variant(ScaledStep, k=10, factor=2.0)),
    Row("Newton leaves x 2, training cut-off k = 20 (not API)", variant(ScaledStep, k=20, factor=2.0)),
    ROWS[5],
    Row("mu = 0.5 (relevance-shifted smoothing)", sr(mu=0.5)),
    Row("mu = 0.9", sr(mu=0.9)),
    Row("noise relative to the query's spread, rho = 0.3 (not API)", variant(SpreadScaledNoise, rho=0.3)),
    Row("noise relative to the query's spread, rho = 1 (not API)", variant(SpreadScaledNoise, rho=1.0)),
    ROWS[-1],
]


def min_child_weight(weight: float) -> dict[str, dict[str, Any]]:
    """XGBoost's ``min_child_weight`` (the Hessian sum a leaf must hold) at ``weight``."""
    return {"xgboost": {"min_child_weight": weight}}


# XGBoost at depth 10 (the top of the bench's depth range), where leaves get small.
MIN_LEAF_WEIGHT_ROWS = [
    ROWS[0],
    ROWS[1],
    Row("LambdaMART, min_child_weight = 0.1", lambdamart, min_child_weight(0.1)),
    Row("defaults, min_child_weight = 10", sr(), min_child_weight(10.0)),
    Row("defaults, min_child_weight = 50", sr(), min_child_weight(50.0)),
    Row("training cut-off k = 10", sr(k=10)),
    Row("training cut-off k = 10, min_child_weight = 10", sr(k=10), min_child_weight(10.0)),
    Row("training cut-off k = 10, min_child_weight = 50", sr(k=10), min_child_weight(50.0)),
]
# XGBoost grown leaf-wise with LightGBM's 31 leaves (no depth limit), as LightGBM grows its trees: does the
# growth policy, rather than the booster's LambdaMART, set how stochrank stands against it on each booster?
LEAF_WISE_ROWS = [ROWS[0], ROWS[1], BUDGET_ROWS[4]]
LEAF_WISE = {"grow_policy": "lossguide", "max_leaves": 31, "max_depth": 0}
SYNTHETIC_SIZES = (2000, 1000, 2000)  # train / vali / test queries per data fold


@functools.cache  # once per process, as load_fold does for MQ2008: every row of a table trains on it
def load(dataset: str, fold: int) -> FoldData:
    """An independent draw of the nonlinear synthetic data per fold ("synthetic"), or a bundled dataset's.

    Bundled: one of ``stochrank.datasets.DATASETS`` that ships with the package (MQ2008's official folds,
    CatBoost's query-wise data and LightGBM's ranking example in their rotated folds), with its NDCG gain.
    """
    if dataset != "synthetic":
        return load_fold(dataset, fold, None, None, None)
    train, vali, test = (nonlinear_mslr(n, seed=100 * fold + i) for i, n in enumerate(SYNTHETIC_SIZES))
    return FoldData(train, vali, test, max_grade=4.0)


def dataset_gain(dataset: str) -> str:
    """The NDCG gain ('exp' or 'linear') a dataset is judged with (the generated data's: 'exp')."""
    return "exp" if dataset == "synthetic" else DATASETS[dataset].gain


def linear_gain_lambdamart(booster: str, max_grade: int) -> dict[str, Any]:
    """LambdaMART's parameters for an NDCG gain linear in the label (grades 0..max_grade) on ``booster``."""
    if booster == "lightgbm":
        return {"label_gain": [float(g) for g in range(max_grade + 1)]}
    return {"ndcg_exp_gain": False}


def check_data() -> tuple[np.ndarray, np.ndarray, DatasetInfo]:
    """Labels (float64), query offsets and ``DatasetInfo`` of MQ2008 fold 1's training queries.

    The data the lever scripts check their objectives and kernels on before any fit.
    """
    fold = load("mq2008", 1).train
    labels = fold.y.astype(np.float64)
    offsets = offsets_from_sizes(fold.group, labels.size)
    return labels, offsets, DatasetInfo(labels, offsets, None, "stochrank")


def fit(
    row: Row,
    booster: str,
    data: tuple[str, int],
    seed: int,
    lr: float,
    rounds: int,
    patience: int,
    tree: dict[str, Any] | None = None,
    metric: str = "ndcg@5",
) -> dict[str, Any]:
    """Train one (row, booster, (dataset, fold), seed) or read it from the cache.

    ``tree`` overrides the table's tree (:data:`TREE`). ``metric`` is the target the fit early-stops on and
    is judged by, in the bench's spelling (:class:`stochrank.bench.target.Target`: ``"ndcg@5"``, ``"mrr"``,
    ``"err@10"``, ``"ndcg@1"`` …; NDCG with the dataset's gain, ERR with its top grade), worst-case ties,
    queries without a relevant document skipped. Returns vali and per-query test values of the target,
    trees kept and seconds.
    """
    dataset, fold = data
    gain = dataset_gain(dataset)
    params = {
        **TREE[booster],
        **(tree or {}),
        **row.params.get(booster, {}),
        "learning_rate": lr * row.lr_factor,
    }
    if row.objective is lambdamart:
        if gain == "linear":
            params.update(linear_gain_lambdamart(booster, DATASETS[dataset].labels[1]))
        objective: Any = BUILTIN_LAMBDAMART[booster]
        recipe = Recipe({"objective": objective})
    else:
        objective = row.objective(seed)
        recipe = Recipe({}, objective=objective)
    # Everything the fit depends on, the objective by its class and full repr (settings and seed);
    # CACHE_VERSION is bumped by hand when stochrank's code changes what a fit learns.
    data_key = [dataset, SYNTHETIC_SIZES] if dataset == "synthetic" else dataset
    fit_key = [type(objective).__name__, repr(objective), booster, params, rounds, patience]
    fit_key += [] if metric == f"ndcg@{K}" else [metric]  # NDCG@5's fits keep the keys they were cached under
    key = [CACHE_VERSION, stochrank.__version__, data_key, fold, seed, *fit_key]

    def train() -> dict[str, Any]:
        fold_data = load(dataset, fold)
        target = Target.parse(metric, gain=gain, max_grade=fold_data.max_grade)
        settings = FitSettings(rounds, patience, target.k, threads=1, ties="worst", empty="skip",
                               metric=target.metric, gain=gain, max_grade=fold_data.max_grade)  # fmt: skip
        start = time.perf_counter()
        result = TRAINERS[booster](recipe, params, fold_data, seed, settings)
        test_set = fold_data.test
        test = target.per_query(test_set, result.test_scores)  # NaN where a query has no relevant document
        return {
            "vali": float(result.curve[result.best_iteration - 1]),
            "trees": int(result.best_iteration),
            "test": test[~empty_queries(test_set)].tolist(),
            "seconds": time.perf_counter() - start,
        }

    return cached_record(CACHE, key, train)


HESSIAN_SCALE_OBJECTIVES: list[tuple[str, dict[str, Any], Any]] = [
    ("`rank:ndcg` (topk, its default)", {"objective": "rank:ndcg"}, None),
    ("`rank:ndcg`, pair method mean", {"objective": "rank:ndcg", "lambdarank_pair_method": "mean"}, None),
    ("`rank:ndcg`, no normalisation", {"objective": "rank:ndcg", "lambdarank_normalization": False}, None),
    ("stochrank.ndcg(k=5)", {}, stochrank.ndcg(k=5)),
    ("stochrank.ndcg(k=10)", {}, stochrank.ndcg(k=10)),
]


@functools.cache  # one DMatrix per process
def synthetic_train_matrix() -> Any:
    """XGBoost's DMatrix of the synthetic data fold 1's training queries (1 thread)."""
    import xgboost as xgb

    train = load("synthetic", 1).train
    return xgb.DMatrix(train.X, train.y, group=train.group, nthread=1)


def synthetic_hessian_per_document(params: dict[str, Any], objective: Any = None) -> float:
    """XGBoost's mean Hessian per document at the first tree (depth 6, 1 thread), synthetic data fold 1.

    What ``min_child_weight`` (a Hessian sum) and ``reg_lambda`` (added to one) are measured in; wraps
    :func:`stochrank.bench.trainers.xgboost_hessian_per_document`, which the bench calls per fit.
    """
    full = {**TREE["xgboost"], "nthread": 1, **params}
    return xgboost_hessian_per_document(full, synthetic_train_matrix(), objective)


def hessian_scale_table() -> str:
    """The mean Hessian per document at the first tree of each HESSIAN_SCALE_OBJECTIVES row (fold 1)."""
    rows = []
    for name, params, objective in HESSIAN_SCALE_OBJECTIVES:
        mean = synthetic_hessian_per_document(params, objective)
        rows.append([name, f"{mean:.4f}", f"{1 / mean:.0f}"])
    headers = ["objective", "mean Hessian per document", "documents in min_child_weight = 1"]
    return markdown_table(headers, rows, "lrr")


def cached_fits_footer(minutes: float) -> str:
    """The closing line of a section whose tables come from :func:`fit` (columns, fit times, wall time)."""
    return (
        "trees: mean kept by early stopping; fit s: mean seconds per fit, from the run that trained it "
        "(alone or beside other work: compare it within a row's own run only). "
        f"Wall time of this call {minutes:.0f} min (fits cached in `bench_runs/levers` are not retrained)."
    )


def p_text(p: float) -> str:
    """A p-value at three decimals, or in powers of ten below 0.001 (raw and Holm alike)."""
    return f"{p:.3f}" if p >= 0.001 else f"{p:.0e}"


def difference(q: np.ndarray, ref: np.ndarray) -> str:
    """Mean per-query difference q - ref with its paired t and randomization p-values ("—" for itself)."""
    if q is ref:
        return "—"
    return f"{np.mean(q - ref):+.4f} ({paired_t(q, ref):.2f} / {paired_randomization(q, ref):.2f})"


def row_runs(
    row: Row,
    booster: str,
    dataset: str,
    folds: list[int],
    seeds: list[int],
    lr: float,
    rounds: int,
    patience: int,
    tree: dict[str, Any] | None = None,
    metric: str = "ndcg@5",
) -> dict[tuple[int, int], dict[str, Any]]:
    """Every (fold, seed) fit of ``row`` on one booster and dataset (:func:`fit`, so cached)."""
    return {
        (f, s): fit(row, booster, (dataset, f), s, lr, rounds, patience, tree, metric)
        for f in folds
        for s in seeds
    }


def seed_mean_test(
    runs: dict[tuple[int, int], dict[str, Any]], folds: list[int], seeds: list[int]
) -> np.ndarray:
    """Per-query test values of :func:`row_runs`' fits (their target), seeds averaged, folds concatenated."""
    return np.concatenate([np.mean([runs[f, s]["test"] for s in seeds], axis=0) for f in folds])


def booster_table(
    booster: str,
    dataset: str,
    folds: list[int],
    seeds: list[int],
    lr: float,
    rounds: int,
    patience: int,
    table_rows: list[Row],
    tree: dict[str, Any] | None = None,
) -> str:
    """Run ``table_rows`` (LambdaMART and the defaults first) on one booster and dataset: a Markdown table."""
    per_query: dict[str, np.ndarray] = {}
    rows = []
    for row in table_rows:
        runs = row_runs(row, booster, dataset, folds, seeds, lr, rounds, patience, tree)
        per_query[row.name] = seed_mean_test(runs, folds, seeds)
        vali = np.mean([r["vali"] for r in runs.values()])
        trees = np.mean([r["trees"] for r in runs.values()])
        seconds = np.mean([r["seconds"] for r in runs.values()])
        rows.append(
            [row.name, f"{vali:.4f}", f"{per_query[row.name].mean():.4f}", f"{trees:.0f}", f"{seconds:.1f}"]
        )
        print(f"{booster:9s} {row.name:60s} vali {vali:.4f} test {rows[-1][2]}", flush=True)
    base, default = per_query[table_rows[0].name], per_query[table_rows[1].name]
    for line, row in zip(rows, table_rows, strict=True):
        q = per_query[row.name]
        line += [difference(q, base), difference(q, default)]
        line.append("—" if q is base else f"{minimum_detectable_difference(q, base):.4f}")
    headers = ["row", "vali NDCG@5", "test NDCG@5", "trees", "fit s", "Δ vs LambdaMART (p t / rand.)",
               "Δ vs defaults (p t / rand.)", "MDD vs LambdaMART"]  # fmt: skip
    title = f"**{dataset}, {booster} (LambdaMART = `{BUILTIN_LAMBDAMART[booster]}`), learning rate {lr}"
    title += f", ≤ {rounds} trees" + "".join(f", {key} {value}" for key, value in (tree or {}).items()) + "**"
    return f"{title}\n\n" + markdown_table(headers, rows, "lrrrrrrr")


def lever_arguments(doc: str) -> argparse.Namespace:
    """Command line of a one-table-per-booster lever script (``draw_levers.py``, ``exact_curvature.py``)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--boosters", nargs="+", default=["lightgbm", "xgboost"], choices=sorted(TREE))
    parser.add_argument(
        "--quick", action="store_true", help="50 trees, patience 10, fold 1, 1 seed; nothing written"
    )
    return parser.parse_args()


def lever_settings(args: argparse.Namespace) -> dict[str, Any]:
    """Trees, patience, MQ2008 folds and seeds, generated-data folds and seeds of a run (``--quick``)."""
    quick = args.quick
    return {
        "rounds": 50 if quick else 600,
        "patience": 10 if quick else 60,
        "folds": [1] if quick else [1, 2, 3, 4, 5],
        "seeds": [0] if quick else [0, 1, 2],
        "budget_folds": [1] if quick else [1, 2],
        "budget_seeds": [0] if quick else [0, 1],
    }


def lever_section(
    title: str,
    table_rows: list[Row] | dict[str, list[Row]],
    args: argparse.Namespace,
    rows_note: str,
    synthetic_rates: tuple[float, ...] = (LEARNING_RATE,),
    before_tables: tuple[str, ...] = (),
    after_tables: Callable[[dict[str, Any]], list[str]] | None = None,
) -> str:
    """A RESULTS section: ``table_rows`` at this script's fixed settings on MQ2008 and on generated data.

    One table per booster on MQ2008 (5 folds x 3 seeds) and per (rate, booster) on the generated data (2
    data folds x 2 seeds) at each of ``synthetic_rates``; ``table_rows`` is one list for every booster or
    a list per booster. ``rows_note`` ends the protocol paragraph and ``before_tables`` follow it;
    ``after_tables``, given the run's settings (:func:`lever_settings`), returns tables to add after the
    others. ``args`` from :func:`lever_arguments` (``--quick``: fold 1, 1 seed, 50 trees).
    """
    settings = lever_settings(args)
    rounds, patience = settings["rounds"], settings["patience"]
    folds, seeds = settings["folds"], settings["seeds"]
    budget_folds, budget_seeds = settings["budget_folds"], settings["budget_seeds"]

    def rows_of(booster: str) -> list[Row]:
        return table_rows[booster] if isinstance(table_rows, dict) else table_rows

    start = time.perf_counter()
    tables = [
        booster_table(b, "mq2008", folds, seeds, LEARNING_RATE, rounds, patience, rows_of(b))
        for b in args.boosters
    ]
    tables += [
        booster_table(b, "synthetic", budget_folds, budget_seeds, lr, rounds, patience, rows_of(b))
        for lr in synthetic_rates
        for b in args.boosters
    ]
    tables += after_tables(settings) if after_tables else []
    n_queries = sum(int(np.sum(~empty_queries(load_fold("mq2008", f, None, None, None).test))) for f in folds)
    minutes = (time.perf_counter() - start) / 60
    first, *again = synthetic_rates
    rates = (
        (f", at learning rate {first}" + "".join(f" and again, every row, at {lr:g}" for lr in again))
        if again
        else ""
    )
    protocol = (
        'The protocol of "Quality levers" above: learning rate '
        f"{LEARNING_RATE}, LightGBM 31 leaves / XGBoost depth 6, ≤ {rounds} trees, early stopping "
        f"{patience} rounds on vali NDCG@5; MQ2008 folds {', '.join(map(str, folds))} × seeds "
        f"{', '.join(map(str, seeds))} ({n_queries} test queries with a relevant document); SYNTHETIC "
        f"(`nonlinear_mslr`, {' / '.join(map(str, SYNTHETIC_SIZES))} train / vali / test queries) data "
        f"folds {', '.join(map(str, budget_folds))} × seeds {', '.join(map(str, budget_seeds))}{rates}; 1 "
        "thread per fit; test NDCG@5 per query, seeds averaged; p-values two-sided, paired t / sign-flip "
        f"randomization, not corrected for the number of rows. {rows_note}"
    )
    return "\n\n".join(
        [section_header(title), protocol, *before_tables, *tables, cached_fits_footer(minutes)]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boosters", nargs="+", default=["lightgbm", "xgboost"], choices=sorted(TREE))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--folds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--quick", action="store_true", help="50 trees, patience 10, fold 1; nothing written")
    args = parser.parse_args()
    rounds, patience, folds = (50, 10, [1]) if args.quick else (600, 60, args.folds)
    seeds = list(range(args.seeds))
    start = time.perf_counter()
    tables = [
        booster_table(b, "mq2008", folds, seeds, LEARNING_RATE, rounds, patience, ROWS) for b in args.boosters
    ]
    n_queries = sum(int(np.sum(~empty_queries(load_fold("mq2008", f, None, None, None).test))) for f in folds)
    budget_folds, budget_seeds = ([1], [0]) if args.quick else ([1, 2], [0, 1])
    budgets = [  # (0.1, 100): LGBMRanker's defaults
        ("lightgbm", 0.1, 100, BUDGET_ROWS, None), ("lightgbm", 0.02, rounds, BUDGET_ROWS, None),
        ("lightgbm", LEARNING_RATE, rounds, BUDGET_ROWS, None),
        ("xgboost", LEARNING_RATE, rounds, BUDGET_ROWS, None),
        ("xgboost", LEARNING_RATE, rounds, MIN_LEAF_WEIGHT_ROWS, {"max_depth": 10}),
        ("xgboost", LEARNING_RATE, rounds, LEAF_WISE_ROWS, LEAF_WISE),
    ]  # fmt: skip
    budget = [
        booster_table(
            booster, "synthetic", budget_folds, budget_seeds, lr, min(trees, rounds), patience, rows, tree
        )
        for booster, lr, trees, rows, tree in budgets
        if booster in args.boosters
    ]
    minutes = (time.perf_counter() - start) / 60
    body = "\n\n".join(
        [
            section_header("Quality levers: one setting at a time (issue 9, fixed settings)"),
            "**MQ2008.** "
            f"Learning rate {LEARNING_RATE}, LightGBM 31 leaves / XGBoost depth 6, ≤ {rounds} trees, early "
            f"stopping {patience} rounds on vali NDCG@5 (worst ties, empty queries skipped), folds "
            f"{', '.join(map(str, folds))} × seeds {', '.join(map(str, seeds))}, 1 thread per fit. Test "
            f"NDCG@5 per query ({n_queries} queries with a relevant document), seeds averaged; p-values "
            "two-sided, paired t / sign-flip randomization (100,000 patterns), not corrected for the number "
            "of rows; MDD: 80 % power, two-sided 5 %.",
            *tables,
            "**Where the tree budget binds** (SYNTHETIC: `stochrank.datasets.synthetic.nonlinear_mslr`, "
            f"{' / '.join(map(str, SYNTHETIC_SIZES))} train / vali / test queries per data fold, "
            f"independent draws for folds {', '.join(map(str, budget_folds))}, seeds "
            f"{', '.join(map(str, budget_seeds))}; LightGBM as above (the last three tables XGBoost, the "
            "second at depth 10 with XGBoost's minimum leaf weight `min_child_weight`, a Hessian sum whose "
            "unit per method the last table gives, the third grown leaf-wise with LightGBM's 31 leaves and "
            "no depth limit), the same "
            "learning rate for every row unless the row says otherwise; the first table is `LGBMRanker`'s "
            "defaults, learning rate 0.1 and 100 trees). Newton leaves x 2 hand the booster twice the "
            "gradient, which for LightGBM (no L2, no minimum split gain) is the same model as twice the "
            "learning rate up to rounding: the third and fourth rows should agree.",
            *budget,
            "XGBoost's mean Hessian per document at the first tree (root cover over the number of "
            f"documents; synthetic fold 1, {SYNTHETIC_SIZES[0]} training queries, depth 6): the unit "
            "of `min_child_weight`.",
            hessian_scale_table(),
            "trees: mean kept by early stopping; fit s: mean seconds per fit (from the run that trained it). "
            f"Wall time of this call {minutes:.0f} min (fits cached in `bench_runs/levers` are not "
            "retrained).",
        ]
    )
    print("\n" + body)
    if not args.quick:
        write_results_section("quality_levers", body)


if __name__ == "__main__":
    main()
