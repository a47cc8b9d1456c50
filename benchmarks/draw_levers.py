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
the noise streams of :func:`stochrank.kernels.smoothed_gradient`; before any fit :func:`check_driver`
checks that without mirroring it reproduces ``smoothed_gradient`` bit for bit (so the rows differ from the
defaults only in the draws), that negating is the CCS estimate of -z and mirroring the mean of the z and
-z estimates, and what the two objectives return for booster calls 0-3.

Settings, tables and statistics are those of ``quality_levers.py`` (its rows, ``fit`` and cache
``bench_runs/levers``): MQ2008 at learning rate 0.05, LightGBM 31 leaves / XGBoost depth 6, ≤ 600 trees,
early stopping 60 on validation NDCG@5, 5 folds × 3 seeds; and the generated nonlinear data where the
tree budget binds (2 data folds × 2 seeds, learning rate 0.05, ≤ 600 trees), the table in which four
draws cost 0.003-0.006 with p < 0.01. The LambdaMART and defaults rows are those of "Quality levers" and
come out the same (same cache key).

Two more tables (one per booster) repeat the generated-data rows, LambdaMART's included, at twice the
learning rate, where the tree budget binds less.

Measured (2026-11-27, RESULTS.md "Quality levers: antithetic noise draws"): neither helps. At learning rate
0.05, mirroring within a call costs test NDCG@5 on the generated data as two independent draws do
(LightGBM -0.0013 against -0.0017, XGBoost -0.0027 against -0.0036, p <= 0.015 against the defaults) and
mirroring across calls changes nothing measurable (-0.0007, p = 0.17; +0.0004, p = 0.51); at twice the
learning rate XGBoost's two-draw rows are level with one draw and LightGBM's read -0.0010 (p = 0.12); on
MQ2008 every row is within noise. The one-draw default, the cheapest, stays. The tables at twice the rate
also show XGBoost's ``rank:ndcg`` held back by the 600 trees at 0.05 (0.8833, against 0.8930 at 0.1).

    nice -n 15 python benchmarks/draw_levers.py          # RESULTS.md (~70 min cold on 2 shared cores)
    nice -n 15 python benchmarks/draw_levers.py --quick  # smoke: fold 1, 1 seed, 50 trees; nothing written
