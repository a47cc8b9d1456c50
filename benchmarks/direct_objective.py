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

**Tuned, aimed at NDCG**, from the cached fits of the same tuned comparison with a third method,
``sr-lgb-ndcg`` (``stochrank.ndcg`` at the target's cut-off, early-stopped, selected and judged on ERR@10):
does stochrank aimed at NDCG, as ``lambdarank`` is, close the gap? Paired tests against ``lgb-lambdarank``
and ``sr-lgb``, configuration by configuration, and (as ``search_luck.py``) over random sub-searches of the
30 configurations (a missing fit stops the script with the bench command to run: ~70 min on 2 cores for the
40 fits of ``sr-lgb-ndcg`` when the comparison of record is cached).

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

**Training curves** (trains 12 fits, cached likewise): ``lambdarank``, ``err(k=10)`` and ``ndcg(k=10)`` at
the controls' settings grown to 3,000 boosting iterations without early stopping, ERR@10 on the train,
validation and test queries after every iteration: does ``err(k=10)`` fit its training queries worse
(optimisation) or generalise worse, and did the 600-tree cap decide the controls?

**Where the gradient sits** (~1 min): how concentrated each objective's smoothed gradient and Newton
curvature are within a query (effective share of documents, share of the three largest) at zero scores and
at the scores of one ``lambdarank`` model after 100 and 300 trees, the candidate mechanism being ERR's
cascade: below a highly relevant document the gradient vanishes, so fewer documents per query carry the
signal a tree fits.

    python benchmarks/direct_objective.py    # ~1 min once every fit is cached, ~20 min for the controls
    python benchmarks/direct_objective.py --by-configuration-only    # ~15 s, trains nothing

The section ``direct_objective`` was written from the comparisons' fits with L2 in raw units (their fits
are gone; the text cites it, so nothing writes it again). With the fits now cached (L2 in documents' worth,
``l2_documents`` on [0.1, 300]) the default writes ``direct_objective_l2_documents_300``; it needs that
comparison's 40 ``sr-lgb-ndcg`` fits in that space (cached since 2026-11-28; where they are missing it stops
at the tuned NDCG-aimed part, before writing anything, with the bench command to run) and trains the
controls and curves when their cache is empty. ``--by-configuration-only`` writes the configuration
tables alone into ``direct_objective_by_configuration_l2_documents_300``. The controls, curves and
concentration use fixed settings that the L2 space does not touch.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from _common import (
    L2_SPACE,
    L2_SPACE_SECTION,
    REPO,
    cached_comparison,
    cached_record,
    run_mean,
    write_results_section,
)
from joblib import Parallel, delayed
from quality_levers import SYNTHETIC_SIZES, load
from scipy import stats
from search_luck import SUBSETS, draw_subsets, first_seed_fits, pair_sums, paired_t_from_sums

import stochrank
from stochrank.bench.cache import Run
from stochrank.bench.methods import Recipe
from stochrank.bench.protocol import Outcome
from stochrank.bench.report import pooled_per_query
from stochrank.bench.results import markdown_table, section_header
from stochrank.bench.stats import minimum_detectable_difference, paired_randomization, paired_t
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
def first_seed(outcome: Outcome) -> dict[tuple[str, int], Run]:
    """The first-seed fits of a comparison by (method, configuration)."""
    return {(r.method, r.config_index): r for r in outcome.runs if r.seed == outcome.protocol.seeds[0]}


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
    ndcg = first_seed(cached_comparison(COMMON)[3])
    errs = first_seed(cached_comparison([*COMMON, "--metric", "err@10"])[3])
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


# ------------------------------------------------------------------------------ tuned, aimed at NDCG
AIMED = "lgb-lambdarank,sr-lgb,sr-lgb-ndcg"
NDCG5_METHODS = "lgb-lambdarank,sr-lgb,xgb-ndcg,sr-xgb"  # the synthetic NDCG@5 comparison of record
NDCG5_ARGV = ["--dataset", "synthetic-nonlinear", "--methods", NDCG5_METHODS, "--budget", "50", "--seeds",
              "3", "--threads", "1"]  # fmt: skip
