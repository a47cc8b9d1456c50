"""Precision@k and mean average precision: Numba kernels, parallel drivers, typed wrappers."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit, prange

from .._parallel import run_parallel
from .._validation import check_real
from ._common import empty_value, k_code, owner, prepare, reduce, ties_code
from ._ordering import cutoff, ordered_sum, rank_order

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

__all__ = ["map", "precision"]


# LOW LEVEL FUNCTIONS ==========================================================================


@njit(cache=True)
def _precision_query(
    labels: FloatArray, scores: FloatArray, threshold: float, k: int, ties: int, empty: float
) -> float:
    """Share of relevant documents (label > threshold) among the top ``min(k, n)``."""
    relevant = (labels > threshold).astype(np.float64)
    if relevant.max() == 0.0:
        return empty
    n_top = cutoff(k, scores.size)
    return ordered_sum(labels, scores, relevant, np.ones(n_top), ties) / n_top


@njit(cache=True)
def _ap_query(
    labels: FloatArray, scores: FloatArray, threshold: float, k: int, ties: int, empty: float
) -> float:
    """Average precision@k with LightGBM's ``map@k`` normaliser ``min(#relevant, k)``."""
    n_relevant = 0
    for i in range(labels.size):
        n_relevant += labels[i] > threshold
    if n_relevant == 0:
        return empty
    order = rank_order(labels, scores, ties)
    n_top = cutoff(k, scores.size)
    hits, total = 0, 0.0
    for p in range(n_top):
        if labels[order[p]] > threshold:
            hits += 1
            total += hits / (p + 1.0)
    return total / min(n_relevant, n_top)


@njit(cache=True, parallel=True)
def _precision_parallel(
    labels: FloatArray,
    scores: FloatArray,
    offsets: IntArray,
    threshold: float,
    k: int,
    ties: int,
    empty: float,
) -> FloatArray:
    out = np.empty(offsets.size - 1)
    for q in prange(offsets.size - 1):
        a, b = offsets[q], offsets[q + 1]
        out[q] = _precision_query(labels[a:b], scores[a:b], threshold, k, ties, empty)
    return out


@njit(cache=True, parallel=True)
def _ap_parallel(
    labels: FloatArray,
    scores: FloatArray,
    offsets: IntArray,
    threshold: float,
    k: int,
    ties: int,
    empty: float,
) -> FloatArray:
    out = np.empty(offsets.size - 1)
    for q in prange(offsets.size - 1):
        a, b = offsets[q], offsets[q + 1]
        out[q] = _ap_query(labels[a:b], scores[a:b], threshold, k, ties, empty)
    return out


# HIGH LEVEL FUNCTIONS =========================================================================


def precision(
    labels: Any,
    scores: Any,
    group: Any,
    *,
    k: int,
    threshold: float = 0.0,
    ties: str = "worst",
    empty: str = "zero",
    weight: Any = None,
    per_query: bool = False,
) -> float | np.ndarray:
    r"""Precision at ``k``: the share of relevant documents among the top ``min(k, n)``.

    .. math::
        \mathrm{P@}k = \frac{1}{K} \sum_{p=0}^{K-1} [\, r_{\pi(p)} > \text{threshold} \,],
        \qquad K = \min(k, n)

    with ``pi(p)`` the document at 0-based position ``p`` of the ranking by descending score.

    Parameters
    ----------
    labels : array-like of shape (n_documents,)
        Relevance labels, finite and ``>= 0``; relevant means ``label > threshold``.
    scores : array-like of shape (n_documents,)
        Model scores (higher = ranked first); NaN and inf are rejected.
    group : array-like of int
        Documents per query in row order (LightGBM style); a query's rows are contiguous and the
        sizes sum to ``n_documents``. Convert per-row query ids with :func:`group_sizes`.
    k : int >= 1
        Cutoff (required). For a query shorter than ``k`` the denominator is its length ``n``.
    threshold : float, default 0.0
        Relevance border (CatBoost's ``PrecisionAt`` uses 0.5; XGBoost's ``pre@k`` needs 0/1
        labels, for which 0 and 0.5 agree).
    ties : {"worst", "input", "average"}, default "worst"
        Order of documents with equal scores. ``"worst"``: lower label first, then row order
        (CatBoost); ``"input"``: row order (XGBoost: stable sort); ``"average"``: expectation over
        all orders of the tied documents (exact: precision is linear in the relevance indicators).
    empty : {"zero", "one", "skip"}, default "zero"
        Value of a query without relevant documents (0 by the formula, as in XGBoost and
        CatBoost). ``"skip"`` leaves it out of the mean; with ``per_query=True`` it is NaN.
    weight : array-like or None, default None
        Query weights: one per query, or one per row constant within each query. Non-negative.
    per_query : bool, default False
        Return the per-query values instead of their weighted mean.

    Returns
    -------
    float or ndarray of shape (n_queries,)
        :math:`\sum_q w_q m_q / \sum_q w_q` over non-skipped queries (NaN if all are skipped), or
        the float64 per-query values ``m_q``.

    Raises
    ------
    ValueError
        For invalid parameters, mismatched lengths, non-finite scores or negative labels.

    Notes
    -----
    The denominator is ``min(k, n)``, not ``k``: XGBoost >= 2.0 ``pre@k`` and CatBoost
    ``PrecisionAt:top=k`` both divide by ``min(k, n)`` (measured with XGBoost 3.2 and CatBoost
    1.2.10; XGBoost <= 1.7 divided by ``k``, as TREC's P@k does). For queries with at least
    ``k`` documents the two definitions agree; LightGBM has no precision metric.

    Examples
    --------
    >>> from stochrank.metrics import precision
    >>> precision([1, 0, 1], [3.0, 2.0, 1.0], group=[3], k=2)
    0.5
    """
    empty_score = empty_value(empty, "precision")
    tie_code = ties_code(ties, "precision", average_ok=True)
    k = k_code(k, "precision", none_ok=False)
    threshold = check_real(threshold, "threshold", owner("precision"))
    labels, scores, offsets, qweights = prepare(labels, scores, group, weight, "precision")
    values = run_parallel(
        _precision_parallel, scores.size, labels, scores, offsets, threshold, k, tie_code, empty_score
    )
    return reduce(values, qweights, per_query)


