"""The ranking of one query under each tie rule, shared by every metric kernel.

A metric only ever sees a query through the permutation ``order`` (``order[p]`` is the local row
shown at 0-based position ``p``) or, for ``ties="average"``, through runs of equal scores. Both
are built here so that all metrics break ties the same way.

Numba's on-disk cache (``cache=True``) does not track callees in other modules: after editing this
file, delete ``stochrank/metrics/__pycache__/*.nb*`` or the metric kernels keep the old code.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from numba import njit

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# Integer codes passed into the kernels (Numba compiles one specialisation for all of them).
TIES = {"worst": 0, "input": 1, "average": 2}
WORST, INPUT, AVERAGE = TIES["worst"], TIES["input"], TIES["average"]


# LOW LEVEL FUNCTIONS ==========================================================================


@njit(cache=True)
def cutoff(k: int, n: int) -> int:
    """Return the number of scored positions: ``n`` for ``k < 0`` (whole list), else ``min(k, n)``."""
    if k < 0 or k > n:
        return n
    return k


@njit(cache=True)
def rank_order(labels: FloatArray, scores: FloatArray, ties: int) -> IntArray:
    """Permutation putting one query's rows in displayed order (float64 inputs, int64 output).

    Descending score. Equal scores: ``WORST`` puts the lower label first, then row order (CatBoost's
    pessimistic rule); ``INPUT`` and ``AVERAGE`` keep row order (a stable sort, as LightGBM/XGBoost).
    ``(-score, label, row)`` is a lexicographic key, so two stable mergesorts give it in
    O(n log n): first by label, then by score.
    """
    if ties == WORST:
        by_label = np.argsort(labels, kind="mergesort")
        return by_label[np.argsort(-scores[by_label], kind="mergesort")]
    return np.argsort(-scores, kind="mergesort")


@njit(cache=True)
def ordered_sum(
    labels: FloatArray, scores: FloatArray, values: FloatArray, pos_weight: FloatArray, ties: int
) -> float:
    """``sum_p values[order[p]] * pos_weight[p]`` over the ``len(pos_weight)`` top positions.

    With ``ties == AVERAGE`` this is the expectation over all orders of tied documents: each run of
    equal scores occupying positions ``[a, b)`` contributes ``mean(values in run) * sum of
    pos_weight[a:min(b, K)]`` (McSherry & Najork 2008), exact because the sum is linear in
    ``values``. Used by DCG (values = gains, weights = discounts) and precision (values = relevance,
    weights = 1).
    """
    n_top = pos_weight.size
    order = rank_order(labels, scores, ties)
    total = 0.0
    if ties != AVERAGE:
        for p in range(n_top):
            total += values[order[p]] * pos_weight[p]
        return total
    n = scores.size
    a = 0
    while a < n_top:
        b = a + 1
        run_value = values[order[a]]
        while b < n and scores[order[b]] == scores[order[a]]:
            run_value += values[order[b]]
            b += 1
        run_weight = 0.0
        for p in range(a, min(b, n_top)):
            run_weight += pos_weight[p]
        total += run_value / (b - a) * run_weight
        a = b
    return total