AIMED_ARGV = ["--dataset", "synthetic-nonlinear", "--metric", "err@10", "--methods", AIMED, "--budget",
              str(CONFIGS), "--seeds", "3", "--threads", "1"]  # fmt: skip


def aimed_at_ndcg() -> list[str]:
    """The tuned NDCG-aimed comparison (``sr-lgb-ndcg``) with its caption."""
    protocol, methods, _, outcome = cached_comparison(AIMED_ARGV)
    per_query = {
        m: pooled_per_query([r for f in protocol.folds for r in outcome.selected[m, f]], protocol.folds)[
            LABEL
        ]
        for m in methods
    }
    first = first_seed(outcome)
    rows = []
    for a, b in (("sr-lgb-ndcg", "lgb-lambdarank"), ("sr-lgb-ndcg", "sr-lgb"), ("sr-lgb", "lgb-lambdarank")):
        keep = ~np.isnan(per_query[a] - per_query[b])
        x, y = per_query[a][keep], per_query[b][keep]
        for c in range(CONFIGS):
            if first[a, c].config["booster"] != first[b, c].config["booster"]:
                raise RuntimeError(f"{a} and {b} trained different booster configurations at {c}")
        by_config = np.array([test_err(first, a, c) - test_err(first, b, c) for c in range(CONFIGS)])
        same_cutoff = sum(first[a, c].config["own"] == first[b, c].config["own"] for c in range(CONFIGS))
        rows.append([
            f"`{a}` − `{b}`", f"{x.mean():.4f}", f"{y.mean():.4f}", signed(np.mean(x - y)),
            f"{p_value(paired_t(x, y))} / {p_value(paired_randomization(x, y))}",
            f"{minimum_detectable_difference(x, y):.4f}", sign_test(by_config), signed(np.median(by_config)),
            f"{same_cutoff} of {CONFIGS}" if a.startswith("sr-") and b.startswith("sr-") else "—",
        ])  # fmt: skip
    luck = sub_search_rows(outcome, protocol.target.label)
    best = {m: max(test_err(first, m, c) for c in range(CONFIGS)) for m in methods}
    _, _, _, ndcg_run = cached_comparison(NDCG5_ARGV)
    ndcg_pick = ndcg_run.selected["lgb-lambdarank", protocol.folds[0]]
    drawn = any(first["lgb-lambdarank", c].config == ndcg_pick[0].config for c in range(CONFIGS))
    return [
        "**Tuned, aimed at NDCG** (run after the loss above was seen; exploratory). `sr-lgb-ndcg` is "
        "`stochrank.ndcg` at the target's cut-off (trained at 10, 20 or 40, tuned) on LightGBM: aimed at "
        "NDCG as `lambdarank` is, and early-stopped, selected and judged on ERR@10 like every method. The "
        "same protocol as the comparison of record (full preset, 30 configurations × 3 seeds, the same "
        "LightGBM configurations; its two methods load from that cache): `python -m stochrank.bench "
        f"--preset full {' '.join(AIMED_ARGV)}`. Test ERR@10 per query over the test queries with a relevant "
        "document, seeds averaged; paired t-test / sign-flip randomisation p, not corrected for the three "
        "rows; MDD at 80 % power; the last row is the comparison of record. By configuration: test ERR@10 of "
        f"the first-seed fits at each of the {CONFIGS} booster configurations both methods trained, the "
        "first ahead / behind with the sign test, and the median Δ; each method draws its own knobs, so "
        "two stochrank methods train at the same cut-off option at only some configurations (last column).",
        markdown_table(
            [
                "pair",
                "first",
                "second",
                "Δ",
                "p (t / randomisation)",
                "MDD",
                "by configuration: ahead / behind",
                "median Δ",
                "same cut-off",
            ],
            rows,
            "lrrrrrrrr",
        ),
        f"The highest test ERR@10 of any first-seed fit over the {CONFIGS} configurations (a choice on test "
        "data, for scale only): " + ", ".join(f"`{m}` {v:.4f}" for m, v in best.items()) + ". In the "
        "synthetic NDCG@5 comparison (50 configurations, early-stopped and selected on NDCG@5) "
        f"`lgb-lambdarank` selected configuration {ndcg_pick[0].config_index}, which this run "
        f"{'draws too' if drawn else 'does not draw'}; its test ERR@10 there is "
        f"{run_mean(ndcg_pick, LABEL):.4f}.",
        f"Which configurations were drawn (as `search_luck.py`, {SUBSETS:,} random subsets of m of the "
        f"{CONFIGS} configurations per m, shared by the methods; each method keeps the subset's best by "
        "first-seed validation ERR@10, the bench's first-seed rule, so one seed and not the finalists rule; "
        "paired t-test on the test queries, not Holm-corrected; subsets of a drawn pool understate a fresh "
        "search's spread; distinct picks: how many different (stochrank, `lambdarank`) configuration pairs "
        f"the subsets select, which drive the percentages; at m = {CONFIGS} the one-seed pick, not the "
        "three-seed one above):",
        markdown_table(
            ["pair", "m", "distinct picks", "median Δ", "5–95 %", "ahead", "significant win / loss"],
            luck,
            "lrrrrrr",
        ),
    ]


