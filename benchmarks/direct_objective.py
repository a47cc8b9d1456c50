"""Does optimising ERR@10 directly pay on ERR@10? The same configurations trained for NDCG@5 and for ERR@10.

The tuned synthetic ERR@10 comparison of benchmarks/RESULTS.md (``--metric err@10``, LightGBM pair) reads a
loss for ``stochrank.err(k=10)`` against ``lambdarank``. This script, written after that loss was seen
(exploratory), asks where it comes from, in two parts.

**Configuration by configuration**, from the cached first-seed fits of that comparison and of the synthetic
NDCG@5 comparison (trains nothing; a missing fit stops it with the bench command to run). Both comparisons
draw the same booster configurations from one stream per booster (configurations 0 to ``CONFIGS - 1`` of the
NDCG@5 run are those of the ERR@10 run; checked), and stochrank's training cut-off is drawn as k, 2k or 4k in
both, so per configuration:

* **ERR@10 run against NDCG@5 run, same method**: the change of test ERR@10 when the target goes from
  NDCG@5 to ERR@10. For ``sr-lgb`` that changes the objective (``stochrank.ndcg(k=5)`` at cut-off 5/10/20
  becomes ``stochrank.err(k=10)`` at 10/20/40) and the early stopping; for ``lgb-lambdarank`` only the early
  stopping (it optimises NDCG either way). A sign test (:func:`scipy.stats.binomtest`) over the
  configurations.
* **stochrank against lambdarank, same run**: how often ``sr-lgb`` is ahead at a configuration both drew, on
  validation and on test ERR@10.

**Controls at fixed settings** (trains 20 fits, cached in ``bench_runs/direct-objective``): which of the
differences between ``err(k=10)`` and ``ndcg(k=5)`` matters, the metric or the cut-off, and whether ERR's
missing per-query normalisation does. LightGBM, 31 leaves, learning rate 0.05, at most 600 trees, early
stopping after 60 rounds on validation ERR@10 (worst-case ties, queries without a relevant document
skipped); the generated data of "Quality levers" (:func:`stochrank.datasets.synthetic.nonlinear_mslr`, 2,000
/ 1,000 / 2,000 train / validation / test queries, independent draws for data folds 1 and 2) × seeds 0 and
1; test ERR@10 per query, seeds averaged, folds pooled; paired t-tests. Rows: ``lambdarank``;
``stochrank.err(k=10)``; the same with each query's ERR scaled by 1/(its ideal ERR@10), as NDCG divides by
the ideal DCG (not API: :class:`NormalisedERR`); ``stochrank.ndcg(k=5)`` and ``stochrank.ndcg(k=10)`` (the
cut-off of the ERR objective).

    python benchmarks/direct_objective.py    # ~10 s with the fits cached, ~5 min cold (2 cores)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from _common import REPO, cached_comparison, cached_record, write_results_section
from joblib import Parallel, delayed
from quality_levers import SYNTHETIC_SIZES, load
from scipy import stats

import stochrank
from stochrank.bench.cache import Run
from stochrank.bench.methods import Recipe
from stochrank.bench.results import markdown_table, section_header
from stochrank.bench.stats import minimum_detectable_difference, paired_t
from stochrank.bench.trainers import TRAINERS, FitSettings, empty_queries
from stochrank.kernels import CascadeArrays
from stochrank.metrics import err
from stochrank.objectives.cascade import ERR
from stochrank.objectives.stochastic_rank import StochasticRankObjective

CONFIGS = 30
METHODS = "lgb-lambdarank,sr-lgb"
COMMON = ["--dataset", "synthetic-nonlinear", "--methods", METHODS, "--budget", str(CONFIGS), "--seeds", "1"]
LABEL = "ERR@10"
CACHE = REPO / "bench_runs" / "direct-objective"
CACHE_VERSION = 1  # bump when stochrank's code or the settings below change what a fit learns
PARAMS = {"num_leaves": 31, "learning_rate": 0.05}
SETTINGS = FitSettings(600, 60, 10, threads=1, ties="worst", empty="skip", metric="err", max_grade=4.0)
FOLDS = (1, 2)
SEEDS = (0, 1)


# ------------------------------------------------------------------------ configuration by configuration
def first_seed(argv: Sequence[str]) -> dict[tuple[str, int], Run]:
    """The first-seed fits of a cached comparison by (method, configuration)."""
    protocol, _, _, outcome = cached_comparison(argv)
    return {(r.method, r.config_index): r for r in outcome.runs if r.seed == protocol.seeds[0]}


def test_err(runs: dict[tuple[str, int], Run], method: str, config: int) -> float:
    """Test ERR@10 of one first-seed fit, over the queries that count."""
    return runs[method, config].metric_means()[LABEL]


def signed(x: float) -> str:
    """``x`` to 4 decimals with its sign, ``+0.0000`` for what rounds to zero (not ``-0.0000``)."""
    return f"{round(float(x), 4) + 0.0:+.4f}"


def p_value(p: float) -> str:
    """``p = 0.123`` to 3 decimals, ``p < 0.001`` below that."""
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def sign_test(d: np.ndarray) -> str:
    """``ahead / behind`` and the two-sided sign-test p-value (equal figures dropped)."""
    ahead, behind = int(np.sum(d > 0)), int(np.sum(d < 0))
    p = stats.binomtest(ahead, ahead + behind).pvalue if ahead + behind else 1.0
    return f"{ahead} / {behind} (p = {p:.1g})"


def by_configuration() -> list[str]:
    """The two configuration-by-configuration tables with their captions."""
    ndcg = first_seed(COMMON)
    errs = first_seed([*COMMON, "--metric", "err@10"])
    configs = range(CONFIGS)
    for method in METHODS.split(","):
        for c in configs:
            if errs[method, c].config != ndcg[method, c].config:
                raise RuntimeError(f"{method}: configuration {c} differs between the two comparisons")
    across = []
    for method in METHODS.split(","):
        d = np.array([test_err(errs, method, c) - test_err(ndcg, method, c) for c in configs])
        across.append([f"`{method}`", sign_test(d), signed(np.median(d)), signed(np.mean(d))])
    vali = np.array([errs["sr-lgb", c].vali - errs["lgb-lambdarank", c].vali for c in configs])
    test = np.array([test_err(errs, "sr-lgb", c) - test_err(errs, "lgb-lambdarank", c) for c in configs])
    within = [
        ["validation ERR@10", sign_test(vali), signed(np.median(vali)), signed(np.mean(vali))],
        ["test ERR@10", sign_test(test), signed(np.median(test)), signed(np.mean(test))],
    ]
    n_test = len(next(iter(errs.values())).test_metrics[LABEL])
    return [
        "**Configuration by configuration.** First-seed fits of the synthetic ERR@10 comparison (`python -m "
        f"stochrank.bench --preset full --dataset synthetic-nonlinear --metric err@10 --methods {METHODS} "
        f"--budget {CONFIGS} --seeds 3 --threads 1`) and of configurations 0–{CONFIGS - 1} of the synthetic "
        "NDCG@5 comparison (the same booster draws and the same draws of each method's own knobs, checked; "
        f"stochrank's cut-off k, 2k or 4k of each target's k). Test ERR@10 over the {n_test:,} test queries "
        f"of the one data fold; ahead / behind: configurations (of {CONFIGS}) where the first figure is the "
        "higher / the lower, with the two-sided sign test over the configurations whose figures differ.",
        "Target ERR@10 against target NDCG@5, same method and configuration (Δ test ERR@10 = ERR@10 run − "
        "NDCG@5 run; `sr-lgb` changes its objective and early stopping, `lgb-lambdarank` only its early "
        "stopping):",
        markdown_table(["method", "ERR@10 run ahead / behind", "median Δ", "mean Δ"], across, "lrrr"),
        "`sr-lgb` (`stochrank.err(k=10)`) against `lgb-lambdarank`, same configuration, ERR@10 run:",
        markdown_table(["figure", "`sr-lgb` ahead / behind", "median Δ", "mean Δ"], within, "lrrr"),
    ]


# ----------------------------------------------------------------------------- controls at fixed settings
@dataclass(frozen=True)
class NormalisedERR(ERR):
    """ERR@k with each query scaled by 1 / (its ideal ERR@k), as NDCG by 1 / IDCG; the experiment row."""

    def encode(self, labels: np.ndarray, offsets: np.ndarray) -> CascadeArrays:
        """As ERR, with ``query_scale`` 1 / ideal ERR@k (queries without a relevant document stay 0)."""
        arrays = super().encode(labels, offsets)
        scale = np.zeros(offsets.size - 1)
        for q in range(offsets.size - 1):
            stop = np.sort(arrays.gain[offsets[q] : offsets[q + 1]])[::-1][: self.k]
            reached = np.concatenate(([1.0], np.cumprod(1.0 - stop)[:-1]))
            ideal = float(np.sum(stop * reached / np.arange(1, stop.size + 1)))
            scale[q] = 1.0 / ideal if ideal > 0.0 else 0.0
        return arrays._replace(query_scale=scale)


def normalised_err(seed: int) -> StochasticRankObjective:
    """``stochrank.err(k=10, max_grade=4)``'s smoothing and seed on :class:`NormalisedERR`."""
    base = stochrank.err(k=10, max_grade=4, seed=seed)
    return StochasticRankObjective(NormalisedERR(k=10, max_grade=4.0), base.smoothing, None)