"""

from __future__ import annotations

import numpy as np
from _common import write_results_section
from numba import njit, prange
from quality_levers import (
    LEARNING_RATE,
    ROWS,
    Row,
    check_data,
    lever_arguments,
    lever_section,
    sr,
    variant,
)

import stochrank
from stochrank._parallel import run_parallel
from stochrank.kernels import CascadeArrays, smoothed_gradient
from stochrank.kernels._random import PURPOSE_SMOOTHING, fill_normal, stream_state
from stochrank.kernels.ccs import ccs_query, ccs_query_ws, ccs_workspace
from stochrank.kernels.stochastic_rank import KIND_RANKING
from stochrank.objectives._base import Ascent, FloatArray
from stochrank.objectives.cascade import CascadeMetric
from stochrank.objectives.sglb import SGLB
from stochrank.objectives.smoothing import Smoothing
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
        # A runtime flag, as in _query_gradient: a literal True would compile ccs_query_ws once more.
        invariant = metric.kind == KIND_RANKING
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
                a, z, metric.gain[s:e], cont, metric.pos_weight, metric.k, sigma, invariant, out[s:e],
                curv[s:e], work, order,
            )  # fmt: skip
        scale = metric.query_scale[qi] / draws
        out[s:e] *= scale
        curv[s:e] *= scale


class Mirrored(StochasticRankObjective):
    """Newton leaves of a cascade ranking metric (mu = 0, one draw per stream) from mirrored draws."""

    within: bool

    def __init__(self, target: CascadeMetric, smoothing: Smoothing, sglb: SGLB | None = None) -> None:
        super().__init__(target, smoothing, sglb)
        # mirrored_gradient implements one setting: refuse the others rather than ignore them.
        if (target.kind, smoothing.mu, smoothing.n_samples, smoothing.hessian, sglb) != (
            KIND_RANKING, 0.0, 1, "newton", None,
        ):  # fmt: skip
            raise ValueError(
                f"{type(self).__name__} takes a ranking metric, mu=0, n_samples=1, Newton leaves"
            )

    def streams(self, call: int) -> tuple[int, bool]:
        """The noise stream and sign of the ``call``-th booster call."""
        return (call, False) if self.within else (call // 2, call % 2 == 1)

    def _ascent(self, scores: FloatArray, info: DatasetInfo, encoding: CascadeArrays, call: int) -> Ascent:
        out = np.empty(scores.size)
        curv = np.empty(scores.size)
        stream, negate = self.streams(call)
        smoothing = self.smoothing
        run_parallel(
            mirrored_gradient, scores.size, scores, info.offsets, info.query_keys, encoding,
            float(smoothing.sigma), int(smoothing.seed), stream, negate, self.within, out, curv,
        )  # fmt: skip
        return Ascent(out, curv)


class AntitheticWithinCall(Mirrored):
    """Every call averages the estimates of its draw z and of -z."""

    within = True


class AntitheticAcrossCalls(Mirrored):
    """Calls 2t and 2t+1 use the draw z of stream t and -z."""

    within = False


def close(a: FloatArray, b: FloatArray) -> bool:
    """Equal up to the rounding of a different order of the same sums."""
    return bool(np.allclose(a, b, rtol=1e-12, atol=1e-15))


def check_driver() -> None:
    """Check ``mirrored_gradient`` and the mirrored objectives before any fit.

    Without mirroring it is ``smoothed_gradient`` bit for bit; ``negate`` is the CCS estimate of -z for
    every query; ``mirror`` is the mean of the z and -z estimates; the objectives' gradients at booster calls
    0-3 are the driver's at the streams and signs their docstrings give, and the across-calls objective's
    first call is the defaults' first call.
    """
    labels, offsets, info = check_data()
    objective = stochrank.ndcg(k=5, seed=3)
    sigma, seed, call = objective.smoothing.sigma, objective.smoothing.seed, 7
    scores = np.random.default_rng(0).normal(size=labels.size)
    encoding = objective.target.encode(labels, offsets)
    keys = np.arange(offsets.size - 1, dtype=np.uint64)
    expected, expected_curv = np.empty(scores.size), np.empty(scores.size)
    params = objective.smoothing.kernel_params()
    smoothed_gradient(scores, labels, offsets, keys, encoding, params, call, expected, expected_curv)
    results = {}
    for negate in (False, True):
        for mirror in (False, True):
            out, curv = np.empty(scores.size), np.empty(scores.size)
            mirrored_gradient(scores, offsets, keys, encoding, sigma, seed, call, negate, mirror, out, curv)
            results[negate, mirror] = (out, curv)
    if not all(
        np.array_equal(a, b) for a, b in zip(results[False, False], (expected, expected_curv), strict=True)
    ):
        raise AssertionError("mirrored_gradient(negate=False, mirror=False) differs from smoothed_gradient")
    cont = np.ones(labels.size) if encoding.cont.size == 0 else encoding.cont
    for qi in np.flatnonzero(encoding.active):
        s, e = offsets[qi], offsets[qi + 1]
        z = np.empty(e - s)
        # np.uint64: called from Python, stream_state's state comes back a Python int, typed int64.
        fill_normal(np.uint64(stream_state(seed, call, keys[qi], PURPOSE_SMOOTHING)), z)
        out, curv = np.zeros(e - s), np.zeros(e - s)
        a = scores[s:e] - scores[s:e].mean()
        ccs_query(
            a, -z, encoding.gain[s:e], cont[s:e], encoding.pos_weight, encoding.k, sigma, True, out, curv
        )
        scale = encoding.query_scale[qi]
        negated = results[True, False]
        if not (close(out * scale, negated[0][s:e]) and close(curv * scale, negated[1][s:e])):
            raise AssertionError(f"mirrored_gradient(negate=True) is not the estimate of -z (query {qi})")
    for part in (0, 1):
        mean = (results[False, False][part] + results[True, False][part]) / 2
        for negate in (False, True):
            if not close(results[negate, True][part], mean):
                raise AssertionError(
                    "mirrored_gradient(mirror=True) is not the mean of the z and -z estimates"
                )
    # The objectives as the booster calls them: calls 0-3 against the driver's (stream, sign) they must use.
    for cls, expected_streams in (
        (AntitheticWithinCall, [(0, False), (1, False), (2, False), (3, False)]),
        (AntitheticAcrossCalls, [(0, False), (0, True), (1, False), (1, True)]),
    ):
        mirrored = cls(objective.target, objective.smoothing)
        for booster_call, (stream, negate) in enumerate(expected_streams):
            got = mirrored._ascent(scores, info, encoding, booster_call)
            out, curv = np.empty(scores.size), np.empty(scores.size)
            mirrored_gradient(
                scores, offsets, info.query_keys, encoding, sigma, seed, stream, negate, cls.within, out, curv
            )
            if not (np.array_equal(got.gradient, out) and np.array_equal(got.curvature, curv)):
                raise AssertionError(
                    f"{cls.__name__} does not draw stream {stream} at booster call {booster_call}"
                )
    default = objective._ascent(scores, info, encoding, 0)
    across_first = AntitheticAcrossCalls(objective.target, objective.smoothing)._ascent(
        scores, info, encoding, 0
    )
    if not all(
        np.array_equal(a, b)
        for a, b in zip(default, across_first, strict=True)  # gradient and curvature, both before scaling
    ):
        raise AssertionError("AntitheticAcrossCalls' first call differs from the defaults' first call")


DRAW_ROWS = [
    ROWS[0],
    ROWS[1],
    Row("n_samples = 2 (two independent draws)", sr(n_samples=2)),
    Row("antithetic draws within a call: z and -z (not API)", variant(AntitheticWithinCall)),
    Row("antithetic draws across calls: -z at every other call (not API)", variant(AntitheticAcrossCalls)),
]
# The generated-data tables run DRAW_ROWS at LEARNING_RATE and again at PACE_FACTOR times it, where the tree
# budget binds less: do the draws' costs at LEARNING_RATE remain once the number of trees matters less?
PACE_FACTOR = 2.0


def main() -> None:
    args = lever_arguments(__doc__)
    check_driver()
    body = lever_section(
        "Quality levers: antithetic noise draws (issue 9, fixed settings)",
        DRAW_ROWS,
        args,
        "The two antithetic rows are this script's driver of stochrank's CCS query kernel, checked before "
        "the fits (bit for bit `smoothed_gradient` without mirroring; the estimate of -z for every query; "
        "the booster calls' streams and signs). The LambdaMART and defaults rows share their cache keys "
        'with the same rows of "Quality levers", so either script\'s fits serve both.',
        synthetic_rates=(LEARNING_RATE, PACE_FACTOR * LEARNING_RATE),
    )
    print("\n" + body)
    if not args.quick:
        write_results_section("draw_levers", body)


if __name__ == "__main__":
    main()
