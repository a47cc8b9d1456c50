r"""The smoothed metric's own second derivative as the leaf curvature (issue 9 item 5's unmeasured lever).

stochrank's Newton leaves take the positive curvature :math:`h^+_d = \sum_b |c_b| D(b) / s_d` of the CCS
pass as the Hessian (``hessian='newton'``). The smoothed metric has its own second derivative in the
same pass: for one draw, document d's conditional expectation :math:`E(m) = \sum_q M_q \Pr(q)` over its
noisy score :math:`y \sim N(m, s^2)` among the others' noisy scores :math:`b_0 > b_1 > \dots` is, summed
by parts,

.. math::

    E'(m) = \sum_q c_q \, \frac{\varphi(t_q)}{s}, \qquad
    E''(m) = \sum_q c_q \, t_q \, \frac{\varphi(t_q)}{s^2}, \qquad t_q = \frac{b_q - m}{s},

with :math:`c_q = M_q - M_{q+1}` the metric's change when d drops from just above the q-th other document to
just below it, :math:`(w_q - w_{q+1})(g_d - g_q)` for DCG@k (zero from q = k on). The minimisation Hessian
:math:`-E''` has either sign: negative where d's expectation is convex in its score (d in the Gaussian tail on
the wrong side of documents it should pass or be passed by: a relevant document below them, an irrelevant one
above), positive near the positions it would settle in. A leaf :math:`-\sum g / \sum h` needs positive
Hessians, so each row fixes a positivity rule before any fit (issue 9: "the CCS 1-D integral's second
derivative ... or a positive curvature in the spirit of LambdaMART's"; the latter is the default):

* **saddle-free**: :math:`|E''|` (Dauphin et al., NeurIPS 2014: Newton's step with the curvature's sign
  dropped, so a convex spot repels no document);
* **floored**: :math:`\max(-E'', \tfrac14 h^+)`: the exact curvature where the metric is concave enough,
  at most four default Newton steps where it is not (before the normalisation, which cancels in a leaf).

Both are "not API" rows with the defaults' gradient, draws and normalisation (mean Hessian 1 per
document); :func:`dcg_derivatives` is this script's kernel for NDCG@k (μ = 0, one draw, the noise streams
of :func:`stochrank.kernels.smoothed_gradient`). Before any fit :func:`check_kernel` checks that its
gradient and positive curvature are ``smoothed_gradient``'s for the same draws, and that its second
derivative (and gradient) are those of the exact 1-D Gaussian integral of the step function
:math:`y \mapsto \mathrm{NDCG@5}` (``scipy.integrate.quad`` of :math:`M(y)\,\partial_m^2 N(y; m, s^2)` on
every segment between the others' scores, the metric from :func:`stochrank.metrics.ndcg`).

Settings, tables and statistics are those of ``quality_levers.py`` (its rows, ``fit`` and cache
``bench_runs/levers``): MQ2008 at learning rate 0.05, LightGBM 31 leaves / XGBoost depth 6, ≤ 600 trees,
early stopping 60 on validation NDCG@5, 5 folds × 3 seeds; and the generated nonlinear data (2 data folds
× 2 seeds, learning rate 0.05, ≤ 600 trees). The LambdaMART and defaults rows are those of "Quality
levers" (same cache key); "Newton leaves x 2" (every step doubled) is a step-size reference.

Measured (2026-11-27, RESULTS.md "Quality levers: the smoothed metric's own curvature"): -E'' is negative for
35-36 % of the documents with curvature, and neither rule beats the defaults: saddle-free is lower on test
NDCG@5 by 0.0054 / 0.0083 on MQ2008 (LightGBM / XGBoost; p = 0.15 / 0.05) and 0.0058 / 0.0021 on the
generated data (p < 0.01 / 0.02), floored by 0.0064 / 0.0047 (p = 0.08 / 0.21) and 0.0046 (p < 0.01) /
level (0.0000, p = 1.0). The positive curvature stays the default.

    nice -n 15 python benchmarks/exact_curvature.py          # RESULTS.md (~40 min cold, 2 shared cores)
    nice -n 15 python benchmarks/exact_curvature.py --quick  # smoke: fold 1, 1 seed, 50 trees; no write
"""

from __future__ import annotations

