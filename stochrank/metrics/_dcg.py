"""DCG and NDCG: Numba kernels for one query, a parallel driver over queries, typed wrappers."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit, prange

from .._parallel import run_parallel
from .._validation import check_choice
from ..conventions import MAX_EXP_LABEL, gains, position_weights
from ._common import empty_value, k_code, owner, prepare, reduce, ties_code
from ._ordering import cutoff, ordered_sum

__all__ = ["dcg", "ndcg"]

_EXP_HINT = (
    "gain='exp' computes 2**label - 1, which overflows or loses all precision for large labels; use "
    "gain='linear' or map the labels to relevance grades first."
)

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


# LOW LEVEL FUNCTIONS ==========================================================================


@njit(cache=True)
def _dcg_query(
    labels: FloatArray, scores: FloatArray, gains: FloatArray, discount: FloatArray, k: int, ties: int
) -> float:
    """DCG@k of one query; ``discount`` holds at least ``min(k, n)`` position discounts."""
    return ordered_sum(labels, scores, gains, discount[: cutoff(k, scores.size)], ties)


@njit(cache=True)
def _ndcg_query(
    labels: FloatArray,
    scores: FloatArray,
    gains: FloatArray,
    discount: FloatArray,
    k: int,
    ties: int,
    empty: float,
) -> float:
    """NDCG@k of one query, or ``empty`` when its ideal DCG is 0 (no gain to collect)."""
    n_top = cutoff(k, scores.size)
    ideal = np.sort(gains)[::-1]
    idcg = 0.0
    for p in range(n_top):
        idcg += ideal[p] * discount[p]
    if idcg == 0.0:
        return empty
    return ordered_sum(labels, scores, gains, discount[:n_top], ties) / idcg


@njit(cache=True, parallel=True)
def _dcg_parallel(
    labels: FloatArray,
    scores: FloatArray,
    gains: FloatArray,
    offsets: IntArray,
    discount: FloatArray,
    k: int,
    ties: int,
) -> FloatArray:
    out = np.empty(offsets.size - 1)
    for q in prange(offsets.size - 1):
        a, b = offsets[q], offsets[q + 1]
        out[q] = _dcg_query(labels[a:b], scores[a:b], gains[a:b], discount, k, ties)
    return out


@njit(cache=True, parallel=True)
def _ndcg_parallel(
    labels: FloatArray,
    scores: FloatArray,
    gains: FloatArray,
    offsets: IntArray,
    discount: FloatArray,
    k: int,
    ties: int,
    empty: float,
) -> FloatArray:
    out = np.empty(offsets.size - 1)
    for q in prange(offsets.size - 1):
        a, b = offsets[q], offsets[q + 1]
        out[q] = _ndcg_query(labels[a:b], scores[a:b], gains[a:b], discount, k, ties, empty)
    return out


# HIGH LEVEL FUNCTIONS =========================================================================


def _inputs(
    name: str,
    labels: Any,
    scores: Any,
    group: Any,
    weight: Any,
    k: Any,
    gain: Any,
    discount: Any,
    ties: Any,
    tiebreak: Any,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int, np.ndarray | None]:
    gain = check_choice(gain, "gain", owner(name), ("exp", "linear"))
    discount = check_choice(discount, "discount", owner(name), ("log", "position"))
    k = k_code(k, name)
    tie_code = ties_code(ties, name, average_ok=True)
    high, hint = (MAX_EXP_LABEL, _EXP_HINT) if gain == "exp" else (math.inf, "")
    labels, scores, offsets, qweights = prepare(
        labels, scores, group, weight, name, ties=ties, tiebreak=tiebreak, label_high=high, label_hint=hint
    )
    gain_values = gains(labels, gain)
    longest = int(np.diff(offsets).max())
    disc = position_weights(discount, longest if k < 0 else min(k, longest))
    return labels, scores, gain_values, offsets, disc, k, tie_code, qweights


def dcg(
    labels: Any,
    scores: Any,
    group: Any,
    *,
    k: int | None = None,
    gain: str = "exp",
    discount: str = "log",
    ties: str = "worst",
    tiebreak: Any = None,
    weight: Any = None,
    per_query: bool = False,
) -> float | np.ndarray:
    r"""Discounted cumulative gain at ``k`` (not normalised).

    .. math:: \mathrm{DCG@}k = \sum_{p=0}^{\min(k,n)-1} g(r_{\pi(p)})\, d(p)

    with ``pi(p)`` the document at 0-based position ``p`` of the ranking by descending score,
    ``g`` the gain and ``d`` the discount.

    Parameters
    ----------
    labels : array-like of shape (n_documents,)
        Relevance grades, finite and ``>= 0`` (``<= 50`` with ``gain="exp"``).
    scores : array-like of shape (n_documents,)
        Model scores (higher = ranked first); NaN and inf are rejected.
    group : array-like of int
        Documents per query in row order (LightGBM style); a query's rows are contiguous and the
        sizes sum to ``n_documents``. Convert per-row query ids with :func:`group_sizes`.
    k : int >= 1 or None, default None
        Cutoff; None scores the whole list and ``k > n`` truncates to ``n``.
    gain : {"exp", "linear"}, default "exp"
        ``"exp"``: :math:`g(r) = 2^r - 1` (LightGBM, XGBoost, StochasticRank paper);
        ``"linear"``: :math:`g(r) = r` (CatBoost ``type=Base``, scikit-learn).
    discount : {"log", "position"}, default "log"
        ``"log"``: :math:`d(p) = 1/\log_2(p+2)`; ``"position"``: :math:`d(p) = 1/(p+1)` (CatBoost
        ``denominator=Position``).
    ties : {"worst", "input", "average", "key_descending", "key_ascending"}, default "worst"
        Order of documents with equal scores. ``"worst"``: lower label first, then row order
        (CatBoost, StochasticRank paper); ``"input"``: row order (LightGBM, XGBoost: stable sort);
        ``"average"``: expectation over all orders of the tied documents (scikit-learn
        ``ndcg_score``; McSherry & Najork 2008), exact since DCG is linear in the gains;
        ``"key_descending"``: by descending ``tiebreak`` key (trec_eval and gdeval with the docno);
        ``"key_ascending"``: by ascending key (the MS MARCO evaluation).
    tiebreak : array-like of shape (n_documents,) or None, default None
        A key per document (numbers or strings, e.g. the docno) for the ``"key_*"`` tie rules;
        documents with equal score and key keep their row order.
    weight : array-like or None, default None
        Query weights: one per query, or one per row constant within each query. Non-negative.
    per_query : bool, default False
        Return the per-query values instead of their weighted mean.

    Returns
    -------
    float or ndarray of shape (n_queries,)
        :math:`\sum_q w_q m_q / \sum_q w_q`, or the float64 per-query values ``m_q``.

    Raises
    ------
    ValueError
        For invalid parameters, mismatched lengths, non-finite scores or out-of-range labels.

    Notes
    -----
    DCG has no rule for queries without relevant documents: their DCG is simply 0.

    Examples
    --------
    >>> from stochrank.metrics import dcg
    >>> dcg([2, 0, 1], [0.9, 0.5, 0.1], group=[3], gain="linear")
    2.5
    """
    labels, scores, gains, offsets, disc, k, tie_code, qweights = _inputs(
        "dcg", labels, scores, group, weight, k, gain, discount, ties, tiebreak
    )
    values = run_parallel(_dcg_parallel, scores.size, labels, scores, gains, offsets, disc, k, tie_code)
    return reduce(values, qweights, per_query)


def ndcg(
    labels: Any,
    scores: Any,
    group: Any,
    *,
    k: int | None = None,
    gain: str = "exp",
    discount: str = "log",
    ties: str = "worst",
    empty: str = "one",
    tiebreak: Any = None,
    weight: Any = None,
    per_query: bool = False,
) -> float | np.ndarray:
    r"""Normalised discounted cumulative gain at ``k``.

    .. math::
        \mathrm{NDCG@}k = \frac{\sum_{p<K} g(r_{\pi(p)})\, d(p)}{\sum_{p<K} g(r^{\downarrow}_p)\, d(p)},
        \qquad K = \min(k, n)

    with ``pi(p)`` the document at 0-based position ``p`` of the ranking by descending score and
    :math:`r^{\downarrow}` the labels sorted in decreasing order (the ideal DCG, IDCG).

    Parameters
    ----------
    labels : array-like of shape (n_documents,)
        Relevance grades, finite and ``>= 0`` (``<= 50`` with ``gain="exp"``).
    scores : array-like of shape (n_documents,)
        Model scores (higher = ranked first); NaN and inf are rejected.
    group : array-like of int
        Documents per query in row order (LightGBM style); a query's rows are contiguous and the
        sizes sum to ``n_documents``. Convert per-row query ids with :func:`group_sizes`.
    k : int >= 1 or None, default None
        Cutoff; None scores the whole list and ``k > n`` truncates to ``n``.
    gain : {"exp", "linear"}, default "exp"
        ``"exp"``: :math:`g(r) = 2^r - 1` (LightGBM, XGBoost, StochasticRank paper);
        ``"linear"``: :math:`g(r) = r` (CatBoost ``type=Base``, scikit-learn).
    discount : {"log", "position"}, default "log"
        ``"log"``: :math:`d(p) = 1/\log_2(p+2)`; ``"position"``: :math:`d(p) = 1/(p+1)` (CatBoost
        ``denominator=Position``).
    ties : {"worst", "input", "average", "key_descending", "key_ascending"}, default "worst"
        Order of documents with equal scores. ``"worst"``: lower label first, then row order
        (CatBoost, StochasticRank paper); ``"input"``: row order (LightGBM, XGBoost: stable sort);
        ``"average"``: expectation over all orders of the tied documents (scikit-learn
        ``ndcg_score``; McSherry & Najork 2008), exact since DCG is linear in the gains;
        ``"key_descending"``: by descending ``tiebreak`` key (trec_eval and gdeval with the docno);
        ``"key_ascending"``: by ascending key (the MS MARCO evaluation).
    tiebreak : array-like of shape (n_documents,) or None, default None
        A key per document (numbers or strings, e.g. the docno) for the ``"key_*"`` tie rules;
        documents with equal score and key keep their row order.
    empty : {"one", "zero", "skip"}, default "one"
        Value of a query whose IDCG is 0 (all labels 0). ``"one"``: LightGBM, XGBoost, CatBoost
        1.2; ``"zero"``: scikit-learn, XGBoost ``ndcg@k-``, TF-Ranking; ``"skip"``: left out of
        the mean (the usual rule in papers); with ``per_query=True`` its value is NaN.
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
        For invalid parameters, mismatched lengths, non-finite scores or out-of-range labels.

    Notes
    -----
    Parity settings: LightGBM / XGBoost ``ndcg@k`` = ``ties="input", gain="exp", empty="one"``;
    CatBoost ``NDCG:top=k`` = ``ties="worst", gain="linear", empty="one"`` (``type=Exp`` for
    ``gain="exp"``); ``sklearn.metrics.ndcg_score`` = ``ties="average", gain="linear",
    empty="zero"``; trec_eval ``ndcg_cut_k`` / ``ndcg`` (pytrec_eval) = ``gain="linear",
    ties="key_descending", tiebreak=docno, empty="zero"``; ranx ``ndcg@k`` = ``gain="linear",
    empty="zero"`` and ``ndcg_burges@k`` = ``gain="exp", empty="zero"`` on scores without ties (ranx
    orders ties by an unstable sort).

    With query weights *and* all-zero queries, LightGBM 4.7 and XGBoost 3.2 do not report the
    weighted mean: each all-zero query adds an unweighted 1 to the sum, which is then divided by
    the total weight (LightGBM ``src/metric/rank_metric.hpp``; XGBoost measured). stochrank weights
    every query alike, so the values differ there and agree otherwise.

    Examples
    --------
    >>> from stochrank.metrics import ndcg
    >>> round(ndcg([0, 1, 0], [1.0, 1.0, 1.0], group=[3]), 4)  # worst case: the relevant doc last
    0.5
    """
    empty_score = empty_value(empty, "ndcg")
    labels, scores, gains, offsets, disc, k, tie_code, qweights = _inputs(
        "ndcg", labels, scores, group, weight, k, gain, discount, ties, tiebreak
    )
    values = run_parallel(
        _ndcg_parallel, scores.size, labels, scores, gains, offsets, disc, k, tie_code, empty_score
    )
    return reduce(values, qweights, per_query)