CONTROLS: dict[str, Callable[[int], Any] | None] = {
    "`lambdarank` (LightGBM's LambdaMART)": None,
    "`stochrank.err(k=10)`": lambda seed: stochrank.err(k=10, max_grade=4, seed=seed),
    "ERR@10 / ideal ERR@10 per query (not API)": normalised_err,
    "`stochrank.ndcg(k=5)`": lambda seed: stochrank.ndcg(k=5, seed=seed),
    "`stochrank.ndcg(k=10)`": lambda seed: stochrank.ndcg(k=10, seed=seed),
}


def control_fit(row: int, fold: int, seed: int) -> dict[str, Any]:
    """Train the ``row``-th control on one (data fold, seed) or read it from the cache.

    The cache key holds everything the fit depends on: the objective by its target's class (the normalised
    row's repr is plain ERR's) and repr (settings and seed), the booster parameters, the early-stopping
    settings, the data and ``CACHE_VERSION`` (bumped by hand when stochrank's code changes what a fit learns).
    """
    build = list(CONTROLS.values())[row]
    objective = None if build is None else build(seed)
    identity = "lambdarank" if objective is None else [type(objective.target).__name__, repr(objective)]
    key = [
        CACHE_VERSION,
        stochrank.__version__,
        SYNTHETIC_SIZES,
        fold,
        seed,
        identity,
        PARAMS,
        repr(SETTINGS),
    ]

    def train() -> dict[str, Any]:
        recipe = Recipe({"objective": "lambdarank"}) if objective is None else Recipe({}, objective=objective)
        data = load("synthetic", fold)
        start = time.perf_counter()
        result = TRAINERS["lightgbm"](recipe, PARAMS, data, seed, SETTINGS)
        test = err(data.test.y, result.test_scores, data.test.group, k=10, max_grade=4.0, per_query=True)
        return {
            "vali": float(result.curve[result.best_iteration - 1]),
            "trees": int(result.best_iteration),
            "rounds": int(result.curve.size),
            "test": np.asarray(test)[~empty_queries(data.test)].tolist(),
            "seconds": time.perf_counter() - start,
        }

    return cached_record(CACHE, key, train)