import abc
import itertools

import numpy as np
from _common import write_results_section
from numba import njit, prange
from quality_levers import (
    ROWS,
    K,
    Row,
    check_data,
    lever_arguments,
    lever_section,
    variant,
)
from scipy import integrate, stats

import stochrank
from stochrank._parallel import run_parallel
from stochrank.kernels import CascadeArrays, smoothed_gradient
from stochrank.kernels._random import PURPOSE_SMOOTHING, fill_normal, stream_state
from stochrank.kernels.stochastic_rank import KIND_RANKING
from stochrank.metrics import ndcg
from stochrank.objectives._base import Ascent, FloatArray
from stochrank.objectives.cascade import CascadeMetric
from stochrank.objectives.sglb import SGLB
from stochrank.objectives.smoothing import Smoothing
from stochrank.objectives.stochastic_rank import StochasticRankObjective
from stochrank.protocol import DatasetInfo

_INV_SQRT_2PI = 0.3989422804014327


@njit(cache=True)
def _conditional_law(a: FloatArray, z: FloatArray, z_sum: float, d: int, sigma: float) -> tuple[float, float]:
    """Mean and scale of document d's noisy score given the others' noise relative to their mean.

    ``z_sum`` is ``z.sum()``, computed once per query by the caller (O(n), not O(n^2)).
    """
    n = a.size
    return a[d] + sigma * (z_sum - z[d]) / (n - 1.0), sigma * np.sqrt(n / (n - 1.0))


@njit(cache=True, parallel=True)
def dcg_derivatives(
    scores: FloatArray,
    offsets: np.ndarray,
    keys: np.ndarray,
    metric: CascadeArrays,
    sigma: float,
    seed: int,
    call: int,
    grad: FloatArray,
    curv_pos: FloatArray,
    curv_exact: FloatArray,
) -> None:
    """E', the positive curvature h+ and the minimisation Hessian -E'' of NDCG@k per document (one draw).

    The draw is ``smoothed_gradient``'s (stream (seed, call, query key)); O(n log n + n k) per query.
    """
    for qi in prange(offsets.size - 1):
        s = offsets[qi]
        e = offsets[qi + 1]
        n = e - s
        grad[s:e] = 0.0
        curv_pos[s:e] = 0.0
        curv_exact[s:e] = 0.0
        if not metric.active[qi]:
            continue
        a = scores[s:e] - scores[s:e].mean()
        z = np.empty(n)
        fill_normal(stream_state(seed, call, keys[qi], PURPOSE_SMOOTHING), z)
        x = a + sigma * z
        order = np.argsort(-x)
        rank = np.empty(n, dtype=np.int64)
        for p in range(n):
            rank[order[p]] = p
        k = n if (metric.k <= 0 or metric.k > n) else metric.k
        gain = metric.gain[s:e]
        w = metric.pos_weight
        scale = metric.query_scale[qi]
        z_sum = z.sum()
        for d in range(n):
            m, sd = _conditional_law(a, z, z_sum, d, sigma)
            g1 = 0.0
            hp = 0.0
            h2 = 0.0
            for q in range(min(k, n - 1)):  # the others' positions where c_q can be non-zero
                j = order[q] if q < rank[d] else order[q + 1]
                c = (w[q] - w[q + 1]) * (gain[d] - gain[j])
                t = (x[j] - m) / sd
                density = _INV_SQRT_2PI * np.exp(-0.5 * t * t) / sd
                g1 += c * density
                hp += abs(c) * density / sd
                h2 += c * t * density / sd
            grad[s + d] = scale * g1
            curv_pos[s + d] = scale * hp
            curv_exact[s + d] = -scale * h2