def sub_search_rows(outcome: Outcome, label: str) -> list[list[str]]:
    """``sr-lgb-ndcg`` and ``sr-lgb`` against ``lgb-lambdarank`` over random sub-searches of the pool."""
    fold = outcome.protocol.folds[0]
    fits = {m: first_seed_fits(outcome, m, fold, label) for m in outcome.methods}
    rng = np.random.default_rng(0)
    pairs = ("sr-lgb-ndcg", "sr-lgb")
    rows: dict[str, list[list[str]]] = {a: [] for a in pairs}
    for m in (10, 20, CONFIGS):
        subsets = draw_subsets(CONFIGS, m, rng)
        pick = {k: np.array([s[np.argmin(fits[k][0][s])] for s in subsets]) for k in outcome.methods}
        for a in pairs:
            total, squares, n = pair_sums(fits["lgb-lambdarank"][1], fits[a][1])
            chosen = (pick[a], pick["lgb-lambdarank"])
            d, p = paired_t_from_sums(total[chosen], squares[chosen], n)
            lo, mid, hi = np.percentile(d, [5, 50, 95])
            win, loss = np.mean((p < 0.05) & (d > 0)), np.mean((p < 0.05) & (d < 0))
            rows[a].append([
                f"`{a}` − `lgb-lambdarank`", f"{m} of {CONFIGS}", str(len(set(zip(*chosen, strict=True)))),
                signed(mid), f"{signed(lo)} … {signed(hi)}", f"{100 * np.mean(d > 0):.1f} %",
                f"{100 * win:.1f} % / {100 * loss:.1f} %",
            ])  # fmt: skip
    return [row for a in pairs for row in rows[a]]


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


def fit_identity(objective: StochasticRankObjective | None) -> Any:
    """An objective in a cache key: ``"lambdarank"`` for None, else its target's class and its repr.

    The class because the normalised row's repr is plain ERR's; the repr holds the settings and the seed.
    """
    return "lambdarank" if objective is None else [type(objective.target).__name__, repr(objective)]


def control_fit(row: int, fold: int, seed: int) -> dict[str, Any]:
    """Train the ``row``-th control on one (data fold, seed) or read it from the cache.

    The cache key holds everything the fit depends on: the objective by its target's class (the normalised
    row's repr is plain ERR's) and repr (settings and seed), the booster parameters, the early-stopping
    settings, the data and ``CACHE_VERSION`` (bumped by hand when stochrank's code changes what a fit learns).
    """
    build = list(CONTROLS.values())[row]
    objective = None if build is None else build(seed)
    identity = fit_identity(objective)
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