def controls() -> list[str]:
    """The fixed-settings table with its caption."""
    keys = [(row, fold, seed) for row in range(len(CONTROLS)) for fold in FOLDS for seed in SEEDS]
    fits = dict(zip(keys, Parallel(n_jobs=2)(delayed(control_fit)(*key) for key in keys), strict=True))
    per_query = [
        np.concatenate([np.mean([fits[row, f, s]["test"] for s in SEEDS], axis=0) for f in FOLDS])
        for row in range(len(CONTROLS))
    ]
    n_fits = len(FOLDS) * len(SEEDS)
    rows = []
    for row, name in enumerate(CONTROLS):
        runs = [fits[row, f, s] for f in FOLDS for s in SEEDS]
        capped = sum(run["rounds"] == SETTINGS.max_rounds for run in runs)
        cells = [
            name,
            f"{np.mean([run['vali'] for run in runs]):.4f}",
            f"{per_query[row].mean():.4f}",
            f"{np.mean([run['trees'] for run in runs]):.0f}",
            f"{capped} of {n_fits}",
        ]
        for ref in (0, 1):
            if row == ref:
                cells += ["—", "—"]
                continue
            a, b = per_query[row], per_query[ref]
            diff = f"{signed(np.mean(a - b))} ({p_value(paired_t(a, b))})"
            cells += [diff, f"{minimum_detectable_difference(a, b):.4f}"]
        rows.append(cells)
    header = ["row", "vali ERR@10", "test ERR@10", "trees kept", "grown to the cap", "Δ vs `lambdarank`",
              "MDD", "Δ vs `err(k=10)`", "MDD"]  # fmt: skip
    return [
        f"**Controls at fixed settings** (trains {len(keys)} fits, cached in `bench_runs/{CACHE.name}`): "
        f"LightGBM, 31 leaves, learning rate 0.05, at most {SETTINGS.max_rounds} trees, early stopping after "
        f"{SETTINGS.patience} rounds on validation ERR@10, best iteration kept; the generated data of "
        '"Quality levers" (2,000 / 1,000 / 2,000 train / validation / test queries, data folds 1 and 2 drawn '
        "independently) × seeds 0 and 1 (`lambdarank` gives the same fit at both seeds); test ERR@10 over "
        f"the {per_query[0].size:,} test queries with a relevant document, seeds averaged, folds pooled; "
        "paired t-test p; MDD at 80 % power, two-sided 5 %. Grown to the cap: fits that grew all "
        f"{SETTINGS.max_rounds} trees (early stopping had not stopped them).",
        markdown_table(header, rows, "lrrrrrrrr"),
    ]


def main() -> None:
    """Print (and write to RESULTS.md) the configuration tables and the controls."""
    body = "\n\n".join(
        [
            section_header("Optimising ERR@10 directly: where the loss comes from (issue 9, exploratory)"),
            *by_configuration(),
            *controls(),
        ]
    )
    print(body)
    write_results_section("direct_objective", body)


if __name__ == "__main__":
    main()