class ExactCurvature(StochasticRankObjective):
    """Newton leaves of NDCG@k (mu = 0, one draw) with a positivity rule of the exact curvature -E''."""

    def __init__(self, target: CascadeMetric, smoothing: Smoothing, sglb: SGLB | None = None) -> None:
        super().__init__(target, smoothing, sglb)
        # dcg_derivatives implements one setting: refuse the others rather than ignore them.
        if (target.kind, target.name, smoothing.mu, smoothing.n_samples, smoothing.hessian, sglb) != (
            KIND_RANKING, "ndcg", 0.0, 1, "newton", None,
        ):  # fmt: skip
            raise ValueError(f"{type(self).__name__} takes ndcg(k), mu=0, n_samples=1, Newton leaves")

    @abc.abstractmethod
    def positive(self, exact: FloatArray, positive: FloatArray) -> FloatArray:
        """The rule that turns -E'' (``exact``) into a Hessian, given the positive curvature h+."""

    def derivatives_of_draw(
        self, scores: FloatArray, info: DatasetInfo, encoding: CascadeArrays, call: int
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        """E', h+ and -E'' of the call's draw (before the booster-level normalisation)."""
        out = [np.empty(scores.size) for _ in range(3)]
        smoothing = self.smoothing
        run_parallel(
            dcg_derivatives, scores.size, scores, info.offsets, info.query_keys, encoding,
            float(smoothing.sigma), int(smoothing.seed), call, *out,
        )  # fmt: skip
        return out[0], out[1], out[2]

    def _ascent(self, scores: FloatArray, info: DatasetInfo, encoding: CascadeArrays, call: int) -> Ascent:
        gradient, positive, exact = self.derivatives_of_draw(scores, info, encoding, call)
        return Ascent(gradient, self.positive(exact, positive))


class SaddleFreeCurvature(ExactCurvature):
    """Hessian |E''|."""

    def positive(self, exact: FloatArray, positive: FloatArray) -> FloatArray:
        return np.abs(exact)


class FlooredCurvature(ExactCurvature):
    """Hessian max(-E'', floor * h+); ``floor`` set by :func:`quality_levers.variant`."""

    floor: float

    def positive(self, exact: FloatArray, positive: FloatArray) -> FloatArray:
        return np.maximum(exact, self.floor * positive)


def conditional_expectation_derivatives(
    labels: FloatArray, x: FloatArray, d: int, m: float, sd: float, k: int
) -> tuple[float, float]:
    """E'(m) and E''(m) of NDCG@k by 1-D quadrature: d's score y ~ N(m, sd^2), the others at ``x``.

    On each segment between consecutive others' scores NDCG@k is constant (evaluated with d's score at
    the segment's midpoint, or one unit beyond the outermost score), and the derivatives of the Gaussian
    density in m are integrated over it.
    """

    def density(v: float, power: int) -> float:
        u = (v - m) / sd
        factor = u / sd if power == 1 else (u * u - 1.0) / (sd * sd)
        return float(factor * stats.norm.pdf(v, m, sd))

    others = np.sort(np.delete(x, d))
    edges = np.concatenate([[-np.inf], others, [np.inf]])
    first, second = 0.0, 0.0
    for lo, hi in itertools.pairwise(edges):
        y = (
            (lo + hi) / 2
            if np.isfinite(lo) and np.isfinite(hi)
            else (hi - 1.0 if np.isfinite(hi) else lo + 1.0)
        )
        placed = x.copy()
        placed[d] = y
        value = float(ndcg(labels, placed, [labels.size], k=k))
        first += value * integrate.quad(density, lo, hi, args=(1,), epsabs=1e-13, epsrel=1e-11)[0]
        second += value * integrate.quad(density, lo, hi, args=(2,), epsabs=1e-13, epsrel=1e-11)[0]
    return first, second


def check_kernel() -> None:
    """Check :func:`dcg_derivatives` before any fit (see the module docs); raise AssertionError if not."""
    labels, offsets, _ = check_data()
    objective = stochrank.ndcg(k=K, seed=3)
    sigma, seed, call = objective.smoothing.sigma, objective.smoothing.seed, 7
    scores = np.random.default_rng(0).normal(size=labels.size)
    encoding = objective.target.encode(labels, offsets)
    keys = np.arange(offsets.size - 1, dtype=np.uint64)
    expected, expected_curv = np.empty(scores.size), np.empty(scores.size)
    params = objective.smoothing.kernel_params()
    smoothed_gradient(scores, labels, offsets, keys, encoding, params, call, expected, expected_curv)
    grad, positive, exact = (np.empty(scores.size) for _ in range(3))
    dcg_derivatives(scores, offsets, keys, encoding, sigma, seed, call, grad, positive, exact)
    for name, got, want in (("gradient", grad, expected), ("positive curvature", positive, expected_curv)):
        if not np.allclose(got, want, rtol=1e-10, atol=1e-13):
            raise AssertionError(f"dcg_derivatives' {name} differs from smoothed_gradient's")
    checked = 0
    for qi in np.flatnonzero(encoding.active)[:6]:
        s, e = offsets[qi], offsets[qi + 1]
        z = np.empty(e - s)
        # np.uint64: called from Python, stream_state's state comes back a Python int, typed int64.
        fill_normal(np.uint64(stream_state(seed, call, keys[qi], PURPOSE_SMOOTHING)), z)
        a = scores[s:e] - scores[s:e].mean()
        for d in range(e - s):
            m, sd = _conditional_law(a, z, z.sum(), d, sigma)
            first, second = conditional_expectation_derivatives(labels[s:e], a + sigma * z, d, m, sd, K)
            if not (
                np.isclose(grad[s + d], first, atol=1e-9) and np.isclose(-exact[s + d], second, atol=1e-9)
            ):
                raise AssertionError(
                    f"query {qi} document {d}: kernel E' {grad[s + d]:.12g}, E'' {-exact[s + d]:.12g}; "
                    f"quadrature {first:.12g}, {second:.12g}"
                )
            checked += 1
    print(f"check_kernel: {scores.size} documents against smoothed_gradient, {checked} against quadrature")


def curvature_signs() -> str:
    """How often -E'' is negative, and how it and the two rules compare with h+, at zero and random scores."""
    labels, offsets, info = check_data()
    defaults = stochrank.ndcg(k=K)
    objective = SaddleFreeCurvature(defaults.target, defaults.smoothing)
    encoding = objective.target.encode(labels, offsets)
    lines = []
    for name, scores in (
        ("all-zero scores", np.zeros(labels.size)),
        ("scores N(0, 1)", np.random.default_rng(0).normal(size=labels.size)),
        ("scores N(0, 3²)", np.random.default_rng(0).normal(scale=3.0, size=labels.size)),
    ):
        _, positive, exact = objective.derivatives_of_draw(scores, info, encoding, 0)
        carried = positive > 0
        lines.append(
            f"{name}: of the {int(carried.sum())} training documents with positive curvature (fold 1, one "
            f"draw), -E'' < 0 for {np.mean(exact[carried] < 0):.0%}; |E''| / h+ median "
            f"{np.median(np.abs(exact[carried]) / positive[carried]):.2f}; over the fold Σ(-E'') / Σh+ "
            f"{exact.sum() / positive.sum():+.2f}, Σ|E''| / Σh+ {np.abs(exact).sum() / positive.sum():.2f}, "
            f"Σmax(-E'', h+/4) / Σh+ {np.maximum(exact, positive / 4).sum() / positive.sum():.2f}"
        )
    return "\n".join(f"- {line}" for line in lines)


CURVATURE_ROWS = [
    ROWS[0],
    ROWS[1],
    next(row for row in ROWS if row.name == "Newton leaves x 2 (not API)"),  # a step-size reference
    Row("exact curvature, saddle-free abs(E'') (not API)", variant(SaddleFreeCurvature)),
    Row("exact curvature, floored max(-E'', h+/4) (not API)", variant(FlooredCurvature, floor=0.25)),
]


def main() -> None:
    args = lever_arguments(__doc__)
    check_kernel()
    signs = curvature_signs()
    print(signs)
    body = lever_section(
        "Quality levers: the smoothed metric's own curvature (issue 9, fixed settings)",
        CURVATURE_ROWS,
        args,
        "The two exact-curvature rows are this script's NDCG@k kernel, checked before the fits (its gradient "
        "and positive curvature are `smoothed_gradient`'s for the same draws; its gradient and second "
        "derivative those of the exact 1-D Gaussian integral of NDCG@5 as a step function of one document's "
        "score). Their Hessian is the minimisation Hessian -E'' made positive by the row's rule, then "
        "normalised to mean 1 per document like the defaults'. The sign of -E'' on MQ2008 fold 1's training "
        "queries (one draw):",
        before_tables=(signs,),
    )
    print("\n" + body)
    if not args.quick:
        write_results_section("exact_curvature", body)


if __name__ == "__main__":
    main()
