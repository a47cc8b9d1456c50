"""Precision@k and mean average precision: Numba kernels, parallel drivers, typed wrappers."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit, prange

from .._parallel import run_parallel
from .._validation import check_choice, check_real
from ._common import empty_value, k_code, owner, prepare, reduce, ties_code
from ._ordering import cutoff, ordered_sum, rank_order

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

__all__ = ["map", "precision"]


# LOW LEVEL FUNCTIONS ==========================================================================


@njit(cache=True)
def _precision_query(
    labels: FloatArray, scores: FloatArray, threshold: float, k: int, ties: int, empty: float, by_k: bool
) -> float:
    """Relevant documents (label > threshold) among the top ``min(k, n)``, divided by that or by ``k``."""
    relevant = (labels > threshold).astype(np.float64)
    if relevant.max() == 0.0:
        return empty
    n_top = cutoff(k, scores.size)
    return ordered_sum(labels, scores, relevant, np.ones(n_top), ties) / (k if by_k else n_top)


@njit(cache=True)
def _ap_query(
    labels: FloatArray, scores: FloatArray, threshold: float, k: int, ties: int, empty: float, by_r: bool
) -> float:
    """Average precision@k normalised by ``min(#relevant, k)`` (LightGBM) or ``#relevant`` (trec_eval)."""
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
    return total / (n_relevant if by_r else min(n_relevant, n_top))


@njit(cache=True, parallel=True)
def _precision_parallel(
    labels: FloatArray,
    scores: FloatArray,
    offsets: IntArray,
    threshold: float,
    k: int,
    ties: int,
    empty: float,
    by_k: bool,
) -> FloatArray:
    out = np.empty(offsets.size - 1)
    for q in prange(offsets.size - 1):
        a, b = offsets[q], offsets[q + 1]
        out[q] = _precision_query(labels[a:b], scores[a:b], threshold, k, ties, empty, by_k)
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
    by_r: bool,
) -> FloatArray:
    out = np.empty(offsets.size - 1)
    for q in prange(offsets.size - 1):
        a, b = offsets[q], offsets[q + 1]
        out[q] = _ap_query(labels[a:b], scores[a:b], threshold, k, ties, empty, by_r)
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
    denominator: str = "min",
    tiebreak: Any = None,
    weight: Any = None,
    per_query: bool = False,
) -> float | np.ndarray:
    r"""Precision at ``k``: the share of relevant documents among the top ``min(k, n)`` (or among ``k``).

    .. math::
        \mathrm{P@}k = \frac{1}{D} \sum_{p=0}^{K-1} [\, r_{\pi(p)} > \text{threshold} \,],
        \qquad K = \min(k, n), \quad D = K \text{ (denominator="min") or } k \text{ (denominator="k")}

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
        Cutoff (required). For a query shorter than ``k`` the denominator is its length ``n``
        unless ``denominator="k"``.
    threshold : float, default 0.0
        Relevance border (CatBoost's ``PrecisionAt`` uses 0.5; XGBoost's ``pre@k`` needs 0/1
        labels, for which 0 and 0.5 agree; trec_eval's ``relevance_level=1`` is 0.5 for grades).
    ties : {"worst", "input", "average", "key_descending", "key_ascending"}, default "worst"
        Order of documents with equal scores. ``"worst"``: lower label first, then row order
        (CatBoost); ``"input"``: row order (XGBoost: stable sort); ``"average"``: expectation over
        all orders of the tied documents (exact: precision is linear in the relevance indicators);
        ``"key_descending"`` / ``"key_ascending"``: by the ``tiebreak`` key (trec_eval / MS MARCO).
    empty : {"zero", "one", "skip"}, default "zero"
        Value of a query without relevant documents (0 by the formula, as in XGBoost, CatBoost,
        trec_eval and ranx). ``"skip"`` leaves it out of the mean; with ``per_query=True`` it is NaN.
    denominator : {"min", "k"}, default "min"
        ``"min"``: divide by ``min(k, n)``, the documents actually shown (XGBoost >= 2.0, CatBoost);
        ``"k"``: divide by ``k`` whatever the query's length (trec_eval ``P_k``, ranx ``precision@k``,
        XGBoost <= 1.7), so a query of 3 documents, all relevant, has P@10 = 0.3.
    tiebreak : array-like of shape (n_documents,) or None, default None
        A key per document (numbers or strings, e.g. the docno) for ``ties="key_descending"`` /
        ``"key_ascending"``; documents with equal score and key keep their row order.
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
    The default denominator is ``min(k, n)``, not ``k``: XGBoost >= 2.0 ``pre@k`` and CatBoost
    ``PrecisionAt:top=k`` both divide by ``min(k, n)`` (measured with XGBoost 3.2 and CatBoost
    1.2.10; XGBoost <= 1.7 divided by ``k``, as TREC's P@k does). For queries with at least
    ``k`` documents the two definitions agree; LightGBM has no precision metric.

    Parity settings: trec_eval ``P_k`` (pytrec_eval) = ``denominator="k", threshold=0.5,
    ties="key_descending", tiebreak=docno, empty="zero"`` for integer grades; ranx
    ``precision@k`` = ``denominator="k", empty="zero"`` on scores without ties (ranx orders ties by an
    unstable sort).

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
    by_k = check_choice(denominator, "denominator", owner("precision"), ("min", "k")) == "k"
    labels, scores, offsets, qweights = prepare(
        labels, scores, group, weight, "precision", ties=ties, tiebreak=tiebreak
    )
    values = run_parallel(
        _precision_parallel, scores.size, labels, scores, offsets, threshold, k, tie_code, empty_score, by_k
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
    denominator: str = "min",
    tiebreak: Any = None,
    weight: Any = None,
    per_query: bool = False,
) -> float | np.ndarray:
    r"""Mean average precision at ``k`` (LightGBM's and XGBoost's ``map@k``; trec_eval's ``map_cut_k``).

    .. math::
        \mathrm{AP@}k = \frac{1}{D} \sum_{p=0}^{K-1} [\, \mathrm{rel}_{\pi(p)} \,]\,
        \frac{\#\{\text{relevant in positions } 0..p\}}{p+1}, \qquad K = \min(k, n),
        \quad D = \min(R, k) \text{ (denominator="min") or } R \text{ (denominator="relevant")}

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
    ties : {"worst", "input", "key_descending", "key_ascending"}, default "worst"
        Order of documents with equal scores. ``"worst"``: lower label first, then row order
        (CatBoost); ``"input"``: row order (LightGBM, XGBoost); ``"key_descending"`` /
        ``"key_ascending"``: by the ``tiebreak`` key (trec_eval / MS MARCO). ``"average"`` is not
        supported.
    empty : {"one", "zero", "skip"}, default "one"
        Value of a query without relevant documents: 1 in LightGBM and XGBoost ``map@k``, 0 in
        CatBoost ``MAP``, XGBoost ``map@k-``, trec_eval and ranx. ``"skip"`` leaves it out of the
        mean; with ``per_query=True`` it is NaN.
    denominator : {"min", "relevant"}, default "min"
        ``"min"``: divide by ``min(R, k)`` (LightGBM, XGBoost, CatBoost); ``"relevant"``: by
        :math:`R`, the relevant documents of the whole query, also those below the cut-off
        (trec_eval ``map_cut_k``, ranx ``map@k``). The two agree for ``k=None``.
    tiebreak : array-like of shape (n_documents,) or None, default None
        A key per document (numbers or strings, e.g. the docno) for ``ties="key_descending"`` /
        ``"key_ascending"``; documents with equal score and key keep their row order.
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
    ``MAP:top=k`` = ``ties="worst", threshold=0.5, empty="zero"``; trec_eval ``map_cut_k`` / ``map``
    (pytrec_eval) = ``denominator="relevant", threshold=0.5, ties="key_descending", tiebreak=docno,
    empty="zero"`` for integer grades; ranx ``map@k`` = ``denominator="relevant",
    empty="zero"`` on scores without ties.

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
    by_r = check_choice(denominator, "denominator", owner("map"), ("min", "relevant")) == "relevant"
    labels, scores, offsets, qweights = prepare(
        labels, scores, group, weight, "map", ties=ties, tiebreak=tiebreak
    )
    values = run_parallel(
        _ap_parallel, scores.size, labels, scores, offsets, threshold, k, tie_code, empty_score, by_r
    )
    return reduce(values, qweights, per_query)