# ------------------------------------------------------------------------------- training curves
CURVE_SETTINGS = dataclasses.replace(SETTINGS, max_rounds=3000)  # its rounds and feval (the curves' metric)
CHECKPOINTS = (100, 300, 600, 1000, 2000, 3000)
CURVE_ROWS = ("`lambdarank` (LightGBM's LambdaMART)", "`stochrank.err(k=10)`", "`stochrank.ndcg(k=10)`")


def curve_fit(row: int, fold: int, seed: int) -> dict[str, Any]:
    """ERR@10 on the train, validation and test queries after every iteration of one fit, no early stopping.

    ``row`` indexes :data:`CURVE_ROWS`, whose names key :data:`CONTROLS`; the controls' settings grown to
    :data:`CURVE_SETTINGS`' ``max_rounds`` iterations, its metric (the report's conventions).
    """
    import lightgbm as lgb

    build = CONTROLS[CURVE_ROWS[row]]
    objective = None if build is None else build(seed)
    identity = ["curve", fit_identity(objective), PARAMS, repr(CURVE_SETTINGS)]
    key = [CACHE_VERSION, stochrank.__version__, SYNTHETIC_SIZES, fold, seed, *identity]

    def train() -> dict[str, Any]:
        data = load("synthetic", fold)
        params = {**PARAMS, "objective": objective or "lambdarank", "metric": "None", "verbose": -1,
                  "num_threads": CURVE_SETTINGS.threads, "seed": seed}  # fmt: skip
        parts = {"train": data.train, "vali": data.vali, "test": data.test}
        sets = {name: lgb.Dataset(part.X, part.y, group=part.group) for name, part in parts.items()}
        for name in ("vali", "test"):
            sets[name].reference = sets["train"]
        history: dict[str, Any] = {}
        lgb.train(params, sets["train"], CURVE_SETTINGS.max_rounds, valid_sets=list(sets.values()),
                  valid_names=list(sets), feval=CURVE_SETTINGS.feval(),
                  callbacks=[lgb.record_evaluation(history)])  # fmt: skip
        return {name: next(iter(curves.values())) for name, curves in history.items()}

    return cached_record(CACHE, key, train)


def training_curves() -> list[str]:
    """The training-curve table with its caption."""
    keys = [(row, fold, seed) for row in range(len(CURVE_ROWS)) for fold in FOLDS for seed in SEEDS]
    fits = dict(zip(keys, Parallel(n_jobs=2)(delayed(curve_fit)(*key) for key in keys), strict=True))
    rows = []
    for row, name in enumerate(CURVE_ROWS):
        runs = [fits[row, f, s] for f in FOLDS for s in SEEDS]
        cells = [name]
        for t in CHECKPOINTS:
            train, test = (np.mean([run[part][t - 1] for run in runs]) for part in ("train", "test"))
            cells.append(f"{train:.4f} / {test:.4f}")
        best = [int(np.argmax(run["vali"])) for run in runs]
        cells += [
            f"{np.mean(best) + 1:.0f}",
            f"{np.mean([run['test'][b] for run, b in zip(runs, best, strict=True)]):.4f}",
        ]
        rows.append(cells)
    header = ["row", *(f"{t:,} iterations" for t in CHECKPOINTS), "best vali iteration", "test there"]
    return [
        f"**Training curves at fixed settings** (trains {len(keys)} fits, cached as the controls): the "
        f"controls' settings without early stopping, {CURVE_SETTINGS.max_rounds:,} boosting iterations (one "
        "tree each unless an iteration cannot split); train / test ERR@10 after the given number of "
        "iterations, means over data folds 1 and 2 × seeds 0 and 1; best vali iteration: that of the "
        "highest validation ERR@10 (mean over the 4 fits), test there: test ERR@10 at it (mean; the curves "
        "keep means over queries only, so no p-values here).",
        markdown_table(header, rows, "l" + "r" * (len(header) - 1)),
    ]


# ------------------------------------------------------------------------- gradient concentration
GRADIENT_DRAWS = 8
CONCENTRATION_ROWS = ("`stochrank.err(k=10)`", "`stochrank.ndcg(k=10)`")  # keys of CONTROLS, built at seed 0