def map(
    labels: Any,
    scores: Any,
    group: Any,
    *,
    k: int | None = None,
    threshold: float = 0.0,
    ties: str = "worst",
    empty: str = "one",
    weight: Any = None,
    per_query: bool = False,
) -> float | np.ndarray:
    r"""Mean average precision at ``k`` (LightGBM's and XGBoost's ``map@k``).

    .. math::
        \mathrm{AP@}k = \frac{1}{\min(R, k)} \sum_{p=0}^{K-1} [\, \mathrm{rel}_{\pi(p)} \,]\,
        \frac{\#\{\text{relevant in positions } 0..p\}}{p+1}, \qquad K = \min(k, n)

    with :math:`R` the number of relevant documents (``label > threshold``) in the whole query
    and ``pi(p)`` the document at 0-based position ``p`` of the ranking by descending score.

    Parameters
    ----------
    labels : array-like of shape (n_documents,)
        Relevance labels, finite and ``>= 0``; relevant means ``label > threshold``.
    scores : array-like of shape (n_documents,)
        Model scores (higher = ranked first); NaN and inf are rejected.
    group : array-like of int
        Documents per query in row order (LightGBM style); a query's rows are contiguous and the
        sizes sum to ``n_documents``. Convert per-row query ids with :func:`group_sizes`.
    k : int >= 1 or None, default None
        Cutoff; None scores the whole list (normaliser :math:`R`) and ``k > n`` truncates to ``n``.
    threshold : float, default 0.0
        Relevance border. LightGBM's ``map@k`` uses ``label > 0.5`` and CatBoost's ``MAP`` uses
        0.5; for integer labels 0 and 0.5 agree. XGBoost needs 0/1 labels.
    ties : {"worst", "input"}, default "worst"
        Order of documents with equal scores. ``"worst"``: lower label first, then row order
        (CatBoost); ``"input"``: row order (LightGBM, XGBoost). ``"average"`` is not supported.
    empty : {"one", "zero", "skip"}, default "one"
        Value of a query without relevant documents: 1 in LightGBM and XGBoost ``map@k``, 0 in
        CatBoost ``MAP`` and XGBoost ``map@k-``. ``"skip"`` leaves it out of the mean; with
        ``per_query=True`` it is NaN.
    weight : array-like or None, default None
        Query weights: one per query, or one per row constant within each query. Non-negative.
    per_query : bool, default False
        Return the per-query average precisions instead of their weighted mean.

    Returns
    -------
    float or ndarray of shape (n_queries,)
        :math:`\sum_q w_q m_q / \sum_q w_q` over non-skipped queries (NaN if all are skipped), or
        the float64 per-query values ``m_q``.

    Raises
    ------
    ValueError
        For invalid parameters, mismatched lengths, non-finite scores or negative labels.

    Notes
    -----
    Parity settings: LightGBM / XGBoost ``map@k`` = ``ties="input", empty="one"``; CatBoost
    ``MAP:top=k`` = ``ties="worst", threshold=0.5, empty="zero"``.

    Examples
    --------
    >>> from stochrank.metrics import map
    >>> round(map([0, 1, 1], [3.0, 2.0, 1.0], group=[3]), 4)  # (1/2 + 2/3) / 2
    0.5833
    """
    empty_score = empty_value(empty, "map")
    tie_code = ties_code(ties, "map", average_ok=False)
    k = k_code(k, "map")
    threshold = check_real(threshold, "threshold", owner("map"))
    labels, scores, offsets, qweights = prepare(labels, scores, group, weight, "map")
    values = run_parallel(
        _ap_parallel, scores.size, labels, scores, offsets, threshold, k, tie_code, empty_score
    )
    return reduce(values, qweights, per_query)
