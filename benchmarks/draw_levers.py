"""Antithetic noise draws for stochrank.ndcg(k=5): the variance lever of issue 9 item 5 left unmeasured.

The CCS estimate of one booster call comes from one Gaussian draw z per query; ``n_samples = 4`` (four
independent draws) lowered test NDCG@5 in every table of "Quality levers" (``quality_levers.py``). Two
ways of cancelling the draws' noise without more independent draws, both "not API" experiments:

* **antithetic within a call**: two draws per call, z and -z (the estimate of ``n_samples = 2`` with the
  second draw mirrored); compared with ``n_samples = 2``, two independent draws, on the same settings;
* **antithetic across calls**: one draw per call, the call 2t+1 using the negated draw of call 2t (the
  stream of call t for both), so consecutive trees see mirrored noise: the per-call cost and noise level
  of the defaults, with the noise of each pair of trees cancelling at first order.

Both keep the estimate unbiased for each call (-z has the law of z). Their kernel is
:func:`mirrored_gradient`, this script's driver of stochrank's own CCS query kernel (``ccs_query_ws``) with
the noise streams of :func:`stochrank.kernels.smoothed_gradient`; before any fit the script checks that
without mirroring it reproduces ``smoothed_gradient`` bit for bit, so the rows differ from the defaults
only in the draws.

Settings, tables and statistics are those of ``quality_levers.py`` (its rows, ``fit`` and cache
``bench_runs/levers``): MQ2008 at learning rate 0.05, LightGBM 31 leaves / XGBoost depth 6, ≤ 600 trees,
early stopping 60 on validation NDCG@5, 5 folds × 3 seeds; and the generated nonlinear data where the
tree budget binds (2 data folds × 2 seeds, learning rate 0.05, ≤ 600 trees), the table in which four
draws cost 0.003-0.006 with p < 0.01. The LambdaMART and defaults rows are those of "Quality levers" and
come out the same (same cache key).

Two more tables (one per booster) repeat the generated-data rows at twice the learning rate, where the
tree budget binds less, and a last one measures how large a Newton step each estimator allows (Σ|g| / Σh
per query: the gradient's terms partly cancel between draws, the curvature's do not).

Measured (2026-11-27, RESULTS.md "Quality levers: antithetic noise draws"): neither helps. At learning rate
0.05, mirroring within a call costs test NDCG@5 on the generated data as two independent draws do
(LightGBM -0.0013 against -0.0017, XGBoost -0.0027 against -0.0036, all p <= 0.01 against the defaults)
and mirroring across calls changes nothing measurable (-0.0007, p = 0.17; +0.0004, p = 0.51); at twice the
learning rate two draws, mirrored or not, are level with one (|Δ| <= 0.001, p >= 0.12); on MQ2008 every
row is within noise. The one-draw default, the cheapest, stays.

    nice -n 15 python benchmarks/draw_levers.py          # RESULTS.md (~70 min cold on 2 shared cores)
    nice -n 15 python benchmarks/draw_levers.py --quick  # smoke: fold 1, 1 seed, 50 trees; nothing written
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _common import write_results_section
from numba import njit, prange
from quality_levers import LEARNING_RATE, ROWS, Row, booster_table, load, sr

import stochrank
from stochrank._parallel import run_parallel
from stochrank.bench.protocol import load_fold
from stochrank.bench.results import markdown_table, section_header
from stochrank.bench.trainers import empty_queries
from stochrank.kernels import CascadeArrays, smoothed_gradient
from stochrank.kernels._random import PURPOSE_SMOOTHING, fill_normal, stream_state
from stochrank.kernels.ccs import ccs_query_ws, ccs_workspace
from stochrank.objectives._base import Ascent
from stochrank.objectives.stochastic_rank import StochasticRankObjective
from stochrank.protocol import DatasetInfo


@njit(cache=True, parallel=True)
def mirrored_gradient(
    scores: np.ndarray,
    offsets: np.ndarray,
    keys: np.ndarray,
    metric: CascadeArrays,
    sigma: float,
    seed: int,
    stream: int,
    negate: bool,
    mirror: bool,
    out: np.ndarray,
    curv: np.ndarray,
) -> None:
    """CCS gradient and Newton curvature of a translation-invariant metric (mu = 0) from one draw per query.

    The draw z comes from the stream (seed, ``stream``, query key) of ``smoothed_gradient``; ``negate``
    uses -z instead, ``mirror`` averages the estimates of z and -z (or of -z and z).
    """
    for qi in prange(offsets.size - 1):
        s = offsets[qi]
        e = offsets[qi + 1]
        n = e - s
        out[s:e] = 0.0
        curv[s:e] = 0.0
        if not metric.active[qi]:
            continue
        a = scores[s:e].copy()
        a -= a.mean()
        cont = metric.cont[s:e] if metric.cont.size else np.ones(n)
        work, order = ccs_workspace(n)
        z = np.empty(n)
        fill_normal(stream_state(seed, stream, keys[qi], PURPOSE_SMOOTHING), z)
        if negate:
            z = -z
        draws = 2 if mirror else 1
        for d in range(draws):
            if d == 1:
                z = -z
            ccs_query_ws(
                a, z, metric.gain[s:e], cont, metric.pos_weight, metric.k, sigma, True, out[s:e], curv[s:e],
                work, order,
            )  # fmt: skip
        scale = metric.query_scale[qi] / draws
        out[s:e] *= scale
        curv[s:e] *= scale


class Mirrored(StochasticRankObjective):
    """Newton leaves from mirrored draws; ``within``: z and -z in each call, else -z at every other call."""

    within = True

    def _ascent(self, scores: Any, info: Any, encoding: Any, call: int) -> Any:
        out = np.empty(scores.size)
        curv = np.empty(scores.size)
        stream, negate = (call, False) if self.within else (call // 2, call % 2 == 1)
        smoothing = self.smoothing
        run_parallel(
            mirrored_gradient, scores.size, scores, info.offsets, info.query_keys, encoding,
            float(smoothing.sigma), int(smoothing.seed), stream, negate, self.within, out, curv,
        )  # fmt: skip
        return Ascent(out, curv)


class AntitheticWithinCall(Mirrored):
    within = True


class AntitheticAcrossCalls(Mirrored):
    within = False


def mirrored(cls: type[Mirrored]) -> Callable[[int], Mirrored]:
    def build(seed: int) -> Mirrored:
        base = stochrank.ndcg(k=5, seed=seed)
        return cls(base.target, base.smoothing, None)

    return build


def check_driver() -> None:
    """``mirrored_gradient`` without mirroring is ``smoothed_gradient`` bit for bit, and mirroring is -z."""
    fold = load("mq2008", 1).train
    objective = stochrank.ndcg(k=5, seed=3)
    offsets = np.concatenate([[0], np.cumsum(fold.group)]).astype(np.int64)
    sigma, seed = objective.smoothing.sigma, objective.smoothing.seed
    rng = np.random.default_rng(0)
    scores = rng.normal(size=fold.y.size)
    encoding = objective.target.encode(fold.y.astype(np.float64), offsets)
    keys = np.arange(offsets.size - 1, dtype=np.uint64)
    expected, expected_curv = np.empty(scores.size), np.empty(scores.size)
    params = objective.smoothing.kernel_params()
    smoothed_gradient(
        scores, fold.y.astype(np.float64), offsets, keys, encoding, params, 7, expected, expected_curv
    )
    results = {}
    for negate in (False, True):
        for mirror in (False, True):
            out, curv = np.empty(scores.size), np.empty(scores.size)
            mirrored_gradient(scores, offsets, keys, encoding, sigma, seed, 7, negate, mirror, out, curv)
            results[negate, mirror] = (out, curv)
    if not (
        np.array_equal(results[False, False][0], expected)
        and np.array_equal(results[False, False][1], expected_curv)
    ):
        raise AssertionError("mirrored_gradient(negate=False, mirror=False) differs from smoothed_gradient")
    for part in (0, 1):  # the mirrored estimate is the mean of the z and -z estimates, whichever comes first
        mean = (results[False, False][part] + results[True, False][part]) / 2
        for negate in (False, True):
            if not np.allclose(results[negate, True][part], mean, rtol=1e-12, atol=1e-15):
                raise AssertionError(
                    "mirrored_gradient(mirror=True) is not the mean of the z and -z estimates"
                )
    if np.array_equal(results[True, False][0], expected):
        raise AssertionError("mirrored_gradient(negate=True) did not change the draw")


STEP_STAGES = (0, 100, 300)  # lambdarank trees behind the scores of the step table
STEP_CALLS = 4  # booster calls (independent streams) averaged per cell


def step_table() -> list[str]:
    """How large a Newton step each estimator allows: sum |g| / sum h per query, at three stages of training.

    With one draw |g_d| <= s_d h_d (the curvature collects the absolute density terms the gradient sums
    with their signs), so a leaf moves its documents by at most about one noise scale. Averaging draws
    averages g, whose terms partly cancel between draws, and h, whose terms do not: the ratio, and with it
    the step a leaf takes at a given learning rate, shrinks with the number of draws.
    """
    import lightgbm as lgb

    train = load("synthetic", 1).train
    offsets = np.concatenate(([0], np.cumsum(train.group))).astype(np.int64)
    params = {"objective": "lambdarank", "num_leaves": 31, "learning_rate": LEARNING_RATE, "verbose": -1}
    params |= {"num_threads": 1, "seed": 0}
    model = lgb.train(params, lgb.Dataset(train.X, train.y, group=train.group), STEP_STAGES[-1])
    estimators: dict[str, Callable[[np.ndarray, int], Ascent]] = {
        f"{n} independent draw{'s' if n > 1 else ''}": (
            lambda scores, call, n=n: stochrank.ndcg(k=5, n_samples=n).derivatives(
                scores, train.y, train.group, call=call
            )
        )
        for n in (1, 2, 4)
    }
    mirror = AntitheticWithinCall(stochrank.ndcg(k=5).target, stochrank.ndcg(k=5).smoothing)
    encoding = mirror.target.encode(train.y.astype(np.float64), offsets)
    info = DatasetInfo(train.y.astype(np.float64), offsets, None, "stochrank")
    estimators["z and -z (antithetic within a call)"] = lambda scores, call: mirror._ascent(
        scores, info, encoding, call
    )
    rows = {name: [name] for name in estimators}
    for trees in STEP_STAGES:
        scores = model.predict(train.X, num_iteration=trees) if trees else np.zeros(train.y.size)
        for name, estimate in estimators.items():
            ratios = []
            for call in range(STEP_CALLS):
                ascent = estimate(scores, call)
                g = np.add.reduceat(np.abs(ascent.gradient), offsets[:-1])
                h = np.add.reduceat(ascent.curvature, offsets[:-1])
                ratios.append(np.mean(g[h > 0] / h[h > 0]))
            rows[name].append(f"{np.mean(ratios):.3f}")
    header = ["estimate of one call", *(f"{t} trees" for t in STEP_STAGES)]
    return [
        f"**Step size** (synthetic data fold 1, {train.group.size:,} training queries; the scores of one "
        f"`lambdarank` model, 31 leaves, learning rate {LEARNING_RATE}, after 0 (all zero), 100 and 300 "
        f"trees; {STEP_CALLS} calls averaged): Σ|g| / Σh per query, mean over queries, in units of the "
        "noise scale (with one draw each document's |g| / h is at most its conditional noise scale, about "
        "σ = 1). A leaf's value is the sum of its documents' gradients over the sum of their curvatures, "
        "so this is about the largest step a leaf takes at a given learning rate.",
        markdown_table(header, list(rows.values()), "lrrr"),
    ]


DRAW_ROWS = [
    ROWS[0],
    ROWS[1],
    Row("n_samples = 2 (two independent draws)", sr(n_samples=2)),
    Row("antithetic draws within a call: z and -z (not API)", mirrored(AntitheticWithinCall)),
    Row("antithetic draws across calls: -z at every other call (not API)", mirrored(AntitheticAcrossCalls)),
]
# The same estimators at twice the learning rate, where the tree budget binds less: do the draws' costs at
# 0.05 remain once the number of trees matters less?
PACE_ROWS = [
    ROWS[0],
    Row("defaults at twice the learning rate", sr(), lr_factor=2.0),
    Row("n_samples = 2 at twice the learning rate", sr(n_samples=2), lr_factor=2.0),
    Row(
        "z and -z within a call at twice the learning rate (not API)",
        mirrored(AntitheticWithinCall),
        lr_factor=2.0,
    ),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boosters", nargs="+", default=["lightgbm", "xgboost"])
    parser.add_argument(
        "--quick", action="store_true", help="50 trees, patience 10, fold 1, 1 seed; nothing written"
    )
    args = parser.parse_args()
    check_driver()
    rounds, patience = (50, 10) if args.quick else (600, 60)
    folds, seeds = ([1], [0]) if args.quick else ([1, 2, 3, 4, 5], [0, 1, 2])
    budget_folds, budget_seeds = ([1], [0]) if args.quick else ([1, 2], [0, 1])
    start = time.perf_counter()
    tables = [
        booster_table(b, "mq2008", folds, seeds, LEARNING_RATE, rounds, patience, DRAW_ROWS)
        for b in args.boosters
    ]
    tables += [
        booster_table(b, "synthetic", budget_folds, budget_seeds, LEARNING_RATE, rounds, patience, rows)
        for rows in (DRAW_ROWS, PACE_ROWS)
        for b in args.boosters
    ]
    n_queries = sum(int(np.sum(~empty_queries(load_fold("mq2008", f, None, None, None).test))) for f in folds)
    minutes = (time.perf_counter() - start) / 60
    body = "\n\n".join(
        [
            section_header("Quality levers: antithetic noise draws (issue 9, fixed settings)"),
            'The protocol of "Quality levers" above: learning rate '
            f"{LEARNING_RATE}, LightGBM 31 leaves / XGBoost depth 6, ≤ {rounds} trees, early stopping "
            f"{patience} rounds on vali NDCG@5; MQ2008 folds {', '.join(map(str, folds))} × seeds "
            f"{', '.join(map(str, seeds))} ({n_queries} test queries with a relevant document); SYNTHETIC "
            "(`nonlinear_mslr`, 2000 / 1000 / 2000 train / vali / test queries) data folds "
            f"{', '.join(map(str, budget_folds))} × seeds {', '.join(map(str, budget_seeds))}; 1 thread per "
            "fit; test NDCG@5 per query, seeds averaged; p-values two-sided, paired t / sign-flip "
            "randomization, not corrected for the number of rows. The two antithetic rows are this "
            "script's driver of stochrank's CCS query kernel, checked before the fits to reproduce "
            "`smoothed_gradient` bit for bit without mirroring; the LambdaMART and defaults rows are "
            'the fits of "Quality levers" (the same cache entries).',
            *tables,
            *step_table(),
            "trees: mean kept by early stopping; fit s: mean seconds per fit (from the run that trained it). "
            f"Wall time of this call {minutes:.0f} min (fits cached in `bench_runs/levers` are not "
            "retrained).",
        ]
    )
    print("\n" + body)
    if not args.quick:
        write_results_section("draw_levers", body)


if __name__ == "__main__":
    main()
