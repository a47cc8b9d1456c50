"""Exact SoftRank on long queries: query spreads, the whole-list linear start direction, the collapse hint.

See :func:`stochrank.softrank`, "Long queries": among equal scores SoftRank's rank law is Binomial(n − 1, ½),
so SoftNDCG@k's gradient underflows on long queries; these are the pieces of the remedy and of the
:class:`~._base.StartWarning` message.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from .._parallel import run_parallel
from ..kernels import query_spread, softrank_linear_batch

__all__ = ["collapse_hint", "linear_direction", "spreads"]

FloatArray = npt.NDArray[np.float64]


def spreads(scores: FloatArray, offsets: npt.NDArray[np.int64]) -> FloatArray:
    """Return the root-mean-square deviation of each query's scores from their mean."""
    out = np.empty(offsets.size - 1)
    run_parallel(query_spread, scores.size, scores, offsets, out)
    return out


def linear_direction(
    scores: FloatArray,
    variance: FloatArray,
    gain: FloatArray,
    offsets: npt.NDArray[np.int64],
    query_scale: FloatArray,
) -> FloatArray:
    """Return the gradient of the whole-list linear SoftDCG (D(r) = 1 − r/n) times ``query_scale`` per query.

    Queries with ``query_scale`` 0 get zeros (and cost nothing).
    """
    values = np.empty(offsets.size - 1)
    d_mean = np.empty(scores.size)
    d_var = np.empty(scores.size)
    run_parallel(
        softrank_linear_batch, scores.size * int(np.max(np.diff(offsets), initial=1)),
        scores, variance, gain, offsets, query_scale, values, d_mean, d_var,
    )  # fmt: skip
    return d_mean


def collapse_hint(shortest: int, k: int | None) -> str:
    """Explain why exact SoftRank@k's start gradient vanishes on queries of ``shortest`` documents or more."""
    n = shortest
    kk = n if k is None else min(k, n)
    if kk >= n:  # every rank counts: the rank law cannot starve the gradient, the score spread can
        return (
            f"SoftNDCG@{kk} counts every rank of these queries, so the gradient vanishes only when the "
            "starting scores are spread far more than sigma. Fix: stochrank.softrank(k, relative_sigma=True) "
            "(sigma relative to each query's score spread), or method='ccs' (the CCS estimate)."
        )
    # log P(Binomial(n - 1, 1/2) < k): SoftRank's rank law of a document among n equal scores
    log_p = math.log(sum(math.comb(n - 1, r) for r in range(kk))) - (n - 1) * math.log(2.0)
    p = f"{math.exp(log_p):.1g}" if log_p > -700.0 else f"1e{log_p / math.log(10.0):.0f}"
    return (
        "Exact SoftRank treats the pairwise comparisons as independent, so among equal scores (the "
        f"boosters' start) a document's rank is Binomial(n - 1, 1/2): in the shortest query (n = {n}) "
        f"P(rank < {kk}) = {p}, and SoftNDCG@{kk}'s gradient underflows (so it does when the starting "
        "scores are spread far more than sigma). Fix: stochrank.softrank(k, relative_sigma=True, "
        "warmup=100) (sigma relative to each query's score spread and a whole-list start), or "
        "method='ccs' (the CCS estimate, which does not vanish)."
    )