def concentration(values: np.ndarray, offsets: np.ndarray) -> tuple[float, float]:
    """Mean over queries of the effective share of documents and of the top-3 share of ``|values|``.

    Per query with a non-zero ``v = |values|``: effective share (Σv)² / (n Σv²) (1 when every document
    carries the same weight, 1/n when one carries it all), top-3 share the three largest v over Σv.
    """
    effective, top3 = [], []
    for q in range(offsets.size - 1):
        v = np.abs(values[offsets[q] : offsets[q + 1]])
        if v.sum() > 0.0:
            effective.append(v.sum() ** 2 / (v.size * np.sum(v**2)))
            top3.append(np.sort(v)[::-1][:3].sum() / v.sum())
    return float(np.mean(effective)), float(np.mean(top3))


def gradient_concentration() -> list[str]:
    """The gradient-concentration table with its caption."""
    import lightgbm as lgb

    train = load("synthetic", 1).train
    offsets = np.concatenate(([0], np.cumsum(train.group)))
    stages = (0, 100, 300)
    params = {**PARAMS, "objective": "lambdarank", "verbose": -1, "num_threads": 1, "seed": 0}
    model = lgb.train(params, lgb.Dataset(train.X, train.y, group=train.group), stages[-1])
    rows = {name: [name] for name in CONCENTRATION_ROWS}
    for trees in stages:
        scores = model.predict(train.X, num_iteration=trees) if trees else np.zeros(train.y.size)
        for name in CONCENTRATION_ROWS:
            build = CONTROLS[name]
            assert build is not None
            objective = build(0)
            draws = [
                objective.derivatives(scores, train.y, train.group, call=c) for c in range(GRADIENT_DRAWS)
            ]
            effective, top3 = concentration(np.mean([a.gradient for a in draws], axis=0), offsets)
            curvature, _ = concentration(np.mean([a.curvature for a in draws], axis=0), offsets)
            rows[name].append(f"{effective:.3f} / {top3:.3f} / {curvature:.3f}")
    header = ["objective", *(f"{t} trees" for t in stages)]
    return [
        f"**Where the gradient sits** (~1 min; one {stages[-1]}-tree `lambdarank` model is retrained, not "
        f"cached): the smoothed gradient and Newton curvature (means of {GRADIENT_DRAWS} CCS draws) of each "
        f"objective on the {train.group.size:,} training queries of data fold 1, at all-zero scores and at "
        "the scores of that model after 100 and 300 trees (the controls' settings, 1 thread); per query, "
        "effective share of documents of the gradient (Σ|g|)² / (n Σg²) (1: every document weighs the "
        "same; 1/n: one carries it all) / share of Σ|g| on the three largest |g| / effective share of "
        "documents of the curvature (a leaf's value divides the gradient sum by the curvature sum), means "
        "over queries.",
        markdown_table(header, list(rows.values()), "lrrr"),
    ]


def main() -> None:
    """Print (and write to RESULTS.md) the configuration tables, the controls and the diagnostics."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--by-configuration-only",
        action="store_true",
        help="only the configuration tables, from the cached fits, into their own section",
    )
    if parser.parse_args().by_configuration_only:
        title = f"Optimising ERR@10 directly, configuration by configuration, {L2_SPACE}"
        body = "\n\n".join([section_header(f"{title} (issue 9, exploratory)"), *by_configuration()])
        print(body)
        write_results_section(f"direct_objective_by_configuration{L2_SPACE_SECTION}", body)
        return
    aimed = aimed_at_ndcg()  # first: while its fits are missing it stops the script, before any other work
    body = "\n\n".join(
        [
            section_header(
                f"Optimising ERR@10 directly: where the loss comes from, {L2_SPACE} (issue 9, exploratory)"
            ),
            *by_configuration(),
            *aimed,
            *controls(),
            *training_curves(),
            *gradient_concentration(),
        ]
    )
    print(body)
    write_results_section(f"direct_objective{L2_SPACE_SECTION}", body)


if __name__ == "__main__":
    main()
